/**
 * Large matmuls across cores: the WebAssembly SIMD core (`wasm/gemm.ts`, built a second time to
 * import one shared memory) instantiated on the main thread and on `worker_threads` workers, which
 * compute row panels of one packed product side by side.
 *
 * @remarks
 * **Same bits.** Every 4×4 tile is computed by the same code over the same packed panels, adding
 * `a[i,p]·b[p,j]` in increasing `p`; only which thread computes a tile changes. The unit tests
 * hold the threaded product to bit equality with the single-thread one.
 * **When.** Node only (workers come from `worker_threads`, obtained synchronously through
 * `process.getBuiltinModule`; the main thread waits with `Atomics.wait`, which a browser page may
 * not do on its main thread, so browsers stay single-threaded), for products of at least
 * {@link THREADED_MATMUL_MIN_WORK} multiply-adds. Threads: `WEFT_CPU_THREADS` when set (1 turns
 * threading off), else `os.availableParallelism()` capped at {@link MAX_CPU_THREADS} — and 1
 * where that is 2 or less, so a 2-core machine keeps the single-thread path and cannot get
 * slower. See docs/performance.md, "The CPU backend across cores".
 * **Hand-off.** Chunks of row panels are claimed from a shared counter by every thread, the main
 * thread included, so the product completes even if no worker ever wakes; the main thread then
 * waits for the chunks workers claimed. Workers are `unref()`ed: they never keep a process alive.
 * **Bounded.** One shared memory of at most {@link WASM_GEMM_MAX_BYTES} (it grows to the largest
 * product served, like the single-thread core's), `threads - 1` workers.
 *
 * @module
 */
import { GEMM_SHARED_WASM_BASE64 } from "../wasm/gemm-shared.generated.js";
import { MAX_CHUNKS, POOL_WORDS, chunkDone, claimChunk, publishChunks, stopWorkers, waitForChunks, workerLoopSource } from "./thread-claims.js";

/** Most threads (main included) a product is split over. */
export const MAX_CPU_THREADS = 8;

/** Fewest multiply-adds (`m·n·k` per batch) worth splitting: 2^22, about a millisecond on one core. */
export const THREADED_MATMUL_MIN_WORK = 1 << 22;

/** Row panels (of 4 rows) per claimed chunk, at least (more when a block has over 255 chunks' worth). */
const PANELS_PER_CHUNK = 2;

// Parameter words (Int32 indices after the shared control words of `thread-claims.ts`).
const PA = POOL_WORDS;
const PB = POOL_WORDS + 1;
const PC = POOL_WORDS + 2;
const K = POOL_WORDS + 3;
const M_PANELS = POOL_WORDS + 4;
const N_PANELS = POOL_WORDS + 5;
const LDC = POOL_WORDS + 6;
const PER_CHUNK = POOL_WORDS + 7;
const CONTROL_WORDS = POOL_WORDS + 8;

/**
 * What a worker runs (CommonJS, evaluated by `new Worker(…, { eval: true })`): one chunk of row
 * panels of the published product, with the parameter words' indices written in as numbers (text,
 * so a bundler renaming identifiers cannot break it), inside the shared claim loop.
 */
const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { module, memory, control } = workerData;
const gemm = new WebAssembly.Instance(module, { env: { memory } }).exports.gemm;
const c = new Int32Array(control);
function runChunk(i) {
  const per = c[${PER_CHUNK}];
  const first = i * per;
  const k = c[${K}];
  const ldc = c[${LDC}];
  gemm(c[${PA}] + first * k * 32, c[${PB}], c[${PC}] + first * 4 * ldc * 8, k, Math.min(per, c[${M_PANELS}] - first), c[${N_PANELS}], ldc);
}
${workerLoopSource()}`;

/** The part of Node's `worker_threads` used here. */
interface WorkerApi {
  readonly Worker: new (source: string, options: { eval: true; workerData: unknown }) => { unref(): void; terminate(): Promise<number> };
}

/** The part of the WebAssembly JavaScript API used here. */
interface WebAssemblyApi {
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object, imports: object) => { readonly exports: unknown };
  readonly Memory: new (descriptor: { initial: number; maximum: number; shared: boolean }) => SharedWasmMemory;
}

/** A shared WebAssembly memory. */
interface SharedWasmMemory {
  readonly buffer: SharedArrayBuffer;
  grow(pages: number): number;
}

/** The shared core: its memory, the main thread's `gemm`, the control words and the workers. */
export interface ThreadedGemm {
  readonly memory: SharedWasmMemory;
  readonly gemm: (pa: number, pb: number, pc: number, k: number, mPanels: number, nPanels: number, ldc: number) => void;
  readonly threads: number;
  readonly control: Int32Array;
  readonly workers: readonly { unref(): void; terminate(): Promise<number> }[];
}

type Builtins = { getBuiltinModule?: (name: string) => unknown } | undefined;

/** The thread count asked for (`WEFT_CPU_THREADS`, else from `os.availableParallelism()`); 1 outside Node. */
function chooseThreads(): number {
  const proc = (globalThis as { process?: Builtins & { env?: Record<string, string | undefined> } }).process;
  if (proc?.getBuiltinModule === undefined) return 1;
  const asked = proc.env?.WEFT_CPU_THREADS;
  if (asked !== undefined && asked !== "") {
    const n = Number(asked);
    return Number.isInteger(n) && n >= 1 ? Math.min(n, MAX_CPU_THREADS) : 1;
  }
  const os = proc.getBuiltinModule("node:os") as { availableParallelism?: () => number } | undefined;
  const cores = os?.availableParallelism?.() ?? 1;
  return cores <= 2 ? 1 : Math.min(cores, MAX_CPU_THREADS);
}

/** Threads configured (`undefined`: not decided yet). */
let configured: number | undefined;
/** The shared core, created on the first threaded product; `null` where it cannot be. */
let core: ThreadedGemm | null | undefined;

/**
 * Sets how many threads large matmuls use in this process (`"auto"`: `WEFT_CPU_THREADS`, else
 * from the core count), stopping the current workers. For tests and embedders; results do not
 * depend on it.
 */
export function configureCpuThreads(threads: number | "auto"): void {
  stopThreads();
  configured = threads === "auto" ? chooseThreads() : Math.max(1, Math.min(MAX_CPU_THREADS, Math.floor(threads)));
}

/** Threads large matmuls use here (1: single-threaded). */
export function cpuThreads(): number {
  configured ??= chooseThreads();
  return configured;
}

/** What else stops with {@link stopThreads} (the elementwise pool); one entry per pool module, added at load. */
const stopHooks: (() => void)[] = [];

/** Registers `stop` to run whenever the threads stop or are reconfigured (another pool's workers). */
export function onStopThreads(stop: () => void): void {
  stopHooks.push(stop);
}

/** Stops the workers (they are `unref()`ed, so a process never has to). */
export function stopThreads(): void {
  for (const stop of stopHooks) stop();
  if (core) {
    stopWorkers(core.control);
    for (const w of core.workers) void w.terminate();
  }
  core = undefined;
}

function decodeBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The shared core with `cpuThreads() - 1` workers, created once; `null` where it cannot run. */
export function threadedGemm(): ThreadedGemm | null {
  if (core !== undefined) return core;
  const threads = cpuThreads();
  const proc = (globalThis as { process?: Builtins }).process;
  const wasm = (globalThis as unknown as { WebAssembly?: WebAssemblyApi }).WebAssembly;
  const workerApi = proc?.getBuiltinModule?.("node:worker_threads") as WorkerApi | undefined;
  if (threads < 2 || wasm === undefined || workerApi === undefined) {
    core = null;
    return core;
  }
  try {
    const memory = new wasm.Memory({ initial: 1, maximum: 4096, shared: true });
    const module = new wasm.Module(decodeBase64(GEMM_SHARED_WASM_BASE64));
    const gemm = (new wasm.Instance(module, { env: { memory } }).exports as ThreadedGemm).gemm;
    const controlBuffer = new SharedArrayBuffer(CONTROL_WORDS * 4);
    const workers = Array.from({ length: threads - 1 }, () => {
      const w = new workerApi.Worker(WORKER_SOURCE, { eval: true, workerData: { module, memory, control: controlBuffer } });
      w.unref();
      return w;
    });
    core = { memory, gemm, threads, control: new Int32Array(controlBuffer), workers };
  } catch {
    core = null; // no shared memory or no workers here: single-threaded
  }
  return core;
}

/**
 * Computes `mPanels × nPanels` tiles (the arguments of `gemm`) on every thread of `t`: the product
 * is published as chunks of row panels, claimed by the workers and by this thread, which then
 * waits for the chunks the workers claimed. Should a worker fail its chunk, this thread computes
 * the whole block again (the same tiles, so the same bits).
 */
export function gemmOnThreads(t: ThreadedGemm, pa: number, pb: number, pc: number, k: number, mPanels: number, nPanels: number, ldc: number): void {
  const c = t.control;
  const per = Math.max(PANELS_PER_CHUNK, Math.ceil(mPanels / MAX_CHUNKS));
  const chunks = Math.ceil(mPanels / per);
  c[PA] = pa;
  c[PB] = pb;
  c[PC] = pc;
  c[K] = k;
  c[M_PANELS] = mPanels;
  c[N_PANELS] = nPanels;
  c[LDC] = ldc;
  c[PER_CHUNK] = per;
  publishChunks(c, chunks);
  for (let i = claimChunk(c); i >= 0; i = claimChunk(c)) {
    const first = i * per;
    t.gemm(pa + first * k * 32, pb, pc + first * 4 * ldc * 8, k, Math.min(per, mPanels - first), nPanels, ldc);
    chunkDone(c, chunks);
  }
  if (!waitForChunks(c, chunks)) t.gemm(pa, pb, pc, k, mPanels, nPanels, ldc);
}
