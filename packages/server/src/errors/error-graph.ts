import { invariant } from "@weft/environment";
import type { ServerError } from "./server-error.js";

/**
 * Identifies one recorded failure in an {@link ErrorGraph}. Never reused within a graph.
 */
export type FailureId = number & { readonly __brand: "FailureId" };

/**
 * Where a recorded entry stands, as a read sees it.
 * - `failed`: the work failed; reads of its bytes reject, launches reading them are skipped.
 * - `pending`: a deferred check (a kernel's status word not read back yet): launches reading
 *   its bytes still run, and reads wait until it settles.
 * - `passed`: the check passed; its bytes are clean.
 */
export type FailureState = "failed" | "pending" | "passed";

/**
 * How an entry got its state: recorded failed (`insert`), a deferred check (`insertCheck`, then
 * `settle`), or derived from deferred checks (`insertDerived`: bytes computed from a check's
 * bytes, failed as soon as one of its checks fails).
 */
type EntryKind =
  | { readonly kind: "failure" }
  | { kind: "check"; state: "pending" | "passed" | "failed" }
  | { readonly kind: "derived" };

/** One recorded failure. */
interface FailureEntry {
  error: ServerError;
  /** The failure this one was caused by (a launch that read its bytes), if any. */
  readonly cause: FailureId | undefined;
  /** A derived entry's other checks (its first is `cause`); empty otherwise. */
  readonly also: readonly FailureId[];
  readonly how: EntryKind;
  /** Bytes of memory claimed by this failure, summed over every `StreamMemory`. */
  bytes: number;
  /** How many live failures name this one as their cause (or among `also`). */
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
 * **Deferred checks.** Some failures are only known after the work ran (a gather's out-of-range
 * index, found in a status word the kernel writes). `insertCheck` records such a check as
 * `pending`; bytes computed from its bytes meanwhile get a failure from `insertDerived(error,
 * checks)`, which names the checks directly (never another derived failure, so chains stay one
 * link long however long the computation). `settle(check, error?)` turns the check `failed` (with
 * the error found) or `passed`; {@link ErrorGraph.state} answers for every entry: a derived
 * failure is failed when one of its checks failed, pending while one is pending, else passed.
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
    return this.#add(error, cause === undefined ? [] : [cause], { kind: "failure" });
  }

  /**
   * Records a deferred check, `pending` until {@link ErrorGraph.settle}: `placeholder` stands for
   * the error until the check's own is known. Holds no bytes yet.
   */
  insertCheck(placeholder: ServerError): FailureId {
    return this.#add(placeholder, [], { kind: "check", state: "pending" });
  }

  /**
   * Records bytes computed from the bytes of the deferred `checks` (live check entries, at least
   * one): failed as soon as one of them fails, passed once all passed. Holds no bytes yet.
   */
  insertDerived(error: ServerError, checks: readonly FailureId[]): FailureId {
    invariant(checks.length > 0, "ErrorGraph.insertDerived: a derived failure names at least one check");
    for (const c of checks) invariant(this.#entries.get(c)?.how.kind === "check", () => `ErrorGraph.insertDerived: ${c} is not a check`);
    return this.#add(error, checks, { kind: "derived" });
  }

  /**
   * Settles the pending check `id`: `failed` with `error` when given, else `passed`. A check
   * already pruned (no byte and no dependent held it any more) is ignored.
   */
  settle(id: FailureId, error?: ServerError): void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    invariant(entry.how.kind === "check" && entry.how.state === "pending", () => `ErrorGraph.settle: ${id} is not a pending check`);
    entry.how.state = error === undefined ? "passed" : "failed";
    if (error !== undefined) entry.error = error;
  }

  /** Where `id` stands (see {@link FailureState}); a derived failure answers from its checks. */
  state(id: FailureId): FailureState {
    const entry = this.#entry("state", id);
    switch (entry.how.kind) {
      case "failure":
        return "failed";
      case "check":
        return entry.how.state;
      case "derived": {
        let pending = false;
        for (const c of this.#causes(entry)) {
          const st = this.state(c);
          if (st === "failed") return "failed";
          if (st === "pending") pending = true;
        }
        return pending ? "pending" : "passed";
      }
      default:
        return entry.how satisfies never;
    }
  }

  /** The deferred checks behind `id`: itself for a check, its checks for a derived failure, none otherwise. */
  checksOf(id: FailureId): readonly FailureId[] {
    const entry = this.#entry("checksOf", id);
    if (entry.how.kind === "check") return [id];
    if (entry.how.kind === "derived") return this.#causes(entry);
    return [];
  }

  #add(error: ServerError, causes: readonly FailureId[], how: EntryKind): FailureId {
    for (const cause of causes) {
      const parent = this.#entries.get(cause);
      invariant(parent, () => `ErrorGraph.insert: cause ${cause} is not a live failure`);
      parent.dependents++;
    }
    const id = this.#next++ as FailureId;
    this.#entries.set(id, { error, cause: causes[0], also: causes.slice(1), how, bytes: 0, dependents: 0 });
    return id;
  }

  /** Every cause of `entry` (`cause`, then `also`). */
  #causes(entry: FailureEntry): FailureId[] {
    return entry.cause === undefined ? [] : [entry.cause, ...entry.also];
  }

  /** Whether `id` is still recorded. */
  has(id: FailureId): boolean {
    return this.#entries.has(id);
  }

  /** The error recorded for `id`, or `undefined` once it was pruned. */
  get(id: FailureId): ServerError | undefined {
    return this.#entries.get(id)?.error;
  }

  /**
   * The failure `id` was caused by, if any. For a derived failure, the first of its checks that
   * failed (the one its error comes from), else its first check.
   */
  cause(id: FailureId): FailureId | undefined {
    const entry = this.#entry("cause", id);
    if (entry.how.kind === "derived") {
      for (const c of this.#causes(entry)) if (this.state(c) === "failed") return c;
    }
    return entry.cause;
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
    for (const cause of this.#causes(entry)) {
      const parent = this.#entries.get(cause);
      invariant(parent, () => `ErrorGraph.prune: cause ${cause} of ${id} vanished first`);
      parent.dependents--;
      this.prune(cause);
    }
    return true;
  }

  #entry(op: string, id: FailureId): FailureEntry {
    const entry = this.#entries.get(id);
    invariant(entry, () => `ErrorGraph.${op}: failure ${id} is not live`);
    return entry;
  }
}
