import type { StreamId } from "@weft/environment";

/** Identifies one allocation (a slice of a page) of a server's memory. Never reused. */
export type AllocationId = number & { readonly __brand: "AllocationId" };

/**
 * A byte range of one allocation, plus the stream that allocated it.
 *
 * @remarks
 * **Why.** Taint claims and cross-stream pins are per byte range, not per buffer: a launch that
 * failed writing bytes 0–63 says nothing about bytes 64–127. The stream says whose
 * {@link StreamMemory} answers for the allocation.
 * **Invariant.** `offset` and `size` are in bytes, relative to the allocation's start;
 * `offset + size` never exceeds the allocation's size.
 */
export interface BufferBinding {
  readonly allocation: AllocationId;
  readonly offset: number;
  readonly size: number;
  /** The stream that allocated the memory (not necessarily the stream using it). */
  readonly stream: StreamId;
}

/**
 * A {@link BufferBinding}, built with `new`: per-launch records are never object literals in the
 * library, because V8 moves a literal's allocation site to the old generation for good once a
 * phase kept most of its objects alive (docs/performance.md#allocation-sites).
 */
export function bufferBinding(allocation: AllocationId, offset: number, size: number, stream: StreamId): BufferBinding {
  return new ByteRange(allocation, offset, size, stream);
}

class ByteRange implements BufferBinding {
  constructor(
    readonly allocation: AllocationId,
    readonly offset: number,
    readonly size: number,
    readonly stream: StreamId,
  ) {}
}
