import { invariant } from "@weft/environment";
import type { AllocationId, BufferBinding } from "../binding.js";
import type { ErrorGraph, FailureId } from "../errors/error-graph.js";

/**
 * The memory a stream's kernels see, for the taint bookkeeping (docs/concepts.md#streampool-streammemory-and-taint).
 *
 * @remarks
 * **Why.** Whether bytes can be trusted lives with their allocation, on the stream that allocated
 * it. The whole binding is passed, not an allocation id, because the claim is exactly the byte
 * range the binding names: a launch that failed writing one region of a buffer says nothing about
 * the rest of it. Backends embed a {@link ByteRangeClaims} and delegate to it.
 */
export interface StreamMemory {
  /**
   * The failure claiming any byte `binding` names, if one does: the first claim (by offset) for
   * which `accept` (default: any) returns true. `accept` sees every overlapping claim in order
   * until it accepts one, so it may also collect them.
   */
  failure(binding: BufferBinding, accept?: (failure: FailureId) => boolean): FailureId | undefined;
  /** Points the bytes `binding` names at `failure`. */
  taint(binding: BufferBinding, failure: FailureId, graph: ErrorGraph): void;
  /** The bytes `binding` names have a writer again: releases every claim on them, and only on them. */
  written(binding: BufferBinding, graph: ErrorGraph): void;
}

/** One claimed byte range `[start, end)` of an allocation. */
export interface Claim {
  readonly start: number;
  readonly end: number;
  readonly failure: FailureId;
}

/** What carving an allocation without claims removes: nothing (shared; only ever iterated). */
const NOTHING_REMOVED: ReadonlyMap<FailureId, number> = new Map();

/**
 * Per allocation, a sorted map of disjoint byte intervals `[start, end) → FailureId`: the reusable
 * {@link StreamMemory} every backend stream embeds.
 *
 * @remarks
 * **Exact ranges.** A claim covers exactly its bytes. Tainting a range that overlaps earlier claims
 * overwrites them on the overlap only (splitting them); `written` releases only its range.
 * Adjacent intervals of the same failure are merged, so the map never holds more intervals than
 * there are distinct boundaries.
 * **Counting.** Every byte claimed is reported to the {@link ErrorGraph} (`hold`), every byte
 * released or overwritten is returned (`unhold`), so the graph prunes a failure the moment no byte
 * holds it. New bytes are held before old ones are returned, so re-tainting with the same failure
 * never prunes it in between.
 * **Bounded.** An allocation's entry is removed when its last interval goes; `forget` drops all of
 * an allocation's claims when its memory is freed (a freed allocation can never be read again).
 */
export class ByteRangeClaims implements StreamMemory {
  /** Sorted, disjoint intervals per allocation; an allocation without claims has no entry. */
  readonly #claims = new Map<AllocationId, Claim[]>();

  failure(binding: BufferBinding, accept?: (failure: FailureId) => boolean): FailureId | undefined {
    const list = this.#claims.get(binding.allocation);
    if (!list || binding.size <= 0) return undefined;
    const start = binding.offset;
    const end = binding.offset + binding.size;
    for (const claim of list) {
      if (claim.start >= end) break;
      if (claim.end > start && (accept === undefined || accept(claim.failure))) return claim.failure;
    }
    return undefined;
  }

  taint(binding: BufferBinding, failure: FailureId, graph: ErrorGraph): void {
    if (binding.size <= 0) return;
    const start = binding.offset;
    const end = binding.offset + binding.size;
    graph.hold(failure, end - start);
    const removed = this.#carve(binding.allocation, start, end);
    const list = this.#claims.get(binding.allocation) ?? [];
    let at = list.findIndex((claim) => claim.start >= end);
    if (at < 0) at = list.length;
    let claim: Claim = { start, end, failure };
    // Merge with same-failure neighbours that touch the new range.
    const before = list[at - 1];
    if (before && before.end === start && before.failure === failure) {
      claim = { start: before.start, end, failure };
      list.splice(at - 1, 1);
      at--;
    }
    const after = list[at];
    if (after && after.start === end && after.failure === failure) {
      claim = { start: claim.start, end: after.end, failure };
      list.splice(at, 1);
    }
    list.splice(at, 0, claim);
    this.#claims.set(binding.allocation, list);
    for (const [id, bytes] of removed) graph.unhold(id, bytes);
  }

  written(binding: BufferBinding, graph: ErrorGraph): void {
    if (binding.size <= 0) return;
    const removed = this.#carve(binding.allocation, binding.offset, binding.offset + binding.size);
    for (const [id, bytes] of removed) graph.unhold(id, bytes);
  }

  /** Drops every claim on `allocation` (its memory was freed); returns the bytes to the graph. */
  forget(allocation: AllocationId, graph: ErrorGraph): void {
    const list = this.#claims.get(allocation);
    if (!list) return;
    this.#claims.delete(allocation);
    for (const claim of list) graph.unhold(claim.failure, claim.end - claim.start);
  }

  /** The claims on `allocation`, sorted by start (a copy; for inspection and tests). */
  claims(allocation: AllocationId): Claim[] {
    return [...(this.#claims.get(allocation) ?? [])];
  }

  /** Number of allocations with at least one claim. */
  get allocations(): number {
    return this.#claims.size;
  }

  /**
   * Removes `[start, end)` from `allocation`'s intervals, splitting those that straddle an edge.
   * Returns the bytes removed per failure; the caller returns them to the graph.
   */
  #carve(allocation: AllocationId, start: number, end: number): ReadonlyMap<FailureId, number> {
    const list = this.#claims.get(allocation);
    if (!list) return NOTHING_REMOVED;
    const removed = new Map<FailureId, number>();
    const kept: Claim[] = [];
    for (const claim of list) {
      if (claim.end <= start || claim.start >= end) {
        kept.push(claim);
        continue;
      }
      const lo = Math.max(claim.start, start);
      const hi = Math.min(claim.end, end);
      removed.set(claim.failure, (removed.get(claim.failure) ?? 0) + (hi - lo));
      if (claim.start < start) kept.push({ start: claim.start, end: start, failure: claim.failure });
      if (claim.end > end) kept.push({ start: end, end: claim.end, failure: claim.failure });
    }
    invariant(
      kept.every((claim, i) => i === 0 || (kept[i - 1] as Claim).end <= claim.start),
      "ByteRangeClaims: intervals must stay sorted and disjoint",
    );
    if (kept.length === 0) this.#claims.delete(allocation);
    else this.#claims.set(allocation, kept);
    return removed;
  }
}

/**
 * A backend stream's {@link StreamMemory}, answered by the {@link ByteRangeClaims} it embeds: what
 * every backend stream extends (the host's `HostStream`, WebGPU's `WebGpuStream`), so the claims
 * live on the stream that allocated the memory and the delegation is written once.
 *
 * **Invariant.** A subclass forgets an allocation's claims when its slice is freed
 * (`claims.forget` from its memory manager's `onFree`), so claims only name live allocations.
 */
export abstract class ClaimedStream implements StreamMemory {
  /** Taint claims on this stream's allocations; entries leave with their allocation. */
  readonly claims = new ByteRangeClaims();

  failure(binding: BufferBinding, accept?: (failure: FailureId) => boolean): FailureId | undefined {
    return this.claims.failure(binding, accept);
  }

  taint(binding: BufferBinding, failure: FailureId, graph: ErrorGraph): void {
    this.claims.taint(binding, failure, graph);
  }

  written(binding: BufferBinding, graph: ErrorGraph): void {
    this.claims.written(binding, graph);
  }
}
