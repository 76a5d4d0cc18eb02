/**
 * Shortening an array without giving its store back: the engine's per-segment lists (a queue's
 * operations, a policy's plans) are refilled right after they are emptied, and `array.length = 0`
 * drops the store V8 then grows again on the next pushes (~500 bytes for 20 entries, measured).
 * Popping keeps it. **Bound.** A list keeps the store of its largest fill (bounded by what fills
 * it: the queue limit, the plans sharing a first operation).
 *
 * @module
 */

/** Shortens `array` to `length` entries (no-op when it is not longer), keeping its store. */
export function truncateInPlace(array: unknown[], length: number): void {
  while (array.length > length) array.pop();
}
