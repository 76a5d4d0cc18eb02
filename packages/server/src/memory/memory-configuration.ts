/**
 * How a {@link MemoryManagement} carves memory.
 *
 * @remarks
 * - `pageSize`: bytes per regular page; allocations up to it share pages as first-fit slices,
 *   larger ones get a dedicated page of their own.
 * - `alignment`: every slice starts at a multiple of it (and its size is rounded up to it), so
 *   kernels may view a slice as any typed array whose element size divides it.
 * - `maxAllocation`: the largest allocation the device can bind; a larger request throws
 *   `BufferTooBigError` (permanent), never `OutOfMemoryError`.
 */
export interface MemoryConfiguration {
  readonly pageSize: number;
  readonly alignment: number;
  readonly maxAllocation: number;
}

/** Throws a `RangeError` naming the field when `config` cannot work. */
export function checkMemoryConfiguration(config: MemoryConfiguration): void {
  const { pageSize, alignment, maxAllocation } = config;
  if (!Number.isSafeInteger(alignment) || alignment < 1 || (alignment & (alignment - 1)) !== 0) {
    throw new RangeError(`MemoryConfiguration.alignment must be a power of two, got ${alignment}`);
  }
  if (!Number.isSafeInteger(pageSize) || pageSize < alignment || pageSize % alignment !== 0) {
    throw new RangeError(
      `MemoryConfiguration.pageSize must be a positive multiple of alignment (${alignment}), got ${pageSize}`,
    );
  }
  if (!Number.isSafeInteger(maxAllocation) || maxAllocation < 1) {
    throw new RangeError(`MemoryConfiguration.maxAllocation must be a positive integer, got ${maxAllocation}`);
  }
}
