/**
 * How a {@link MemoryManagement} carves memory.
 *
 * @remarks
 * - `pageSize`: the largest regular page; allocations up to it share pages as first-fit slices,
 *   larger ones get a dedicated page of their own.
 * - `minPageSize`: the first regular page of a stream (default `min(pageSize, 256 KiB)`). Pages
 *   are *sized to the work*: each new regular page is the next power of two at least as large as
 *   the request and as the stream's regular pages so far, between `minPageSize` and `pageSize`.
 *   A stream that holds 12 bytes therefore reserves one small page, not a 64 MiB one.
 * - `alignment`: every slice starts at a multiple of it (and its size is rounded up to it), so
 *   kernels may view a slice as any typed array whose element size divides it.
 * - `maxAllocation`: the largest allocation the device can bind; a larger request throws
 *   `BufferTooBigError` (permanent), never `OutOfMemoryError`.
 */
export interface MemoryConfiguration {
  readonly pageSize: number;
  readonly minPageSize?: number;
  readonly alignment: number;
  readonly maxAllocation: number;
}

/** The default {@link MemoryConfiguration.minPageSize} bound: 256 KiB. */
export const DEFAULT_MIN_PAGE_SIZE = 256 * 1024;

/** `config.minPageSize`, or its default, rounded to the alignment and at most `pageSize`. */
export function minPageSizeOf(config: MemoryConfiguration): number {
  const wanted = config.minPageSize ?? Math.min(config.pageSize, DEFAULT_MIN_PAGE_SIZE);
  const aligned = Math.ceil(wanted / config.alignment) * config.alignment;
  return Math.max(config.alignment, Math.min(aligned, config.pageSize));
}

/** Throws a `RangeError` naming the field when `config` cannot work. */
export function checkMemoryConfiguration(config: MemoryConfiguration): void {
  const { pageSize, alignment, maxAllocation, minPageSize } = config;
  if (!Number.isSafeInteger(alignment) || alignment < 1 || (alignment & (alignment - 1)) !== 0) {
    throw new RangeError(`MemoryConfiguration.alignment must be a power of two, got ${alignment}`);
  }
  if (!Number.isSafeInteger(pageSize) || pageSize < alignment || pageSize % alignment !== 0) {
    throw new RangeError(
      `MemoryConfiguration.pageSize must be a positive multiple of alignment (${alignment}), got ${pageSize}`,
    );
  }
  if (minPageSize !== undefined && (!Number.isSafeInteger(minPageSize) || minPageSize < 1 || minPageSize > pageSize)) {
    throw new RangeError(`MemoryConfiguration.minPageSize must be a positive integer at most pageSize (${pageSize}), got ${minPageSize}`);
  }
  if (!Number.isSafeInteger(maxAllocation) || maxAllocation < 1) {
    throw new RangeError(`MemoryConfiguration.maxAllocation must be a positive integer, got ${maxAllocation}`);
  }
}
