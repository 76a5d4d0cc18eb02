/**
 * The WebAssembly SIMD reductions: f32 `sum` (and `mean`), `max` and `min` over a contiguous run,
 * on the AssemblyScript kernels of `wasm/reduce.ts` (built from source by the `wasm` Nx target and
 * embedded as base64). JavaScript copies the run into the module's memory one block at a time
 * (a `set`, i.e. a memory copy, of at most {@link SUM_BLOCK} f32 that stays in cache) and the
 * module reduces it.
 *
 * @remarks
 * **Same bits.** `sum` keeps the documented order of {@link sumF64} (per block of `SUM_BLOCK`,
 * lane `j mod 8`, lanes combined pairwise, blocks in order): each block's partial comes from the
 * module, the partials add up here in block order. `max`/`min` do not depend on the order (NaN
 * wins, +0 above -0). The unit tests hold both paths to bit equality.
 * **When.** f32 runs of at least {@link WASM_REDUCE_MIN} elements with unit stride; shorter or
 * strided runs, other dtypes, and engines without WebAssembly SIMD (or where a
 * Content-Security-Policy refuses it) run the JavaScript loops. Why WebAssembly: its speed does
 * not depend on the JIT's type feedback (the JavaScript sum ran 2 ms or 4.6 ms on the same 2^22
 * elements depending on what V8 had seen before).
 * **Bounded.** The module's memory is one block ({@link SUM_BLOCK} f32, 256 KiB) and never grows
 * beyond it.
 *
 * @module
 */
import type { TypedArray } from "@weft/fusion";
import { REDUCE_WASM_BASE64 } from "../wasm/reduce.generated.js";
import { WasmArena, type WasmSupport } from "./wasm-module.js";

/**
 * Elements per block of `sum`/`mean` (2^16): a block's 8 lanes are combined into one partial, and
 * partials are added in block order. Fixed, so the result never depends on how the work is split.
 */
export const SUM_BLOCK = 1 << 16;

/** Shortest run the WebAssembly reductions take (below it the call and copy cost more than they save). */
export const WASM_REDUCE_MIN = 256;

interface ReduceExports {
  readonly sumBlock: (ptr: number, count: number) => number;
  readonly maxBlock: (ptr: number, count: number) => number;
  readonly minBlock: (ptr: number, count: number) => number;
}

/** The compiled module, its exports and its one-block staging view, or why there are none. */
interface LoadedReduce {
  readonly support: WasmSupport;
  readonly exports: ReduceExports | undefined;
  readonly staging: Float32Array | undefined;
}

/** `undefined` until first asked. */
let loaded: LoadedReduce | undefined;

function load(): LoadedReduce {
  if (loaded === undefined) {
    // One block of memory, made once (`WasmArena`: never grown, so no buffer is ever detached).
    const arena = new WasmArena<ReduceExports>(REDUCE_WASM_BASE64, "module compiled, f64x2 lanes");
    const held = arena.ensure(SUM_BLOCK * 4);
    loaded = {
      support: held === undefined && arena.support.available ? { available: false, reason: "no memory for the WebAssembly reductions" } : arena.support,
      exports: held?.exports,
      staging: held === undefined ? undefined : new Float32Array(held.buffer, 0, SUM_BLOCK),
    };
  }
  return loaded;
}

/** Whether the WebAssembly SIMD reductions run here (compiles the module on first call). */
export function wasmReduceSupport(): WasmSupport {
  return load().support;
}

/**
 * The f64 sum of `count` contiguous f32 of `src` from `base`, in the order of {@link sumF64}, or
 * `undefined` (having done nothing) where the module does not run.
 */
export function sumWasm(src: Float32Array, base: number, count: number): number | undefined {
  const { exports, staging } = load();
  if (exports === undefined || staging === undefined) return undefined;
  let total = 0;
  for (let block = 0; block < count; block += SUM_BLOCK) {
    const n = Math.min(SUM_BLOCK, count - block);
    staging.set(src.subarray(base + block, base + block + n));
    total += exports.sumBlock(0, n);
  }
  return total;
}

/**
 * The maximum (`isMax`) or minimum of `count ≥ 1` contiguous f32 of `src` from `base` (NaN if any
 * is NaN; +0 above -0), or `undefined` (having done nothing) where the module does not run.
 */
export function extremeWasm(src: Float32Array, base: number, count: number, isMax: boolean): number | undefined {
  const { exports, staging } = load();
  if (exports === undefined || staging === undefined) return undefined;
  const reduce = isMax ? exports.maxBlock : exports.minBlock;
  let acc = Number.NaN;
  for (let block = 0; block < count; block += SUM_BLOCK) {
    const n = Math.min(SUM_BLOCK, count - block);
    staging.set(src.subarray(base + block, base + block + n));
    const m = reduce(0, n);
    if (block === 0 || m !== m) acc = m;
    else if (isMax ? m > acc : m < acc) acc = m;
    else if (m === 0 && acc === 0) acc = isMax ? Math.max(acc, m) : Math.min(acc, m);
    if (acc !== acc) return acc;
  }
  return acc;
}

/** Whether a run of `src` qualifies for the WebAssembly reductions (see the module's remarks). */
export function wasmReduces(src: TypedArray | Float64Array, count: number, step: number): src is Float32Array {
  return step === 1 && count >= WASM_REDUCE_MIN && src instanceof Float32Array;
}
