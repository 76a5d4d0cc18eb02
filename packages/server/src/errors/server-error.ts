import { WeftError } from "@weft/environment";

/**
 * The kinds of {@link ServerError}. Stable identifiers; branch on these, not on messages.
 */
export type ServerErrorKind =
  | "validation" // a kernel or pipeline the device rejected (compile errors included)
  | "launch" // a launch that could not be encoded or run
  | "out-of-memory" // transient: no memory right now
  | "buffer-too-big" // permanent: larger than the device can ever bind
  | "device-lost" // the device is gone; create a new one
  | "stream-creation" // a backend stream could not be created
  | "injected" // a fault injected by a test hook
  | "tainted" // a read of bytes a failed launch was to write (see TaintedReadError)
  | "skipped" // a launch that did not run because an input was tainted
  | "dependent" // a launch that ran on bytes whose deferred check failed
  | "index-out-of-range" // an index read from tensor data outside its axis (gather)
  | "invalid-binding" // a binding outside its allocation, or of memory that was freed
  | "released" // a handle used after its last release, or released twice
  | "uncaptured"; // a failure the device reported outside any launch (an uncaptured WebGPU error)

/**
 * A failure of the compute server: what a launch, an allocation, a read or a sync reports.
 *
 * @remarks
 * **Why.** Device work fails asynchronously and far from the call that caused it; the error must
 * say what failed (its {@link ServerError.kind}), whether retrying can help
 * ({@link ServerError.transient}), and keep its cause chain.
 * **Transient.** `true` only where the same call may succeed later without any change by the
 * caller (out-of-memory after a reclaim). Everything else is permanent for that input.
 */
export class ServerError extends WeftError {
  declare readonly kind: ServerErrorKind;
  /** Whether retrying the same call can succeed (see the type doc). */
  readonly transient: boolean;

  constructor(kind: ServerErrorKind, message: string, options?: ErrorOptions & { transient?: boolean }) {
    super(kind, message, options);
    this.transient = options?.transient ?? false;
  }
}

/** A kernel or pipeline the device rejected. Permanent for that kernel. */
export class ValidationError extends ServerError {
  constructor(message: string, options?: ErrorOptions) {
    super("validation", message, options);
  }
}

/** A launch that could not be encoded or run. */
export class LaunchError extends ServerError {
  constructor(message: string, options?: ErrorOptions) {
    super("launch", message, options);
  }
}

/**
 * The device had no memory left *right now*, or the allocation would pass the device's
 * `memoryLimit`. Transient: frees may not have reached the device yet, and memory freed by the
 * caller makes the same call succeed; the memory manager already reclaimed every free page of
 * the device and retried once before this reached the caller. Unlike {@link BufferTooBigError}.
 */
export class OutOfMemoryError extends ServerError {
  constructor(
    readonly size: number,
    options?: ErrorOptions & {
      /** What refused, e.g. `"memoryLimit 64 MiB: 60 MiB reserved"` (part of the message). */
      readonly detail?: string;
    },
  ) {
    const detail = options?.detail === undefined ? "" : ` (${options.detail})`;
    super(
      "out-of-memory",
      `out of device memory allocating ${size} bytes${detail}; free memory (dispose tensors, ` +
        "weft.releaseUnused()) or raise the limit, then retry",
      { ...options, transient: true },
    );
  }
}

/** An allocation larger than the device can ever bind. Permanent: split the tensor. */
export class BufferTooBigError extends ServerError {
  constructor(readonly size: number, readonly max: number, options?: ErrorOptions) {
    super("buffer-too-big", `a buffer of ${size} bytes exceeds the device's largest binding (${max} bytes); use smaller tensors`, options);
  }
}

/** The device was lost; every pending read rejects with this. Create a new device to go on. */
export class DeviceLostError extends ServerError {
  constructor(reason: string, options?: ErrorOptions) {
    super("device-lost", `the device was lost: ${reason}; call weft.init() again to start over on a new device`, options);
  }
}

/** A fault injected by a test hook (DummyServer, CPU backend). */
export class InjectedFaultError extends ServerError {
  constructor(what: string, options?: ErrorOptions) {
    super("injected", `injected fault: ${what}`, options);
  }
}

/**
 * A backend stream could not be created (`StreamPool.getMut` when the factory failed). Permanent
 * for that device: the cause says why (a poisoned device, an exhausted driver).
 */
export class StreamCreationError extends ServerError {
  constructor(cause: unknown) {
    super("stream-creation", `a stream could not be created: ${describeError(cause)}`, { cause });
  }
}

/**
 * A binding that does not name live bytes: outside its allocation, of an allocation already freed,
 * or of data whose length does not match. Thrown synchronously at the call; nothing changed.
 */
export class InvalidBindingError extends ServerError {
  constructor(op: string, detail: string) {
    super("invalid-binding", `${op}: ${detail}`);
  }
}

/**
 * A memory handle used after its last `release()`, or released once too often. A bug in the
 * caller's ownership: retain once per holder, release once per holder.
 */
export class ReleasedHandleError extends ServerError {
  constructor(op: string, allocation: number) {
    super(
      "released",
      `${op}: allocation ${allocation} was already released; retain() the handle for each holder ` +
        "and release() it exactly once per holder",
    );
  }
}

/**
 * The failure recorded for a launch that did not run because one of its inputs was tainted.
 * Its `cause` is the root error; the `ErrorGraph` links it to the failure it read.
 */
export class SkippedLaunchError extends ServerError {
  constructor(what: string, root: ServerError) {
    super("skipped", `${what} did not run: an input it reads was never written (${root.message})`, {
      cause: root,
    });
  }
}

/**
 * The failure recorded for a launch that ran on bytes a deferred check had not settled yet (a
 * gather's output before its status word was read back), when that check fails: its outputs were
 * computed from invalid data. Its `cause` is set by the graph (the check that failed).
 */
export class DependentLaunchError extends ServerError {
  constructor(what: string) {
    super("dependent", `${what} computed from the output of an operation that failed`);
  }
}

/**
 * An index read from tensor data outside the indexed axis (`gather`). Indices are data, so it is
 * found when the kernel runs (on the CPU the kernel throws; on a GPU the kernel reports it in a
 * status word the server checks) and delivered at the read of the output and of everything
 * computed from it (`docs/semantics.md`, "Index errors"). Permanent for that input.
 */
export class IndexOutOfRangeError extends ServerError {
  constructor(
    readonly op: string,
    readonly index: number,
    readonly size: number,
    readonly shape: readonly number[],
    readonly axis: number,
  ) {
    super(
      "index-out-of-range",
      `${op}: index ${index} is out of range for axis ${axis} of size ${size} (input shape [${shape.join(", ")}]); ` +
        `indices must lie in [${-size}, ${size}) (negative ones count from the end) — clamp or validate them before the ${op}`,
    );
  }
}

/** A one-line description of anything thrown. */
export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
