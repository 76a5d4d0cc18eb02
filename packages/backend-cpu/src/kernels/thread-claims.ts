/**
 * The hand-off both CPU thread pools use (`matmul-threads.ts`, `elementwise-threads.ts`): a few
 * shared control words through which the main thread publishes a launch as numbered chunks, every
 * thread (the main one included) claims chunks, and the main thread waits for the chunks the
 * workers took.
 *
 * @remarks
 * **The claim word** is `generation (15 bits) << 16 | chunks (8 bits) << 8 | next chunk (8 bits)`:
 * one word, so a compare-exchange claims a chunk of exactly the launch it was published for, and a
 * launch's parameters cannot change until every claimed chunk is done (the main thread publishes
 * the next launch only after {@link waitForChunks}).
 * **Progress.** The main thread claims too, so a launch completes even if no worker ever wakes.
 * **Failure.** A worker whose chunk throws sets {@link FAILED} and still counts the chunk done, so
 * the main thread never waits forever; it then redoes the launch on its own.
 * **Workers** sleep on {@link WAKE} between launches and leave their loop when {@link STOP} is set
 * ({@link workerLoopSource} is their loop, as text, with the word indices written in as numbers so
 * that a bundler renaming identifiers cannot break it).
 *
 * @module
 */

/** Bumped for every launch: what sleeping workers wait on. */
export const WAKE = 0;
/** The claim word (see the module doc). */
export const CLAIM = 1;
/** Chunks done of the current launch. */
export const DONE = 2;
/** Set once: the workers leave their loop. */
export const STOP = 3;
/** Set by a worker whose chunk threw; cleared by every publish. */
export const FAILED = 4;
/** The first word a pool may use for its own parameters. */
export const POOL_WORDS = 8;

/** Most chunks one launch is split into (the claim word holds the count in 8 bits). */
export const MAX_CHUNKS = 255;

/** Launches published so far, modulo 2^15 (the claim word's generation). */
let generation = 0;

/** Publishes a launch of `chunks` chunks (at most {@link MAX_CHUNKS}) on `c` and wakes the workers. */
export function publishChunks(c: Int32Array, chunks: number): void {
  Atomics.store(c, DONE, 0);
  Atomics.store(c, FAILED, 0);
  generation = (generation + 1) & 0x7fff;
  Atomics.store(c, CLAIM, (generation << 16) | (chunks << 8));
  Atomics.add(c, WAKE, 1);
  Atomics.notify(c, WAKE);
}

/** Claims the next chunk of the published launch: its index, or -1 when none is left. */
export function claimChunk(c: Int32Array): number {
  for (;;) {
    const v = Atomics.load(c, CLAIM);
    const chunks = (v >>> 8) & 0xff;
    const i = v & 0xff;
    if (i >= chunks) return -1;
    if (Atomics.compareExchange(c, CLAIM, v, v + 1) === v) return i;
  }
}

/** Counts a claimed chunk done (waking the main thread at the last of `chunks`). */
export function chunkDone(c: Int32Array, chunks: number): void {
  if (Atomics.add(c, DONE, 1) + 1 === chunks) Atomics.notify(c, DONE);
}

/** Waits until all `chunks` chunks are done; `true` when none failed. */
export function waitForChunks(c: Int32Array, chunks: number): boolean {
  for (let done = Atomics.load(c, DONE); done < chunks; done = Atomics.load(c, DONE)) Atomics.wait(c, DONE, done, 50);
  return Atomics.load(c, FAILED) === 0;
}

/** Sets {@link STOP} and wakes every worker so that it leaves its loop. */
export function stopWorkers(c: Int32Array): void {
  Atomics.store(c, STOP, 1);
  Atomics.add(c, WAKE, 1);
  Atomics.notify(c, WAKE);
}

/**
 * A worker's loop as text: sleep on the wake word, claim chunks of each launch and run
 * `runChunk(i)` (a function the worker's source defines before this text) for each, until
 * stopped. `c` must be the control words' `Int32Array`.
 */
export function workerLoopSource(): string {
  return `
for (;;) {
  const wake = Atomics.load(c, ${WAKE});
  if (Atomics.load(c, ${STOP}) !== 0) break;
  for (;;) {
    const v = Atomics.load(c, ${CLAIM});
    const chunks = (v >>> 8) & 0xff;
    const i = v & 0xff;
    if (i >= chunks) break;
    if (Atomics.compareExchange(c, ${CLAIM}, v, v + 1) !== v) continue;
    try { runChunk(i); } catch { Atomics.store(c, ${FAILED}, 1); }
    if (Atomics.add(c, ${DONE}, 1) + 1 === chunks) Atomics.notify(c, ${DONE});
  }
  Atomics.wait(c, ${WAKE}, wake);
}
`;
}
