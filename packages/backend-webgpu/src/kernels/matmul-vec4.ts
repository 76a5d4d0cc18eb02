import { UnsupportedError, invariant } from "@weft/environment";
import type { DType } from "@weft/fusion";
import type { WgslBuilder } from "../codegen/wgsl/builder.js";
import type { StridedLayout } from "../codegen/wgsl/indexing.js";
import { convert } from "../codegen/wgsl/ops.js";
import { literal, storageElement, wgslScalar } from "../codegen/wgsl/types.js";

/**
 * The high-throughput matmul configuration (`kind: "vec4"`): a `wx × wy` workgroup computes a
 * `(wy·rm) × (wx·rn)` output tile in `tk`-deep K steps; `rm`, `rn` and `tk` are multiples of 4.
 *
 * @remarks
 * **Why.** The `register` kernel stages operands with scalar global loads and scalar
 * workgroup-memory stores; on a desktop GPU its loads, not its FMAs, bound it (≈ 3 TFLOP/s on an
 * H200). This kernel is built the way fast WGSL matmuls are (TF.js's `MatMulPackedVec4Program`,
 * the "1 TFLOP in the browser" designs), with two more steps:
 * - **vec4 global loads** along each operand's contiguous dimension (K of a row-major lhs, N of a
 *   row-major rhs; M / K for transposed views), see {@link Vec4Access};
 * - **workgroup memory K-major** (`ta[k][m/4]`, `tb[k][n/4]` as `vec4`s), so per `k` an invocation
 *   reads `rm/4 + rn/4` `vec4`s and issues `rm·rn/4` vec4 FMAs (an outer product: 4 FMAs per
 *   workgroup-memory load with an 8×8 block);
 * - **register prefetch**: the next K step's global loads are issued before the current step's
 *   FMAs, so their latency hides behind arithmetic with a single workgroup-memory buffer
 *   (double buffering in workgroup memory would not fit the 16 KiB minimum with 128×128 tiles);
 * - **no bounds checks** for a dimension the tile divides (shapes are baked in): 2048² and
 *   4096² products compile to straight-line loads; an edge dimension reads zero outside the
 *   operand (padded loads).
 * **Ownership.** Invocation `(tx, ty)` owns rows `4·(p·wy + ty) + i` and columns
 * `4·(q·wx + tx) + j` (`p < rm/4`, `q < rn/4`, `i, j < 4`): neighbouring invocations read
 * neighbouring `vec4`s of workgroup memory (no bank conflicts), and the rows of a warp are
 * broadcast reads.
 * **Bounds.** Per invocation one K loop of at most 65,534 iterations (Mesa's GLES silently stops a
 * loop at 65,535, counted across enclosing loops): `ceil(K / tk)` steps, or for a longer K
 * `u = ceil(steps / 65,534)` steps unrolled per iteration. Every other loop is unrolled.
 */
export interface Vec4Config {
  readonly kind: "vec4";
  readonly wx: number;
  readonly wy: number;
  readonly rm: number;
  readonly rn: number;
  readonly tk: number;
  /**
   * Split-K: `splitK` workgroups share each output tile, each summing a contiguous share of the K
   * steps into a partial product; a second kernel adds the partials in split order and applies
   * the epilogue (`matmulCombineKernel`). For products whose tiles alone cannot fill a large GPU
   * (1024² with 128×128 tiles is 64 workgroups for 132 SMs). Absent or 1: no split.
   */
  readonly splitK?: number;
}

/**
 * How the vec4 kernel reads one operand from global memory, in terms of its K axis and its "x"
 * axis (M for the lhs, N for the rhs — the axis its workgroup-memory `vec4`s run along).
 * - `x`: `vec4` loads along x (x is contiguous: a row-major rhs, a transposed lhs), stored to
 *   workgroup memory as they are.
 * - `k`: `vec4` loads along K (K is contiguous: a row-major lhs, a transposed rhs), transposed into
 *   workgroup memory with four scalar stores.
 * - `scalar-x` / `scalar-k`: the same walk with four scalar loads (the operand is not 16-byte
 *   aligned along that axis: an odd K, N or offset, or a strided view); correctness first.
 */
export type Vec4Access = "x" | "k" | "scalar-x" | "scalar-k";

/** One operand as {@link Vec4Access} sees it: strides and extents along K and x. */
interface OperandAxes {
  /** Element stride along K and along x (0 for an axis of extent 1). */
  readonly strideK: number;
  readonly strideX: number;
  readonly K: number;
  readonly X: number;
  /** Batch strides broadcast to the output's batch shape, and the element offset. */
  readonly batchStrides: readonly number[];
  readonly offset: number;
}

/**
 * The access of an operand: `vec4` along its contiguous axis when every address a `vec4` covers
 * is 16-byte aligned (the contiguous extent, every other stride and the offset are multiples of
 * 4), else scalar loads walking the axis with the smaller stride.
 */
export function vec4Access(axes: OperandAxes): Vec4Access {
  const aligned = (n: number): boolean => n % 4 === 0;
  const rest = (other: number): boolean => aligned(other) && axes.batchStrides.every(aligned) && aligned(axes.offset);
  if (axes.strideX === 1 && aligned(axes.X) && rest(axes.strideK)) return "x";
  if (axes.strideK === 1 && aligned(axes.K) && rest(axes.strideX)) return "k";
  return axes.strideK !== 0 && (axes.strideX === 0 || axes.strideK < axes.strideX) ? "scalar-k" : "scalar-x";
}

/** The K/x axes of the lhs (`x` = M) or the rhs (`x` = N) of a product. */
export function operandAxes(layout: StridedLayout, which: "lhs" | "rhs", batchStrides: readonly number[]): OperandAxes {
  const r = layout.shape.length;
  const rows = layout.shape[r - 2] ?? 1;
  const cols = layout.shape[r - 1] ?? 1;
  const sr = rows === 1 ? 0 : (layout.strides[r - 2] ?? 0);
  const sc = cols === 1 ? 0 : (layout.strides[r - 1] ?? 0);
  return which === "lhs"
    ? { strideK: sc, strideX: sr, K: cols, X: rows, batchStrides, offset: layout.offset }
    : { strideK: sr, strideX: sc, K: rows, X: cols, batchStrides, offset: layout.offset };
}

/** Whether an access loads `vec4`s (the binding is then declared `array<vec4<T>>`). */
export const isVectorAccess = (a: Vec4Access): boolean => a === "x" || a === "k";

/** Everything {@link emitVec4Tiled} needs from `matmulKernel`. */
export interface Vec4Context {
  readonly M: number;
  readonly N: number;
  readonly K: number;
  /** Storage dtype of both operands, and the accumulator dtype (f32 for f16). */
  readonly dtype: DType;
  readonly acc: DType;
  readonly lhs: OperandAxes;
  readonly rhs: OperandAxes;
  /** Writes the epilogue of output element (`row`, `col`) whose product is `value`. */
  readonly store: (h: WgslBuilder, row: string, col: string, value: string, checked: boolean) => void;
  /**
   * Split-K: the K steps this workgroup runs are `[kt0, kt1)` (WGSL names the caller defines before
   * the body; a non-empty share), instead of all `ceil(K / tk)`.
   */
  readonly split?: boolean;
}

/** The most iterations one loop of a kernel runs per invocation (Mesa's GLES silently stops at 65,535). */
const MAX_LOOP_ITERATIONS = 65_534;

/**
 * The workgroup-memory declarations of a vec4 config: `ta` (`tk` rows of `tm/4` `vec4`s) and `tb`
 * (`tk` rows of `tn/4`).
 */
export function vec4Shared(cfg: Vec4Config, acc: DType): string[] {
  if (acc === "bool") throw new UnsupportedError(`bool matmul in config vec4`, "multiply numeric tensors (cast bool to i32 or f32 first)");
  const v4 = `vec4<${wgslScalar(acc)}>`;
  return [`var<workgroup> ta: array<${v4}, ${(cfg.tk * cfg.wy * cfg.rm) / 4}>;`, `var<workgroup> tb: array<${v4}, ${(cfg.tk * cfg.wx * cfg.rn) / 4}>;`];
}

/**
 * The storage element of an operand binding under `access` (a `vec4` for vector accesses).
 */
export function vec4OperandElement(dtype: DType, access: Vec4Access): string {
  return storageElement(dtype, isVectorAccess(access) ? 4 : 1);
}

/**
 * The body of a vec4 config after `batch`, `aBase` and `bBase` (element offsets of the batch's
 * operands) are defined: prologue load, the K loop (stage → barrier → prefetch → FMAs → barrier),
 * and the epilogue stores. See {@link Vec4Config}.
 */
export function emitVec4Tiled(b: WgslBuilder, cfg: Vec4Config, c: Vec4Context): void {
  const { M, N, K, acc } = c;
  const { wx, wy, rm, rn, tk } = cfg;
  invariant(rm % 4 === 0 && rn % 4 === 0 && tk % 4 === 0, () => `vec4 config ${rm}x${rn}k${tk} has a block size that is not a multiple of 4`);
  const tm = wy * rm;
  const tn = wx * rn;
  const threads = wx * wy;
  const steps = Math.ceil(K / tk);
  const v4 = `vec4<${wgslScalar(acc)}>`;
  const zero4 = literal(0, { dtype: acc, width: 4 });
  const float = acc === "f32" || acc === "f16";
  const pm = rm / 4;
  const qn = rn / 4;
  const edgeM = M % tm !== 0;
  const edgeN = N % tn !== 0;
  const edgeK = K % tk !== 0;

  b.line("let tx = lid3.x;", "let ty = lid3.y;", `let rowBase = wid.y * ${tm}u;`, `let colBase = wid.x * ${tn}u;`);
  const operands = [
    { p: "a", buffer: "lhs", smem: "ta", base: "aBase", xBase: "rowBase", TX: tm, edgeX: edgeM, axes: c.lhs, access: vec4Access(c.lhs) },
    { p: "b", buffer: "rhs", smem: "tb", base: "bBase", xBase: "colBase", TX: tn, edgeX: edgeN, axes: c.rhs, access: vec4Access(c.rhs) },
  ] as const;
  type Operand = (typeof operands)[number];
  const chunksOf = (o: Operand): number => (tk * o.TX) / 4;
  const itersOf = (o: Operand): number => Math.ceil(chunksOf(o) / threads);
  const along = (o: Operand): "x" | "k" => (o.access === "x" || o.access === "scalar-x" ? "x" : "k");

  // Per-invocation constants: each staged chunk's tile coordinates (`<p>k<s>`, `<p>x<s>`: the
  // chunk's first element) and whether the invocation has a chunk in the last round.
  for (const o of operands) {
    if (isVectorAccess(o.access)) b.line(`let ${o.base}4 = ${o.base} / 4u;`);
    for (let s = 0; s < itersOf(o); s++) {
      b.line(`let ${o.p}c${s} = ${s * threads}u + lid;`);
      if (along(o) === "x") b.line(`let ${o.p}k${s} = ${o.p}c${s} / ${o.TX / 4}u;`, `let ${o.p}x${s} = (${o.p}c${s} % ${o.TX / 4}u) * 4u;`);
      else b.line(`let ${o.p}x${s} = ${o.p}c${s} / ${tk / 4}u;`, `let ${o.p}k${s} = (${o.p}c${s} % ${tk / 4}u) * 4u;`);
      b.line(`var ${o.p}r${s}: ${v4};`);
    }
  }
  for (let r = 0; r < rm; r++) for (let q = 0; q < qn; q++) b.line(`var acc${r}_${q}: ${v4};`);

  /** Whether chunk `s` of `o` exists (the last round may be partial). */
  const partial = (o: Operand, s: number): boolean => s === itersOf(o) - 1 && chunksOf(o) % threads !== 0;

  /** Loads K step `t` of operand `o` into its prefetch registers. */
  const prefetch = (h: WgslBuilder, o: Operand, t: string): void => {
    const { strideK, strideX, K: ext, X } = o.axes;
    for (let s = 0; s < itersOf(o); s++) {
      const body = (l: WgslBuilder): void => {
        l.line(`let gk = ${t} * ${tk}u + ${o.p}k${s};`, `let gx = ${o.xBase} + ${o.p}x${s};`);
        const inK = (off: number): string => (edgeK ? `gk${off === 0 ? "" : ` + ${off}u`} < ${ext}u` : "");
        const inX = (off: number): string => (o.edgeX ? `gx${off === 0 ? "" : ` + ${off}u`} < ${X}u` : "");
        const guard = (conds: string[]): string => conds.filter((x) => x !== "").join(" && ");
        if (isVectorAccess(o.access)) {
          // The 4 elements are in or out together: the vector axis's extent is a multiple of 4.
          const index = o.access === "x" ? `${o.base}4 + gk * ${strideK / 4}u + gx / 4u` : `${o.base}4 + gx * ${strideX / 4}u + gk / 4u`;
          const value = convert(`${o.buffer}[${index}]`, { dtype: c.dtype, width: 4 }, { dtype: acc, width: 4 });
          const cond = guard([inK(0), inX(0)]);
          if (cond === "") l.line(`${o.p}r${s} = ${value};`);
          else l.line(`${o.p}r${s} = ${zero4};`, `if (${cond}) { ${o.p}r${s} = ${value}; }`);
        } else {
          l.line(`${o.p}r${s} = ${zero4};`);
          const xs = o.access === "scalar-x";
          for (let j = 0; j < 4; j++) {
            const [dk, dx] = xs ? [0, j] : [j, 0];
            const at = `${o.base} + (gk${dk === 0 ? "" : ` + ${dk}u`}) * ${strideK}u + (gx${dx === 0 ? "" : ` + ${dx}u`}) * ${strideX}u`;
            const value = convert(`${o.buffer}[${at}]`, { dtype: c.dtype, width: 1 }, { dtype: acc, width: 1 });
            // Scalar accesses check every element on an edge: the walked axis need not be a multiple of 4.
            const cond = guard([inK(dk), inX(dx)]);
            const assign = `${o.p}r${s}[${j}] = ${value};`;
            l.line(cond === "" ? assign : `if (${cond}) { ${assign} }`);
          }
        }
      };
      if (partial(o, s)) h.block(`if (${o.p}c${s} < ${chunksOf(o)}u)`, body);
      else h.block("", body);
    }
  };

  /** Writes operand `o`'s prefetch registers to its workgroup-memory tile (`[k][x/4]` vec4s). */
  const stage = (h: WgslBuilder, o: Operand): void => {
    const row = o.TX / 4;
    for (let s = 0; s < itersOf(o); s++) {
      const body = (l: WgslBuilder): void => {
        if (along(o) === "x") l.line(`${o.smem}[${o.p}k${s} * ${row}u + ${o.p}x${s} / 4u] = ${o.p}r${s};`);
        else {
          // Four K rows of one x: a transpose into K-major workgroup memory.
          l.line(`let i = ${o.p}k${s} * ${row}u + ${o.p}x${s} / 4u;`, `let lane = ${o.p}x${s} % 4u;`);
          for (let j = 0; j < 4; j++) l.line(`${o.smem}[i + ${j * row}u][lane] = ${o.p}r${s}.${"xyzw"[j]};`);
        }
      };
      if (partial(o, s)) h.block(`if (${o.p}c${s} < ${chunksOf(o)}u)`, body);
      else h.block("", body);
    }
  };

  /** The FMAs of one K step: `tk` unrolled rank-1 updates of the register block. */
  const compute = (h: WgslBuilder): void => {
    for (let kk = 0; kk < tk; kk++) {
      h.block("", (f) => {
        for (let p = 0; p < pm; p++) f.line(`let a${p} = ta[${(kk * tm) / 4 + p * wy}u + ty];`);
        for (let q = 0; q < qn; q++) f.line(`let b${q} = tb[${(kk * tn) / 4 + q * wx}u + tx];`);
        for (let p = 0; p < pm; p++) {
          for (let i = 0; i < 4; i++) {
            const r = p * 4 + i;
            const a = `${v4}(a${p}.${"xyzw"[i]})`;
            for (let q = 0; q < qn; q++) f.line(float ? `acc${r}_${q} = fma(${a}, b${q}, acc${r}_${q});` : `acc${r}_${q} = acc${r}_${q} + ${a} * b${q};`);
          }
        }
      });
    }
  };

  if (c.split === true && steps > 0) {
    // One share of the K steps, bounds from the split index (uniform per workgroup, so the
    // barriers stay in uniform control flow); a share is far below Mesa's loop cap (see matmulKernel).
    for (const o of operands) prefetch(b, o, "kt0");
    b.block("for (var t = kt0; t < kt1; t = t + 1u)", (l) => {
      for (const o of operands) stage(l, o);
      l.line("workgroupBarrier();");
      l.block("if (t + 1u < kt1)", (f) => operands.forEach((o) => prefetch(f, o, "(t + 1u)")));
      compute(l);
      l.line("workgroupBarrier();");
    });
  } else if (steps > 0) {
    for (const o of operands) prefetch(b, o, "0u");
    const step = (l: WgslBuilder): void => {
      for (const o of operands) stage(l, o);
      l.line("workgroupBarrier();");
      if (steps > 1) l.block(`if (t + 1u < ${steps}u)`, (f) => operands.forEach((o) => prefetch(f, o, "(t + 1u)")));
      compute(l);
      l.line("workgroupBarrier();");
    };
    // Mesa's cap counts a loop's iterations per invocation across an enclosing loop too (a nest
    // does not help), so a longer K runs `unroll` steps per iteration instead.
    const unroll = Math.ceil(steps / MAX_LOOP_ITERATIONS);
    if (unroll === 1) b.block(`for (var t = 0u; t < ${steps}u; t = t + 1u)`, step);
    else {
      b.block(`for (var tu = 0u; tu < ${Math.ceil(steps / unroll)}u; tu = tu + 1u)`, (l) => {
        for (let j = 0; j < unroll; j++) {
          l.block("", (u) => {
            u.line(`let t = tu * ${unroll}u + ${j}u;`);
            if (j > 0 && steps % unroll !== 0) u.block(`if (t < ${steps}u)`, step);
            else step(u);
          });
        }
      });
    }
  }

  for (let p = 0; p < pm; p++) {
    for (let i = 0; i < 4; i++) {
      const r = p * 4 + i;
      for (let q = 0; q < qn; q++) {
        for (let j = 0; j < 4; j++) {
          b.block("", (h) => {
            h.line(`let row = rowBase + ${4 * p * wy + i}u + ty * 4u;`, `let col = colBase + ${4 * q * wx + j}u + tx * 4u;`);
            c.store(h, "row", "col", `acc${r}_${q}.${"xyzw"[j]}`, edgeM || edgeN);
          });
        }
      }
    }
  }
}
