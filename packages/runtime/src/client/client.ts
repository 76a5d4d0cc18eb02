/**
 * The client: what fusion, backends and users call to reach one device on one stream.
 *
 * @module
 */
import { ReentrancyGuard, StreamId, UnsupportedError, WeftError } from "@weft/environment";
import { LaunchError } from "@weft/server";
import type {
  BufferBinding,
  ComputeServer,
  CubeCount,
  KernelBinding,
  KernelDefinition,
  GroupEnd,
  LaunchFallback,
  MemoryHandle,
  MemoryUsage,
  ServerError,
  StatusCheck,
} from "@weft/server";
import { ServiceId } from "../service/service-id.js";
import { defaultStreamMode, getProcessMode } from "../mode/process-mode.js";
import { STREAM_MODES } from "../mode/stream-mode.js";
import type { ServiceStream, StreamMode } from "../mode/stream-mode.js";

/** How a {@link Client} is bound. */
export interface ClientOptions {
  /** The device's service; default {@link ServiceId.of}(server), shared by every client of it. */
  readonly service?: ServiceId;
  /** A stream of its own; default none: the client follows `StreamId.current()`. */
  readonly stream?: StreamId;
}

/**
 * State shared by every client of one server: its re-entrancy guard and its batch-compile queue.
 *
 * @remarks
 * `queue` holds kernels whose launches were discarded outside `'compile-and-autotune'`, by key, so
 * one kernel launched many times compiles once. Added in {@link Client.launch}; emptied by
 * {@link Client.compileQueued} (also run by {@link Client.sync}); bounded by the distinct kernels
 * discarded since the last batch.
 */
interface ServerShared {
  readonly guard: ReentrancyGuard;
  readonly queue: Map<string, KernelDefinition>;
}

/** Per-server shared state; a `WeakMap`, so it lives exactly as long as its server. */
const shared = new WeakMap<object, ServerShared>();

function sharedOf(server: ComputeServer<never>): ServerShared {
  let state = shared.get(server);
  if (state === undefined) {
    state = { guard: new ReentrancyGuard(`compute server "${server.name}"`), queue: new Map() };
    shared.set(server, state);
  }
  return state;
}

/**
 * A batch compile ({@link Client.compileQueued}) in which some kernels failed to compile. Every
 * other queued kernel was still compiled; `failures` names each failing kernel with its error.
 */
export class BatchCompileError extends WeftError {
  constructor(readonly failures: ReadonlyArray<{ readonly key: string; readonly error: unknown }>) {
    super(
      "batch-compile",
      `batch compile: ${failures.length} queued kernel(s) failed to compile: ` +
        failures.map((f) => `"${f.key}" (${f.error instanceof Error ? f.error.message : String(f.error)})`).join(", ") +
        "; fix or remove these kernels — their launches would fail the same way when executed",
      { cause: failures[0]?.error },
    );
  }
}

/**
 * One device's service, reached on one stream: the calling code's, or one it was bound to.
 * Everything above the server — fusion, backends, autotune, users — goes through it.
 *
 * @remarks
 * **Stream.** Every call takes the stream it goes out on as its last argument, like the server's
 * calls; left out, it is {@link stream}: the bound stream, else `StreamId.current()` at the call.
 * Backends executing fused blocks pass the block's stream explicitly (the ambient stream is only
 * read at the API edge, docs/pitfalls.md#p5), so one unbound client serves every stream without a
 * client per stream. {@link withStream} gives a client bound to a stream of its own (a tuner's).
 * **Launch decision (docs/concepts.md#streammode-overrides, CubeCL `client.rs`).** A launch decides its {@link @weft/server!LaunchMode | LaunchMode} on the
 * caller, from the {@link ProcessMode} and the stream-mode registry, then forwards:
 * 1. the stream's mode ({@link mode}) is `execute` → `server.launch(…, 'execute')`;
 * 2. else under `'compile-and-autotune'` → `server.launch(…, 'discard')`: the server compiles the
 *    kernel (pipeline created ahead) and drops the launch;
 * 3. else (`'batch-compile'`, or a `discard` override under `'execute'`) → the kernel is queued
 *    for one batch compile ({@link compileQueued}, or the next {@link sync}) and the launch
 *    never reaches the server.
 * A discarded launch leaves memory untouched. Creates and writes are never discarded.
 * **Re-entrancy (docs/pitfalls.md#p3).** Each server call runs inside the server's {@link ReentrancyGuard}:
 * a client call made from inside a server call (a kernel callback) throws `ReentrancyError`.
 * **Reads (docs/pitfalls.md#p4).** {@link read} does its synchronous part inside the guard and returns the
 * server's promise after leaving it: the promise holds nothing of the server while it waits, so
 * other calls (launches, reads, syncs) proceed meanwhile.
 */
export class Client<K extends KernelDefinition = KernelDefinition> {
  /** The server every call forwards to. */
  readonly server: ComputeServer<K>;
  /** The device's service. */
  readonly service: ServiceId;
  /** The stream this client is bound to; `undefined` when it follows `StreamId.current()`. */
  readonly boundStream: StreamId | undefined;
  readonly #shared: ServerShared;

  constructor(server: ComputeServer<K>, options: ClientOptions = {}) {
    this.server = server;
    this.service = options.service ?? ServiceId.of(server);
    this.boundStream = options.stream;
    this.#shared = sharedOf(server as ComputeServer<never>);
  }

  /** The stream calls go out on: the bound stream, else `StreamId.current()`. */
  stream(): StreamId {
    return this.boundStream ?? StreamId.current();
  }

  /** The `(service, stream)` this client's launches use now: what a stream-mode override keys on. */
  serviceStream(): ServiceStream {
    return { service: this.service, stream: this.stream() };
  }

  /** A client of the same server and service, bound to `stream`. */
  withStream(stream: StreamId): Client<K> {
    return new Client(this.server, { service: this.service, stream });
  }

  /** Reserves `size` bytes on `stream` (default: this client's). */
  empty(size: number, stream: StreamId = this.stream()): MemoryHandle {
    return this.#call(() => this.server.empty(size, stream));
  }

  /** Reserves memory for `bytes` and uploads them, ordered after `stream`'s pending work. */
  create(bytes: Uint8Array, stream: StreamId = this.stream()): MemoryHandle {
    return this.#call(() => this.server.create(bytes, stream));
  }

  /** Uploads `bytes` into `binding`, ordered after `stream`'s pending work. */
  write(binding: BufferBinding, bytes: Uint8Array, stream: StreamId = this.stream()): void {
    this.#call(() => this.server.write(binding, bytes, stream));
  }

  /**
   * Reads the bindings once `stream`'s pending work has run. The promise holds nothing of the
   * server while it waits (see the type doc). `into`: caller-owned destinations, as
   * `ComputeServer.read` takes them.
   */
  read(bindings: readonly BufferBinding[], stream: StreamId = this.stream(), into?: readonly (Uint8Array | undefined)[]): Promise<Uint8Array[]> {
    return this.#call(() => this.server.read(bindings, stream, into));
  }

  /** The bytes now, where the server can answer synchronously (CPU); else `undefined`. */
  readSync(bindings: readonly BufferBinding[], stream: StreamId = this.stream()): Uint8Array[] | undefined {
    return this.#call(() => this.server.readSync?.(bindings, stream));
  }

  /**
   * The error a read of `bindings` issued now would reject with (the failure claiming the first
   * tainted byte, naming its root cause and chain), or `undefined` when every byte is clean —
   * `ComputeServer.failureOf`. Synchronous and free of side effects; a server that does not track
   * taint (no `failureOf`) answers `undefined`, as if every byte were clean.
   *
   * @remarks
   * **Why.** A launch reading tainted bytes is skipped whole; a backend about to fuse independent
   * computations into one launch asks first, and launches them one by one when an input is
   * tainted (the `FusionRuntime.handleError` hook). Stream-independent: each binding names the
   * stream whose memory answers for it, so the client's stream does not matter.
   *
   * @throws InvalidBindingError (from the server) when a binding names memory that is not live.
   */
  failureOf(bindings: readonly BufferBinding[]): ServerError | undefined {
    const server = this.server;
    if (server.failureOf === undefined) return undefined;
    return this.#call(() => server.failureOf?.(bindings));
  }

  /**
   * Whether a deferred check not settled yet claims a byte of `bindings`
   * (`ComputeServer.pendingOf`); `false` for a server without deferred checks.
   * @throws InvalidBindingError (from the server) when a binding names memory that is not live.
   */
  pendingOf(bindings: readonly BufferBinding[]): boolean {
    const server = this.server;
    if (server.pendingOf === undefined) return false;
    return this.#call(() => server.pendingOf?.(bindings) ?? false);
  }

  /**
   * Whether a failure or a deferred check may claim some byte now (`ComputeServer.hasClaims`);
   * `true` for a server that cannot tell. When `false`, {@link Client.failureOf} and
   * {@link Client.pendingOf} answer clean for every binding.
   */
  hasClaims(): boolean {
    const server = this.server;
    if (server.hasClaims === undefined) return true;
    return this.#call(() => server.hasClaims?.() ?? true);
  }

  /**
   * Whether `kernel`'s pipeline is ready to launch without waiting; with `compile` (the default),
   * starts its compile when it is not cached (`ComputeServer.ready`). `true` for a server that
   * compiles inside `launch`.
   */
  ready(kernel: K, compile = true): boolean {
    const server = this.server;
    if (server.ready === undefined) return true;
    return this.#call(() => server.ready?.(kernel, compile) ?? true);
  }

  /** Compiles `kernel` now (pipeline creation ahead of its first launch). */
  compile(kernel: K): void {
    this.#call(() => this.server.compile(kernel));
  }

  /**
   * Launches `kernel` over `count` work groups, deciding on the caller whether it executes,
   * compiles and is discarded, or is queued for a batch compile (see the type doc). A launch with
   * a zero count does nothing.
   *
   * @throws LaunchError when a count is not a non-negative integer.
   */
  launch(kernel: K, count: CubeCount, bindings: readonly KernelBinding[], uniforms?: Uint8Array, stream: StreamId = this.stream()): void {
    for (const c of count) {
      if (!Number.isSafeInteger(c) || c < 0) {
        throw new LaunchError(
          `launch of kernel "${kernel.key}": work-group count [${count.join(", ")}] must hold non-negative integers; ` +
            "round the dispatch size up to whole work groups",
        );
      }
    }
    if (count[0] === 0 || count[1] === 0 || count[2] === 0) return;
    const process = getProcessMode();
    const mode = STREAM_MODES.mode(this.service, stream, defaultStreamMode(process));
    if (mode === "execute") {
      // The hot path: one guarded call without a closure.
      const guard = this.#shared.guard;
      guard.begin();
      try {
        this.server.launch(kernel, count, bindings, stream, "execute", uniforms);
      } finally {
        guard.end();
      }
    } else if (process === "compile-and-autotune") {
      this.#call(() => this.server.launch(kernel, count, bindings, stream, "discard", uniforms));
    } else {
      this.#shared.queue.set(kernel.key, kernel);
    }
  }

  /**
   * Checks the status words a launch just issued on `stream` (default: this client's) wrote
   * (`ComputeServer.verify`): its writes fail with the decoded error when the status is not zero.
   * Follows the launch's mode: nothing is checked when launches are discarded (nothing ran).
   *
   * @throws UnsupportedError when the server cannot check statuses: a kernel that needs the check
   * must not run unchecked.
   */
  verify(check: StatusCheck, stream: StreamId = this.stream()): void {
    const server = this.server;
    if (server.verify === undefined) {
      throw new UnsupportedError(`${check.what} on the ${server.name} server`, "this server cannot read a kernel's status back; use the WebGPU server or the CPU backend");
    }
    if (this.mode(stream) !== "execute") return;
    this.#call(() => server.verify?.(check, stream));
  }

  /**
   * Runs `fn`; the launches it records on `stream` (default: this client's) form one launch group
   * with `fallback` (`ComputeServer.beginGroup`): they run as a whole, or — when one of their
   * kernels cannot run, or one reads tainted bytes from outside the group — `fallback` runs in
   * their place. What a fused block uses, so a failure reaches only what is computed from it.
   *
   * @remarks
   * **Discarded fallbacks.** When the launches would not execute (`compile-and-autotune`, a batch
   * compile, a `discard` override) or the server has no groups, `fn` runs as usual and `fallback`
   * is discarded after it.
   * **Re-entrancy.** The server calls `fallback.run` from inside its own calls; the client's guard
   * is released while it runs (`ReentrancyGuard.release`), so the fallback may launch through this
   * client. Anything else re-entering still throws `ReentrancyError`.
   * **Errors.** When `fn` throws, the group is aborted (its launches dropped, `fallback`
   * discarded) and the error rethrown.
   */
  group<T>(fallback: LaunchFallback, fn: () => T, stream: StreamId = this.stream()): T {
    const server = this.server;
    if (server.beginGroup === undefined || server.endGroup === undefined || this.mode(stream) !== "execute") {
      try {
        return fn();
      } finally {
        fallback.discard();
      }
    }
    // Guarded calls without closures: a group is opened and ended once per fused block.
    const guard = this.#shared.guard;
    guard.begin();
    try {
      server.beginGroup(stream, new GuardedFallback(guard, fallback));
    } finally {
      guard.end();
    }
    let result: T;
    try {
      result = fn();
    } catch (error) {
      this.#endGroup(server, stream, "abort");
      throw error;
    }
    this.#endGroup(server, stream, "submit");
    return result;
  }

  /** `server.endGroup(stream, end)` as one guarded call. */
  #endGroup(server: ComputeServer<K>, stream: StreamId, end: GroupEnd): void {
    const guard = this.#shared.guard;
    guard.begin();
    try {
      server.endGroup?.(stream, end);
    } finally {
      guard.end();
    }
  }

  /** The mode launches on `stream` (default: this client's) have now, on this device. */
  mode(stream: StreamId = this.stream()): StreamMode {
    return STREAM_MODES.mode(this.service, stream, defaultStreamMode(getProcessMode()));
  }

  /** How many kernels of this server wait for a batch compile. */
  get queuedKernels(): number {
    return this.#shared.queue.size;
  }

  /**
   * Compiles, in one batch, every kernel of this server whose launch was discarded and queued;
   * returns how many it compiled. Every kernel is tried; failures are reported together.
   *
   * @throws BatchCompileError naming each kernel that failed to compile.
   */
  compileQueued(): number {
    const queued = [...this.#shared.queue.values()] as K[];
    this.#shared.queue.clear();
    const failures: Array<{ key: string; error: unknown }> = [];
    for (const kernel of queued) {
      try {
        this.#call(() => this.server.compile(kernel));
      } catch (error) {
        failures.push({ key: kernel.key, error });
      }
    }
    if (failures.length > 0) throw new BatchCompileError(failures);
    return queued.length - failures.length;
  }

  /** Submits `stream`'s recorded work to the device. */
  flush(stream: StreamId = this.stream()): void {
    this.#call(() => this.server.flush(stream));
  }

  /**
   * Compiles any queued kernels ({@link compileQueued}), then resolves once every piece of work
   * recorded on `stream` so far has completed.
   */
  sync(stream: StreamId = this.stream()): Promise<void> {
    if (this.#shared.queue.size > 0) {
      try {
        this.compileQueued();
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#call(() => this.server.sync(stream));
  }

  /** The server's memory report. */
  memoryUsage(): MemoryUsage {
    return this.#call(() => this.server.memoryUsage());
  }

  /** Runs one synchronous server call inside the server's re-entrancy guard. */
  #call<T>(fn: () => T): T {
    return this.#shared.guard.enter(fn);
  }
}

/**
 * A launch group's fallback as the server gets it: `run` releases the client's guard while the
 * fallback runs (it may launch through the client), `discard` passes through. One object per
 * group, no closures.
 */
class GuardedFallback implements LaunchFallback {
  constructor(
    readonly guard: ReentrancyGuard,
    readonly inner: LaunchFallback,
  ) {}

  run(failure: ServerError): ReturnType<LaunchFallback["run"]> {
    return this.guard.release(() => this.inner.run(failure));
  }

  discard(): void {
    this.inner.discard();
  }
}
