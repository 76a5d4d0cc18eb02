import { invariant } from "@weft/environment";
import type { ServerError } from "./server-error.js";

/**
 * Identifies one recorded failure in an {@link ErrorGraph}. Never reused within a graph.
 */
export type FailureId = number & { readonly __brand: "FailureId" };

/** One recorded failure. */
interface FailureEntry {
  readonly error: ServerError;
  /** The failure this one was caused by (a launch that read its bytes), if any. */
  readonly cause: FailureId | undefined;
  /** Bytes of memory claimed by this failure, summed over every `StreamMemory`. */
  bytes: number;
  /** How many live failures name this one as their cause. */
  dependents: number;
}

/**
 * Records the failures of device work and how they caused each other, so a read of tainted bytes
 * can name the root cause and the chain that led to it.
 *
 * @remarks
 * **Record.** A failed launch inserts its error (`insert(error)`); a launch skipped because it read
 * bytes claimed by failure `f` inserts a failure caused by `f` (`insert(error, f)`). A
 * `StreamMemory` points byte ranges at failures and reports each claimed byte here
 * (`hold`/`unhold`), so the graph knows how many bytes hold each failure.
 * **Report.** `root(id)` and `chain(id)` (root first) are what a read's error names.
 * **Clear.** A failure leaves the graph when no byte holds it and no live failure names it as
 * cause: `prune(id)` checks that, and `unhold` prunes automatically when the last byte goes, so the
 * graph is bounded by the failures some tainted byte can still reach. Removing a failure
 * re-checks its cause, which may now be unreachable too.
 * **Invariant.** A cause is always live while a dependent is: `root` and `chain` never dangle.
 */
export class ErrorGraph {
  /** Live failures. Added by `insert`, removed by `prune` (directly or through `unhold`). */
  readonly #entries = new Map<FailureId, FailureEntry>();
  #next = 1;

  /** Number of live failures. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Records `error`, caused by the live failure `cause` when given. The new failure holds no
   * bytes yet: claim some or `prune` it.
   */
  insert(error: ServerError, cause?: FailureId): FailureId {
    if (cause !== undefined) {
      const parent = this.#entries.get(cause);
      invariant(parent, () => `ErrorGraph.insert: cause ${cause} is not a live failure`);
      parent.dependents++;
    }
    const id = this.#next++ as FailureId;
    this.#entries.set(id, { error, cause, bytes: 0, dependents: 0 });
    return id;
  }

  /** Whether `id` is still recorded. */
  has(id: FailureId): boolean {
    return this.#entries.has(id);
  }

  /** The error recorded for `id`, or `undefined` once it was pruned. */
  get(id: FailureId): ServerError | undefined {
    return this.#entries.get(id)?.error;
  }

  /** The failure `id` was caused by, if any. */
  cause(id: FailureId): FailureId | undefined {
    return this.#entry("cause", id).cause;
  }

  /** Bytes currently claimed by `id`. */
  bytesHeld(id: FailureId): number {
    return this.#entry("bytesHeld", id).bytes;
  }

  /** The failure at the start of `id`'s cause chain (`id` itself when it has no cause). */
  root(id: FailureId): FailureId {
    let current = id;
    for (let cause = this.cause(current); cause !== undefined; cause = this.cause(current)) current = cause;
    return current;
  }

  /** `id`'s cause chain, root first, `id` last. */
  chain(id: FailureId): FailureId[] {
    const out: FailureId[] = [];
    for (let current: FailureId | undefined = id; current !== undefined; current = this.cause(current)) {
      out.push(current);
    }
    return out.reverse();
  }

  /** `bytes` more bytes now point at `id`. Called by a `StreamMemory` when it claims bytes. */
  hold(id: FailureId, bytes: number): void {
    invariant(bytes >= 0, () => `ErrorGraph.hold: negative byte count ${bytes}`);
    this.#entry("hold", id).bytes += bytes;
  }

  /**
   * `bytes` bytes no longer point at `id`. When none is left, `id` is pruned (if nothing names it
   * as cause). Called by a `StreamMemory` when a claim is overwritten, written or forgotten.
   */
  unhold(id: FailureId, bytes: number): void {
    const entry = this.#entry("unhold", id);
    invariant(bytes >= 0 && bytes <= entry.bytes, () => `ErrorGraph.unhold: ${id} holds ${entry.bytes} bytes, not ${bytes}`);
    entry.bytes -= bytes;
    if (entry.bytes === 0) this.prune(id);
  }

  /**
   * Removes `id` when no byte holds it and no live failure names it as cause, then re-checks its
   * cause. Returns whether `id` was removed (pruning an id already gone returns `false`).
   */
  prune(id: FailureId): boolean {
    const entry = this.#entries.get(id);
    if (!entry || entry.bytes > 0 || entry.dependents > 0) return false;
    this.#entries.delete(id);
    if (entry.cause !== undefined) {
      const parent = this.#entries.get(entry.cause);
      invariant(parent, () => `ErrorGraph.prune: cause ${entry.cause} of ${id} vanished first`);
      parent.dependents--;
      this.prune(entry.cause);
    }
    return true;
  }

  #entry(op: string, id: FailureId): FailureEntry {
    const entry = this.#entries.get(id);
    invariant(entry, () => `ErrorGraph.${op}: failure ${id} is not live`);
    return entry;
  }
}
