/**
 * The WebAssembly SIMD matmul core: the packed f64 panels of `matmul-f64.ts`, multiplied by the
 * AssemblyScript kernel `wasm/gemm.ts` (built from source by the `wasm` Nx target and embedded as
 * base64, so nothing is fetched), with JavaScript packing the operands and rounding the results.
 *
 * @remarks
 * **Same bits.** The kernel adds `a[i,p]·b[p,j]` in increasing `p` in f64, exactly as
 * {@link matmulF64}; the unit tests hold the two to bit equality.
 * **Availability.** Compiled once, synchronously, on first use. Where WebAssembly or its SIMD
 * proposal is missing, where a Content-Security-Policy refuses compilation (`'wasm-unsafe-eval'`),
 * or where a product would need more than {@link WASM_GEMM_MAX_BYTES}, matmul runs in JavaScript.
 * **Threads.** Products of at least `THREADED_MATMUL_MIN_WORK` multiply-adds per batch run on the
 * shared-memory build of the same kernel across cores where threads are on (`matmul-threads.ts`:
 * Node, more than 2 cores or `WEFT_CPU_THREADS`); the same tiles, so the same bits.
 * **Bounded.** The module's memory is replaced by a larger one (`WasmArena`, never grown: a grown
 * memory detaches its old buffer, which slows every typed-array access in the process) as the
 * products grow, and never beyond {@link WASM_GEMM_MAX_BYTES}.
 *
 * @module
 */
import { GEMM_WASM_BASE64 } from "../wasm/gemm.generated.js";
import { MC, MR, NR, packA, packB, type MatmulArgs } from "./matmul-f64.js";
import { ERF_TABLE, GELU_TAIL, gelu } from "../numerics/special.js";
import { WasmArena, type WasmSupport } from "./wasm-module.js";
import { THREADED_MATMUL_MIN_WORK, cpuThreads, gemmOnThreads, threadedGemm } from "./matmul-threads.js";

/** Most bytes of WebAssembly memory the matmul core may hold (packed `B`, one `A` block, one `C` block). */
export const WASM_GEMM_MAX_BYTES = 256 * 1024 * 1024;

interface GemmExports {
  readonly gemm: (pa: number, pb: number, pc: number, k: number, mPanels: number, nPanels: number, ldc: number) => void;
  readonly gemmRows: (pa: number, pb: number, pc: number, m2: number, n8: number, k: number) => void;
  readonly epilogueRows: (pc: number, pbias: number, pprod: number, psum: number, pact: number, ptable: number, m: number, n8: number, flags: number) => number;
}

/** The compiled module over its memory (replaced, never grown), or why there is none; `undefined` until first asked. */
let arena: WasmArena<GemmExports> | undefined;

function load(): WasmArena<GemmExports> {
  arena ??= new WasmArena<GemmExports>(GEMM_WASM_BASE64, "module compiled, f64x2 lanes", WASM_GEMM_MAX_BYTES);
  return arena;
}

/** Whether the WebAssembly SIMD matmul runs here (compiles the module on first call). */
export function wasmSupport(): WasmSupport {
  return load().support;
}

/**
 * A linear layer's epilogue run on the WebAssembly core right after a few-row product
 * (`wasm/gemm.ts` `epilogueRows`): `product`, `sum = product + bias` and `act = gelu(sum or
 * product)`, each rounded to f32 as the elementwise program of the same ops rounds it, so the bits
 * are that program's (`linear-epilogue.ts` says which programs qualify). Each stage is stored
 * where its array is set (dense `m × n` f32 from its base); at least one is.
 */
export interface RowsEpilogue {
  /** The bias row (`n` f32 from `biasBase`, unit stride), or `undefined` for no add. */
  bias: Float32Array | undefined;
  biasBase: number;
  /** Whether GELU follows (the add, or the product). */
  gelu: boolean;
  product: Float32Array | undefined;
  productBase: number;
  sum: Float32Array | undefined;
  sumBase: number;
  act: Float32Array | undefined;
  actBase: number;
}

/** Bytes of {@link ERF_TABLE} at the start of the module's memory (a multiple of 16). */
const TABLE_BYTES = ERF_TABLE.length * 8;
/** The memory buffer {@link ERF_TABLE} was last copied into (a replaced memory needs a new copy). */
let tableIn: ArrayBufferLike | undefined;

/**
 * Few-row products (a serving batch) on the WebAssembly core without packing: `A` and `B` are
 * copied as f32 (one `set` when the operand is one contiguous run, else an element loop), rows padded to an even count and
 * columns to a multiple of 8, and `gemmRows` promotes and accumulates in f64 in increasing `p`.
 * With `epilogue` (one batch only), `epilogueRows` computes the layer's stages from the product
 * and stores those the epilogue asks for; `args.c` is then not written.
 * Returns `false` (having done nothing) under the same conditions as {@link matmulWasm}, or when
 * an operand is not f32.
 */
export function matmulWasmRows(args: MatmulArgs, epilogue?: RowsEpilogue): boolean {
  const { a, b, c, m, n, k, lm, lk, rk, rn, batches, offsets, store } = args;
  if (!(a instanceof Float32Array) || !(b instanceof Float32Array)) return false;
  const m2 = m + (m & 1);
  const n8 = Math.ceil(n / 8) * 8;
  const aBytes = m2 * k * 4;
  const bBytes = k * n8 * 4;
  const cBytes = m2 * n8 * 8;
  // Behind B: the epilogue's bias row and its three f32 blocks.
  const eBytes = n8 * 4 + 3 * m2 * n8 * 4;
  if (TABLE_BYTES + cBytes + aBytes + bBytes + eBytes > WASM_GEMM_MAX_BYTES) return false;
  const held = load().ensure(TABLE_BYTES + cBytes + aBytes + bBytes + eBytes);
  if (held === undefined) return false;
  const { exports, buffer } = held;
  // Where everything lies in the memory is `rowsViews`' layout: the kernels get the views' offsets.
  const views = rowsViews(buffer, m2, k, n8);
  const { block, wa, wb } = views;
  if (m2 > m) wa.fill(0, m * k);
  let copiedFrom = -1;
  for (let q = 0; q < batches; q++) {
    const aBase = offsets[3 * q] as number;
    const bBase = offsets[3 * q + 1] as number;
    const cBase = offsets[3 * q + 2] as number;
    if (lk === 1 && lm === k) wa.set(aBase === 0 && a.length === m * k ? a : a.subarray(aBase, aBase + m * k));
    else copyRows(a, aBase, m, k, lm, lk, wa, k);
    if (bBase !== copiedFrom || q === 0) {
      if (rn === 1 && rk === n && n8 === n) wb.set(bBase === 0 && b.length === k * n ? b : b.subarray(bBase, bBase + k * n));
      else copyRows(b, bBase, k, n, rk, rn, wb, n8);
      copiedFrom = bBase;
    }
    exports.gemmRows(wa.byteOffset, wb.byteOffset, block.byteOffset, m2, n8, k);
    if (epilogue !== undefined) {
      runEpilogue(exports, buffer, views, epilogue, m, n);
    } else if (c instanceof Float32Array) {
      // A Float32Array store rounds to nearest even: the f32 converter's bits, without its call.
      for (let i = 0; i < m; i++) {
        const to = cBase + i * n;
        const from = i * n8;
        for (let j = 0; j < n; j++) c[to + j] = block[from + j] as number;
      }
    } else {
      for (let i = 0; i < m; i++) {
        const to = cBase + i * n;
        for (let j = 0; j < n; j++) c[to + j] = store(block[i * n8 + j] as number);
      }
    }
  }
  return true;
}

/** Runs `epilogue` over the product block of {@link matmulWasmRows} and copies what it stores out. */
function runEpilogue(exports: GemmExports, buffer: ArrayBufferLike, views: RowsViews, epilogue: RowsEpilogue, m: number, n: number): void {
  const { n8, bias: wbias } = views;
  if (tableIn !== buffer) {
    new Float64Array(buffer, 0, ERF_TABLE.length).set(ERF_TABLE);
    tableIn = buffer;
  }
  const { bias, biasBase, product, sum, act } = epilogue;
  if (bias !== undefined) for (let j = 0; j < n; j++) wbias[j] = bias[biasBase + j] as number;
  // Pad columns are computed and never copied out; zero keeps them finite.
  for (let j = n; j < n8; j++) wbias[j] = 0;
  const flags = (bias !== undefined ? 1 : 0) | (epilogue.gelu ? 2 : 0) | (product !== undefined ? 4 : 0) | (sum !== undefined ? 8 : 0) | (act !== undefined ? 16 : 0);
  const tails = exports.epilogueRows(views.block.byteOffset, wbias.byteOffset, views.product.byteOffset, views.sum.byteOffset, views.act.byteOffset, 0, m, n8, flags);
  if (tails > 0 && act !== undefined) geluTail(views, m, n, bias !== undefined);
  if (product !== undefined) copyOut(views.product, views, m, n, product, epilogue.productBase);
  if (sum !== undefined) copyOut(views.sum, views, m, n, sum, epilogue.sumBase);
  if (act !== undefined) copyOut(views.act, views, m, n, act, epilogue.actBase);
}

/**
 * Recomputes the activations whose GELU input lies below `GELU_TAIL`, which the WebAssembly
 * epilogue leaves (`wasm/gemm.ts`: `gelu` there needs `exp`): the input as the epilogue rounds it
 * (the product as f32, plus the bias in f64 as f32), and `gelu` in f64 stored as f32. Runs only
 * when some element is that far into the negative tail.
 */
function geluTail(views: RowsViews, m: number, n: number, withBias: boolean): void {
  const { block, bias, act, n8 } = views;
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      const e = i * n8 + j;
      const product = Math.fround(block[e] as number);
      const x = withBias ? Math.fround(product + (bias[j] as number)) : product;
      if (x < GELU_TAIL) act[e] = gelu(x);
    }
  }
}

/** Copies the first `m × n` of the `m2 × n8` block `from` into `to` (dense, from `base`). */
function copyOut(from: Float32Array, views: RowsViews, m: number, n: number, to: Float32Array, base: number): void {
  const n8 = views.n8;
  if (n8 === n && views.m2 === m) {
    to.set(from, base);
    return;
  }
  for (let i = 0; i < m; i++) {
    const t = base + i * n;
    const f = i * n8;
    for (let j = 0; j < n; j++) to[t + j] = from[f + j] as number;
  }
}

/** The views {@link matmulWasmRows} works in over one memory buffer, for one product size. */
interface RowsViews {
  readonly buffer: ArrayBufferLike;
  readonly m2: number;
  readonly k: number;
  readonly n8: number;
  readonly block: Float64Array;
  readonly wa: Float32Array;
  readonly wb: Float32Array;
  /** The epilogue's bias row (`n8` f32) and its product, sum and activation blocks (`m2 × n8` f32 each), behind `wb`. */
  readonly bias: Float32Array;
  readonly product: Float32Array;
  readonly sum: Float32Array;
  readonly act: Float32Array;
}

/** Most product sizes whose views {@link rowsViews} keeps (a serving MLP has three layers). */
const ROWS_VIEWS = 4;
/** Views by product size, for the module's current buffer; at most {@link ROWS_VIEWS}, the oldest replaced first. */
const keptViews: RowsViews[] = [];
let nextKept = 0;

/**
 * `C` (`m2 × n8` f64), then `A` (`m2 × k` f32), `B` (`k × n8` f32), the epilogue's bias (`n8`
 * f32) and its three blocks (`m2 × n8` f32 each) over `buffer`, after the erf table: kept per product size, so a
 * layer launched every request makes no views (a grown memory has a new buffer: views of the old
 * one are never reused).
 */
function rowsViews(buffer: ArrayBufferLike, m2: number, k: number, n8: number): RowsViews {
  for (const v of keptViews) if (v.buffer === buffer && v.m2 === m2 && v.k === k && v.n8 === n8) return v;
  const cAt = TABLE_BYTES;
  const aAt = cAt + m2 * n8 * 8;
  const bAt = aAt + m2 * k * 4;
  const biasAt = bAt + k * n8 * 4;
  const made: RowsViews = {
    buffer,
    m2,
    k,
    n8,
    block: new Float64Array(buffer, cAt, m2 * n8),
    wa: new Float32Array(buffer, aAt, m2 * k),
    wb: new Float32Array(buffer, bAt, k * n8),
    bias: new Float32Array(buffer, biasAt, n8),
    product: new Float32Array(buffer, biasAt + n8 * 4, m2 * n8),
    sum: new Float32Array(buffer, biasAt + n8 * 4 + m2 * n8 * 4, m2 * n8),
    act: new Float32Array(buffer, biasAt + n8 * 4 + 2 * m2 * n8 * 4, m2 * n8),
  };
  keptViews[nextKept] = made;
  nextKept = (nextKept + 1) % ROWS_VIEWS;
  return made;
}

/**
 * Copies a `rows × cols` f32 view (row stride `rs`, column stride `cs`, from `base`) into `out`
 * with row pitch `pitch`, zero-padding each row to `pitch`. An element loop, not a `subarray` +
 * `set` per row: a serving product's rows are 10 to 128 elements, where making a view per row
 * cost more than the copy (and was garbage per launch).
 */
function copyRows(src: Float32Array, base: number, rows: number, cols: number, rs: number, cs: number, out: Float32Array, pitch: number): void {
  for (let r = 0; r < rows; r++) {
    const from = base + r * rs;
    const to = r * pitch;
    if (cs === 1) for (let j = 0; j < cols; j++) out[to + j] = src[from + j] as number;
    else for (let j = 0; j < cols; j++) out[to + j] = src[from + j * cs] as number;
    for (let j = cols; j < pitch; j++) out[to + j] = 0; // a few pad columns: no builtin call per row
  }
}

/**
 * Runs `args` on the WebAssembly core; returns `false` (having done nothing) when the core is
 * unavailable or the product needs more than {@link WASM_GEMM_MAX_BYTES}: the caller then runs
 * {@link matmulF64}.
 */
export function matmulWasm(args: MatmulArgs): boolean {
  if (!load().support.available) return false;
  const { a, b, c, m, n, k, lm, lk, rk, rn, batches, offsets, store } = args;
  const panels = Math.ceil(n / NR);
  const ldc = panels * NR;
  const rowsPerBlock = Math.min(MC, Math.ceil(m / MR) * MR);
  const bBytes = panels * NR * k * 8;
  const aBytes = rowsPerBlock * k * 8;
  const cBytes = rowsPerBlock * ldc * 8;
  const threaded = m * n * k >= THREADED_MATMUL_MIN_WORK && cpuThreads() > 1 ? threadedGemm() : null;
  // This thread's memory keeps the erf table of the rows path's epilogue first: the blocks go behind it.
  const base = threaded === null ? TABLE_BYTES : 0;
  const need = base + bBytes + aBytes + cBytes;
  if (need > WASM_GEMM_MAX_BYTES) return false;
  // The memory the blocks are packed into, and the core that multiplies them: this thread's
  // module, or the worker threads over their shared memory.
  let buffer: ArrayBufferLike;
  let gemm: GemmExports["gemm"];
  if (threaded === null) {
    const held = load().ensure(need);
    if (held === undefined) return false;
    buffer = held.buffer;
    gemm = held.exports.gemm;
  } else {
    const memory = threaded.memory;
    if (memory.buffer.byteLength < need) memory.grow(Math.ceil((need - memory.buffer.byteLength) / 65536));
    buffer = memory.buffer;
    gemm = (pa, pb, pc, depth, mPanels, nPanels, pitch) => gemmOnThreads(threaded, pa, pb, pc, depth, mPanels, nPanels, pitch);
  }
  const packedB = new Float64Array(buffer, base, bBytes / 8);
  const packedA = new Float64Array(buffer, base + bBytes, aBytes / 8);
  const block = new Float64Array(buffer, base + bBytes + aBytes, cBytes / 8);
  let packedFrom = -1;
  for (let q = 0; q < batches; q++) {
    const aBase = offsets[3 * q] as number;
    const bBase = offsets[3 * q + 1] as number;
    const cBase = offsets[3 * q + 2] as number;
    if (bBase !== packedFrom || q === 0) {
      packB(b, bBase, k, n, rk, rn, packedB);
      packedFrom = bBase;
    }
    for (let i0 = 0; i0 < m; i0 += MC) {
      const rows = Math.min(MC, m - i0);
      packA(a, aBase, i0, rows, k, lm, lk, packedA);
      gemm(base + bBytes, base, base + bBytes + aBytes, k, Math.ceil(rows / MR), panels, ldc);
      for (let i = 0; i < rows; i++) {
        const from = i * ldc;
        const to = cBase + (i0 + i) * n;
        for (let j = 0; j < n; j++) c[to + j] = store(block[from + j] as number);
      }
    }
  }
  return true;
}
