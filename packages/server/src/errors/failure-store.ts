import { invariant } from "@weft/environment";
import type { BufferBinding } from "../binding.js";
import type { StreamMemory } from "../stream/stream-memory.js";
import type { StreamPool } from "../stream/stream-pool.js";
import { taint, taintWith, written } from "../stream/taint.js";
import { ErrorGraph, type FailureId } from "./error-graph.js";
import { DependentLaunchError, type ServerError, SkippedLaunchError } from "./server-error.js";
import { TaintedReadError } from "./tainted-read-error.js";

/**
 * What a launch's read-set check found: the failure claiming an input, the input it claims, and
 * that failure's error — everything the skip needs to record and a capture needs to fail with.
 */
export interface ReadFailure {
  /** The failure claiming the input. */
  readonly failure: FailureId;
  /** The claimed input; the skip names it as what the launch needed. */
  readonly needed: BufferBinding;
  /** The failure's own error (the root's is `graph.get(graph.root(failure))`). */
  readonly error: ServerError;
}

/**
 * The taint surface a server driver uses: a stream pool (whose streams are {@link StreamMemory})
 * and one {@link ErrorGraph}, with the five things a launch or a read needs.
 *
 * @remarks
 * **Record.** Before a launch: `checkReads(reads)`. A hit → `skipLaunch(hit, writes)` (the launch
 * does not run; its writes are claimed by a failure caused by the one it read). A launch that fails
 * → `failLaunch(error, writes)`. A launch that is enqueued, or a host upload → `written(writes)`.
 * **Report.** `readError(bindings)` before a read hands back the {@link TaintedReadError} to reject
 * with, naming the root cause and the chain.
 * **Clear.** Claims go when bytes are written again or their allocation is freed; the graph prunes
 * a failure no byte and no dependent holds.
 * **Deferred checks** (a kernel that reports a failure through a status word: `gather`'s
 * out-of-range index on a GPU). `suspect(writes)` claims the checked kernel's writes with a
 * `pending` check; a launch whose reads are claimed by pending checks (`pendingOf`) runs, and its
 * writes then `inherit` them (one derived failure naming the checks). `settle(check, error?)` makes
 * the whole family failed or clean at once. Only *failed* claims count for `checkReads` and
 * `readError`: a pending claim neither skips a launch nor fails a read — the driver makes reads
 * wait until the checks issued before them settle (see `ErrorGraph`, "Deferred checks").
 */
export class FailureStore<S extends StreamMemory> {
  constructor(
    readonly pool: StreamPool<S>,
    readonly graph: ErrorGraph = new ErrorGraph(),
  ) {}

  /**
   * Whether some failure or check is live (`ComputeServer.hasClaims`): false means no byte is
   * claimed, since a failure no byte and no dependent holds is pruned from the graph.
   */
  get hasClaims(): boolean {
    return this.graph.size > 0;
  }

  /** Accepts a claim whose failure has failed (not pending, not passed). */
  readonly #failed = (id: FailureId): boolean => this.graph.state(id) === "failed";

  /** The first binding a failed claim covers, with that failure; `undefined` when all are clean. */
  checkReads(bindings: Iterable<BufferBinding>): ReadFailure | undefined {
    // No live failure: nothing is claimed (a failure no byte holds is pruned), the fast path of every launch.
    if (this.graph.size === 0) return undefined;
    for (const binding of bindings) {
      const failure = this.pool.tryGet(binding.stream)?.failure(binding, this.#failed);
      if (failure === undefined) continue;
      const error = this.graph.get(failure);
      invariant(error, () => `FailureStore: memory claims bytes for pruned failure ${failure}`);
      return { failure, needed: binding, error };
    }
    return undefined;
  }

  /** Taints `writes` with a new failure for `error`; returns it unless it claimed nothing. */
  failLaunch(error: ServerError, writes: Iterable<BufferBinding>): FailureId | undefined {
    return taint(this.pool, error, writes, this.graph);
  }

  /**
   * Records that a launch (described by `what`, e.g. its kernel key) did not run because it read
   * `readFailure.needed`: its writes are claimed by a new failure caused by `readFailure.failure`.
   */
  skipLaunch(readFailure: ReadFailure, writes: Iterable<BufferBinding>, what = "a launch"): FailureId | undefined {
    const root = this.graph.get(this.graph.root(readFailure.failure));
    invariant(root, "FailureStore.skipLaunch: the root of a live failure is live");
    const failure = this.graph.insert(new SkippedLaunchError(what, root), readFailure.failure);
    taintWith(this.pool, failure, writes, this.graph);
    return this.graph.prune(failure) ? undefined : failure;
  }

  /**
   * The deferred checks still pending behind the bytes `bindings` name (distinct, in first-seen
   * order); empty when none (the common case, one map lookup per binding).
   */
  pendingOf(bindings: Iterable<BufferBinding>): FailureId[] {
    const found: FailureId[] = [];
    if (this.graph.size === 0) return found;
    const collect = (id: FailureId): boolean => {
      if (this.graph.state(id) !== "pending") return false;
      for (const check of this.graph.checksOf(id)) {
        if (this.graph.state(check) === "pending" && !found.includes(check)) found.push(check);
      }
      return false;
    };
    for (const binding of bindings) this.pool.tryGet(binding.stream)?.failure(binding, collect);
    return found;
  }

  /**
   * Claims `writes` with a new pending check whose error, if it fails, is known only at
   * {@link FailureStore.settle}; `placeholder` describes the check meanwhile. Returns the check,
   * or `undefined` when it claimed no byte.
   *
   * @remarks
   * **Checked work computed from checked work** (a gather of a gather whose status is not back
   * yet): the launch already ran on pending bytes and its writes `inherit`ed those checks. The
   * new check must not replace that claim — the writes would then answer only for their own
   * status, and a failed first gather would reach its output but not the second one's (a silent
   * wrong result). So a write already claimed by unsettled checks gets one derived failure
   * naming them first (the earlier failure is the root cause, as on the CPU, which skips the
   * second launch) and the new check last. A write claimed by a plain failure keeps it.
   */
  suspect(placeholder: ServerError, writes: Iterable<BufferBinding>, what = "a checked launch"): FailureId | undefined {
    const check = this.graph.insertCheck(placeholder);
    for (const binding of writes) {
      const memory = this.pool.tryGet(binding.stream);
      if (memory === undefined) continue;
      const earlier: FailureId[] = [];
      let plain = false;
      memory.failure(binding, (id) => {
        if (this.graph.state(id) === "passed") return false;
        const checks = this.graph.checksOf(id);
        if (checks.length === 0) plain = true;
        for (const c of checks) if (this.graph.state(c) !== "passed" && !earlier.includes(c)) earlier.push(c);
        return false;
      });
      if (plain) continue;
      if (earlier.length === 0) {
        memory.taint(binding, check, this.graph);
        continue;
      }
      const derived = this.graph.insertDerived(new DependentLaunchError(what), [...earlier, check]);
      memory.taint(binding, derived, this.graph);
      this.graph.prune(derived);
    }
    return this.graph.prune(check) ? undefined : check;
  }

  /**
   * Records that a launch (described by `what`) wrote `writes` from bytes of the pending `checks`
   * (`pendingOf` its reads, taken before the launch): releases the writes' old claims
   * (`written`) and claims them with one derived failure, which fails with the first check that
   * fails.
   *
   * @remarks
   * The derived failure is recorded before the old claims go: a launch that writes in place (its
   * output reuses the bytes it read) releases the very bytes that held a check, and a check
   * holding no byte and named by nobody is pruned — the derived failure could then not name it,
   * and the output would read as clean while the check may still fail.
   */
  writtenFrom(checks: readonly FailureId[], writes: readonly BufferBinding[], what = "a launch"): void {
    if (checks.length === 0) {
      this.written(writes);
      return;
    }
    const derived = this.graph.insertDerived(new DependentLaunchError(what), checks);
    this.written(writes);
    taintWith(this.pool, derived, writes, this.graph);
    this.graph.prune(derived);
  }

  /** Settles the pending check `check`: failed with `error`, or clean without (see `ErrorGraph.settle`). */
  settle(check: FailureId, error?: ServerError): void {
    this.graph.settle(check, error);
  }

  /** The bytes `writes` name have a writer again: releases their claims. */
  written(writes: Iterable<BufferBinding>): void {
    // No live failure or check: no byte is claimed, so there is nothing to release.
    if (this.graph.size === 0) return;
    written(this.pool, writes, this.graph);
  }

  /** The error a read of `bindings` must reject with, or `undefined` when every byte is clean. */
  readError(bindings: Iterable<BufferBinding>): TaintedReadError | undefined {
    const hit = this.checkReads(bindings);
    if (!hit) return undefined;
    const chain = this.graph.chain(hit.failure).map((id) => {
      const error = this.graph.get(id);
      invariant(error, () => `FailureStore.readError: failure ${id} of a live chain was pruned`);
      return error;
    });
    const root = chain[0];
    invariant(root, "FailureStore.readError: a chain has a root");
    return new TaintedReadError(hit.needed, hit.failure, root, chain);
  }
}
