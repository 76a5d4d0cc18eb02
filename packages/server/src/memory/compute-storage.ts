/**
 * Where a {@link MemoryManagement} gets its pages: a device's buffer allocator.
 *
 * @remarks
 * `alloc(size)` returns a resource of at least `size` bytes, or throws `OutOfMemoryError` when the
 * device has none *right now* (the manager then reclaims free pages and retries once).
 * `dealloc(resource)` gives a resource back; it is called once per resource, only when no slice
 * of it is live.
 */
export interface ComputeStorage<R> {
  alloc(size: number): R;
  dealloc(resource: R): void;
}
