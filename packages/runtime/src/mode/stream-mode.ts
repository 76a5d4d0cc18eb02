/**
 * Stream modes: whether one stream of one device runs its launches, and the scoped overrides
 * that set it (docs/concepts.md#streammode-overrides, CubeCL `execution/stream_mode.rs`).
 *
 * @module
 */
import type { StreamId } from "@weft/environment";
import type { ServiceId } from "../service/service-id.js";

/**
 * Whether a stream's launches run.
 *
 * - `'execute'`: they run.
 * - `'discard'`: their kernels compile — now under the `'compile-and-autotune'`
 *   {@link ProcessMode}, queued for a batch otherwise — and the launches are discarded.
 */
export type StreamMode = "execute" | "discard";

/** Its slot in a {@link StreamModeRegistry}'s live counts. */
function modeIndex(mode: StreamMode): 0 | 1 {
  return mode === "execute" ? 0 : 1;
}

/** The other mode. */
function opposite(mode: StreamMode): StreamMode {
  return mode === "execute" ? "discard" : "execute";
}

/**
 * One stream of one device's service: what a {@link StreamModeOverride} sets the mode of. Stream
 * ids are the process's, not a device's, so a measurement on one device leaves the same stream of
 * every other device alone.
 */
export interface ServiceStream {
  /** The device's service, as its clients reach it. */
  readonly service: ServiceId;
  /** The stream on it. */
  readonly stream: StreamId;
}

/** What a {@link StreamModeOverride} needs of a client: the `(service, stream)` its launches use. */
export interface StreamModeTarget {
  serviceStream(): ServiceStream;
}

/** One live {@link StreamModeOverride}. */
interface StreamModeEntry {
  readonly id: number;
  readonly stream: ServiceStream;
  readonly mode: StreamMode;
}

/**
 * The live {@link StreamModeOverride}s: what sets each stream's mode, and how many set each mode,
 * so a launch looks them up only when one sets the mode its process mode does not — a measurement
 * under no override, which sets the mode every stream already has, costs other launches nothing.
 *
 * @remarks
 * **Invariants.**
 * - `entries` holds exactly the live overrides, oldest first: added by {@link set}, removed by
 *   {@link unset} (called once per override, by its `dispose`). Bounded by the overrides alive.
 * - `live[i]` is the number of entries whose mode has index `i`.
 * - {@link mode} returns the mode of the newest entry on the stream, or the default; when no entry
 *   sets the non-default mode it returns the default without reading `entries`.
 * @internal
 */
export class StreamModeRegistry {
  /** The live overrides, oldest first (see the type doc for when entries come and go). */
  readonly #entries: StreamModeEntry[] = [];
  /** How many live overrides set each mode, by {@link modeIndex}. */
  readonly #live: [number, number] = [0, 0];
  /** The id the next override takes. Only grows. */
  #nextId = 0;
  /**
   * How many times {@link mode} searched the entry list: a test-only probe of the fast path. Only
   * grows; a number, so it cannot overflow in practice.
   */
  #scans = 0;

  /** Puts `stream` in `mode`; returns the id {@link unset} takes to end it. */
  set(mode: StreamMode, stream: ServiceStream): number {
    const id = this.#nextId++;
    this.#entries.push({ id, stream, mode });
    this.#live[modeIndex(mode)] += 1;
    return id;
  }

  /**
   * The mode of `stream` on `service` now: what the newest live override sets for it, or `fallback` when none does.
   */
  mode(service: ServiceId, stream: StreamId, fallback: StreamMode): StreamMode {
    // An override setting the default changes nothing, unless it is newer than one setting the
    // other mode on the same stream, and then there is one of those to look for.
    if (this.#live[modeIndex(opposite(fallback))] === 0) return fallback;
    this.#scans += 1;
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const entry = this.#entries[i];
      if (entry !== undefined && entry.stream.service === service && entry.stream.stream === stream) {
        return entry.mode;
      }
    }
    return fallback;
  }

  /** Ends the override `id` (in any order relative to the others). Unknown ids are ignored. */
  unset(id: number): void {
    const at = this.#entries.findIndex((entry) => entry.id === id);
    if (at < 0) return;
    const [entry] = this.#entries.splice(at, 1);
    if (entry !== undefined) this.#live[modeIndex(entry.mode)] -= 1;
  }

  /** Test probe: how many times {@link mode} searched the entry list. */
  get scans(): number {
    return this.#scans;
  }

  /** Test probe: how many overrides are alive. */
  get size(): number {
    return this.#entries.length;
  }
}

/** The process's stream modes. @internal */
export const STREAM_MODES = new StreamModeRegistry();

/**
 * Sets the mode of one client's stream on its device while it lives, restored on dispose: what a
 * measurement opens, so its launches run whatever the process mode discards.
 *
 * @remarks
 * **Keyed on `(service, stream)`.** The device and the stream the client's launches go out on —
 * the client's bound stream, or `StreamId.current()` when the override is created — so an
 * override on one device leaves the same stream of every other device alone, and a client bound
 * to a stream of its own does not follow the calling code's.
 * **Nesting.** Overrides of one stream nest, the newest deciding, and may be disposed in any order:
 * disposing one that is not the newest leaves the newest in charge.
 * **Who follows it.** Every launch on that stream of that device, whichever client or async task
 * issues it. A launch another client issues on another stream keeps that stream's mode, so a
 * measurement launches through the client it switched. Where tasks share a stream (the `single`
 * policy) a launch another task issues while a measurement runs executes too.
 * **Cost.** While no live override sets the mode the process mode does not, `Client.mode()` answers
 * from a per-mode live count without reading the list.
 * **Lifetime.** `dispose()` and `[Symbol.dispose]` (so `using o = new StreamModeOverride(…)`
 * works); disposing twice is a no-op.
 */
export class StreamModeOverride implements Disposable {
  /** The mode it sets. */
  readonly mode: StreamMode;
  /** The stream of the device it sets. */
  readonly target: ServiceStream;
  /** Its registry id; `undefined` once disposed. */
  #id: number | undefined;

  /** Puts `client`'s stream on its device in `mode` until disposed. */
  constructor(mode: StreamMode, client: StreamModeTarget) {
    this.mode = mode;
    this.target = client.serviceStream();
    this.#id = STREAM_MODES.set(mode, this.target);
  }

  /** Whether {@link dispose} has run. */
  get disposed(): boolean {
    return this.#id === undefined;
  }

  /** Ends the override; a second call does nothing. */
  dispose(): void {
    if (this.#id === undefined) return;
    STREAM_MODES.unset(this.#id);
    this.#id = undefined;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
