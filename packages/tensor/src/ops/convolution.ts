/**
 * Convolutions and pools over NCHW tensors (`conv1d`, `conv2d`, `maxPool2d`, `avgPool2d`), on the
 * device: the input is padded once, each kernel offset is one strided `slice` (im2col), and the
 * window is then contracted with the weights by one batched `matmul` (convolutions) or reduced
 * by `max`/`sum` (pools). Every step is an op the backends already run, so there is no host
 * round trip and no size limit.
 *
 * @remarks
 * **Rules** (PyTorch's, `docs/semantics.md` "Issue 7's ops"):
 * - `conv2d(x [N, C, H, W] or [C, H, W], w [O, C / groups, KH, KW], { bias [O], stride,
 *   padding, dilation, groups })`: zero padding; `padding` is a number, a pair, `"valid"` (0)
 *   or `"same"` (stride 1 only; an odd total pad puts the extra row/column after, as PyTorch);
 *   output `⌊(H + 2p − d·(KH − 1) − 1) / s⌋ + 1`. `conv1d` is `conv2d` with `H = 1`.
 * - `maxPool2d(x, kernel, { stride = kernel, padding = 0, dilation = 1 })`: padding never wins
 *   (it is −Inf, or the integer minimum); `padding ≤ kernel / 2`; NaN in a window gives NaN.
 * - `avgPool2d(x, kernel, { stride = kernel, padding = 0, countIncludePad = true })`: the sum
 *   over the window divided by the kernel area, padding counted as zeros (PyTorch's default);
 *   `countIncludePad: false` divides by the number of input elements in the window.
 * Integer inputs compute in `f32` (as `matmul`), except `maxPool2d`, which keeps the dtype.
 * **Cost.** The im2col tensor holds `KH · KW` copies of the input; a direct kernel is issue 7's
 * remaining work.
 *
 * @module
 */
import { checkBoolean, checkInteger, checkOptions, describeValue } from "@weft/environment";
import { FullOpIr } from "@weft/fusion";
import { floatTypeFor, integerRange, isFloat } from "../dtype/dtype.js";
import { DTypeError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands, output, register } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { tidy } from "../lifetime/lifetime.js";
import { binary } from "./elementwise.js";
import { concat, pad, reshapeUnchecked, slice, type SliceSpec } from "./layout.js";
import { matmul } from "./matmul.js";
import { reduce } from "./reduce.js";

/** A size per spatial dim: one number for all, or one per dim. */
export type Size2 = number | readonly [number, number];

/** Options of {@link conv2d}. */
export interface Conv2dOptions {
  /** Added per output channel, shape `[O]`. */
  readonly bias?: Tensor;
  /** Step between windows (default 1). */
  readonly stride?: Size2;
  /** Zero padding per side (default 0), or `"valid"` (none) / `"same"` (stride 1: output size = input size). */
  readonly padding?: Size2 | "valid" | "same";
  /** Spacing between kernel taps (default 1). */
  readonly dilation?: Size2;
  /** Channel groups: `C` and `O` must both be multiples (default 1). */
  readonly groups?: number;
}

/** Options of {@link conv1d}: as {@link Conv2dOptions}, with one number per option. */
export interface Conv1dOptions {
  /** Added per output channel, shape `[O]`. */
  readonly bias?: Tensor;
  /** Step between windows (default 1). */
  readonly stride?: number;
  /** Zero padding per side (default 0), `"valid"` or `"same"`. */
  readonly padding?: number | "valid" | "same";
  /** Spacing between kernel taps (default 1). */
  readonly dilation?: number;
  /** Channel groups (default 1). */
  readonly groups?: number;
}

/** Options of {@link maxPool2d}. */
export interface MaxPool2dOptions {
  /** Step between windows (default: the kernel size). */
  readonly stride?: Size2;
  /** Padding per side (default 0; at most half the kernel). */
  readonly padding?: Size2;
  /** Spacing between window taps (default 1). */
  readonly dilation?: Size2;
}

/** Options of {@link avgPool2d}. */
export interface AvgPool2dOptions {
  /** Step between windows (default: the kernel size). */
  readonly stride?: Size2;
  /** Zero padding per side (default 0; at most half the kernel). */
  readonly padding?: Size2;
  /** Whether padded zeros count in the divisor (default `true`, as PyTorch). */
  readonly countIncludePad?: boolean;
}

function pair(op: string, name: string, v: unknown, min: number): [number, number] {
  if (typeof v === "number") {
    checkInteger(op, name, v, min);
    return [v, v];
  }
  if (Array.isArray(v) && v.length === 2) {
    checkInteger(op, `${name}[0]`, v[0], min);
    checkInteger(op, `${name}[1]`, v[1], min);
    return [v[0] as number, v[1] as number];
  }
  throw new ValueError(op, `pass ${name} as an integer ≥ ${min} or a pair [height, width] of them, not ${describeValue(v)}`);
}

/** The input's shape as `[N, C, H, W]` and whether a batch dim is added (validation only: records nothing). */
function batched(op: string, x: Tensor, spatial: 1 | 2): { shape4: [number, number, number, number]; added: boolean } {
  const want = spatial + 2;
  if (x.rank !== want && x.rank !== want - 1) {
    const layout = spatial === 2 ? "[N, C, H, W] or [C, H, W]" : "[N, C, L] or [C, L]";
    throw new ShapeError(op, [x.shape], `expects an input of shape ${layout}, got ${formatShape(x.shape)}; reshape it`);
  }
  const added = x.rank === want - 1;
  const shape = added ? [1, ...x.shape] : [...x.shape];
  const [n = 0, c = 0] = shape;
  return { shape4: spatial === 2 ? [n, c, shape[2] ?? 0, shape[3] ?? 0] : [n, c, 1, shape[2] ?? 0], added };
}

/** The output size of one spatial dim. */
function outSize(size: number, k: number, s: number, p0: number, p1: number, d: number): number {
  return Math.floor((size + p0 + p1 - d * (k - 1) - 1) / s) + 1;
}

/** The `KH·KW` strided windows of padded `xp [N, C, Hp, Wp]`, stacked as `[N, C, KH·KW, OH, OW]`. */
function windows(xp: Tensor, k: readonly [number, number], s: readonly [number, number], d: readonly [number, number], out: readonly [number, number]): Tensor {
  const parts: Tensor[] = [];
  for (let i = 0; i < k[0]; i++) {
    for (let j = 0; j < k[1]; j++) {
      const specs: SliceSpec[] = [null, null, [i * d[0], i * d[0] + (out[0] - 1) * s[0] + 1, s[0]], [j * d[1], j * d[1] + (out[1] - 1) * s[1] + 1, s[1]]];
      const w = slice(xp, specs);
      parts.push(reshapeUnchecked(w, [w.shape[0] ?? 0, w.shape[1] ?? 0, 1, out[0], out[1]]));
    }
  }
  return parts.length === 1 ? (parts[0] as Tensor) : concat(parts, 2);
}

interface ConvPlan {
  readonly stride: [number, number];
  readonly dilation: [number, number];
  readonly pads: [[number, number], [number, number]];
  readonly groups: number;
}

function convolve(op: "conv1d" | "conv2d", x: Tensor, w: Tensor, opts: Partial<Record<"bias" | "stride" | "padding" | "dilation" | "groups", unknown>>, spatial: 1 | 2): Tensor {
  checkTensor(op, "the input", x);
  checkTensor(op, "the weight", w);
  const bias = opts.bias === undefined ? undefined : checkTensor(op, "options.bias", opts.bias);
  checkOperands(op, bias === undefined ? [x, w] : [x, w, bias]);
  const one = (name: string, v: unknown, dflt: number, min: number): [number, number] => {
    if (v === undefined) return [dflt, dflt];
    if (spatial === 1) {
      checkInteger(op, name, v, min);
      return [1, v as number];
    }
    return pair(op, name, v, min);
  };
  const stride = one("stride", opts.stride, 1, 1);
  const dilation = one("dilation", opts.dilation, 1, 1);
  const groups = opts.groups === undefined ? 1 : checkInteger(op, "groups", opts.groups, 1);
  if (w.rank !== spatial + 2) {
    const layout = spatial === 2 ? "[O, C / groups, KH, KW]" : "[O, C / groups, K]";
    throw new ShapeError(op, [x.shape, w.shape], `expects a weight of shape ${layout}, got ${formatShape(w.shape)}; reshape it`);
  }
  if (x.dtype === "bool" || w.dtype === "bool") throw new DTypeError(op, `bool tensors cannot be convolved; cast them first, e.g. \`x.cast("f32")\``);
  const { shape4, added } = batched(op, x, spatial);
  const [n, c, h, wd] = shape4;
  const w4 = spatial === 2 ? w.shape : [w.shape[0] ?? 0, w.shape[1] ?? 0, 1, w.shape[2] ?? 0];
  const [o, cg, kh, kw] = w4 as [number, number, number, number];
  if (c % groups !== 0 || o % groups !== 0 || cg !== c / groups) {
    throw new ShapeError(op, [x.shape, w.shape], `input channels ${c} and weight ${formatShape(w.shape)} do not fit groups = ${groups}: C and O must be multiples of groups and the weight's dim 1 must be C / groups = ${c / groups}; pass matching channels`);
  }
  if (bias !== undefined && (bias.rank !== 1 || bias.shape[0] !== o)) {
    throw new ShapeError(op, [w.shape, bias.shape], `bias ${formatShape(bias.shape)} must have shape [${o}] (one per output channel); reshape it`);
  }
  if (bias !== undefined && bias.dtype === "bool") throw new DTypeError(op, `bias is bool; cast it first, e.g. \`bias.cast("f32")\``);
  let pads: [[number, number], [number, number]];
  const p = opts.padding;
  if (p === undefined || p === "valid") pads = [[0, 0], [0, 0]];
  else if (p === "same") {
    if (stride[0] !== 1 || stride[1] !== 1) throw new ValueError(op, `padding "same" needs stride 1 (got ${stride.join(", ")}); pass explicit padding`);
    const total = (k: number, d: number): [number, number] => [Math.floor((d * (k - 1)) / 2), d * (k - 1) - Math.floor((d * (k - 1)) / 2)];
    pads = [total(kh, dilation[0]), total(kw, dilation[1])];
  } else {
    const [ph, pw] = spatial === 1 ? [0, checkInteger(op, "padding", p, 0)] : pair(op, "padding", p, 0);
    pads = [[ph, ph], [pw, pw]];
  }
  const oh = outSize(h, kh, stride[0], pads[0][0], pads[0][1], dilation[0]);
  const ow = outSize(wd, kw, stride[1], pads[1][0], pads[1][1], dilation[1]);
  if (oh <= 0 || ow <= 0) {
    throw new ShapeError(op, [x.shape, w.shape], `the kernel ${formatShape(w.shape)} (dilation ${dilation.join(", ")}) is larger than the padded input ${formatShape(x.shape)}; pad the input or use a smaller kernel`);
  }
  return runConv(x, shape4, w, bias, { stride, dilation, pads, groups }, [n, o, cg, kh, kw, oh, ow], spatial, added);
}

function runConv(x: Tensor, shape4: readonly number[], w: Tensor, bias: Tensor | undefined, plan: ConvPlan, dims: readonly number[], spatial: 1 | 2, added: boolean): Tensor {
  const [n, o, cg, kh, kw, oh, ow] = dims as [number, number, number, number, number, number, number];
  const g = plan.groups;
  return tidy(() => {
    const x4 = reshapeUnchecked(x, shape4);
    const dtype = floatTypeFor(x4.dtype === w.dtype ? x4.dtype : "f32");
    const xf = x4.dtype === dtype ? x4 : castUnchecked(x4, dtype);
    const wf = w.dtype === dtype ? w : castUnchecked(w, dtype);
    const padded = pad(xf, [[0, 0], [0, 0], plan.pads[0], plan.pads[1]], 0);
    const cols = windows(padded, [kh, kw], plan.stride, plan.dilation, [oh, ow]); // [N, C, K, OH, OW]
    const k = cg * kh * kw;
    const lhs = reshapeUnchecked(wf, [1, g, o / g, k]);
    const rhs = reshapeUnchecked(cols, [n, g, k, oh * ow]);
    let out = reshapeUnchecked(matmul(lhs, rhs), [n, o, oh, ow]);
    if (bias !== undefined) out = binary("add", out, reshapeUnchecked(bias.dtype === dtype ? bias : castUnchecked(bias, dtype), [1, o, 1, 1]));
    const shape = spatial === 2 ? [n, o, oh, ow] : [n, o, ow];
    return reshapeUnchecked(out, added ? shape.slice(1) : shape);
  });
}

/**
 * 2-D convolution (cross-correlation, as PyTorch) of NCHW `x` with `w [O, C / groups, KH, KW]`
 * (module doc for the options and rules).
 * @throws ShapeError for mismatched ranks, channels, groups or bias; ValueError for bad options.
 */
export function conv2d(x: Tensor, w: Tensor, options: Conv2dOptions = {}): Tensor {
  const opts = checkOptions("conv2d", options, ["bias", "stride", "padding", "dilation", "groups"]);
  return convolve("conv2d", x, w, opts, 2);
}

/** 1-D convolution of `x [N, C, L]` (or `[C, L]`) with `w [O, C / groups, K]`; see {@link conv2d}. */
export function conv1d(x: Tensor, w: Tensor, options: Conv1dOptions = {}): Tensor {
  const opts = checkOptions("conv1d", options, ["bias", "stride", "padding", "dilation", "groups"]);
  return convolve("conv1d", x, w, opts, 1);
}

function poolPlan(op: string, x: Tensor, kernel: unknown, opts: Partial<Record<string, unknown>>): { k: [number, number]; s: [number, number]; p: [number, number]; d: [number, number] } {
  checkTensor(op, "the input", x);
  checkOperands(op, [x]);
  const k = pair(op, "kernel", kernel, 1);
  const s = opts.stride === undefined ? k : pair(op, "stride", opts.stride, 1);
  const p = opts.padding === undefined ? ([0, 0] as [number, number]) : pair(op, "padding", opts.padding, 0);
  const d = opts.dilation === undefined ? ([1, 1] as [number, number]) : pair(op, "dilation", opts.dilation, 1);
  if (p[0] > k[0] / 2 || p[1] > k[1] / 2) {
    throw new ValueError(op, `padding [${p.join(", ")}] exceeds half the kernel [${k.join(", ")}]; pass padding ≤ kernel / 2 (PyTorch's rule)`);
  }
  if (x.rank !== 4 && x.rank !== 3) throw new ShapeError(op, [x.shape], `expects an input of shape [N, C, H, W] or [C, H, W], got ${formatShape(x.shape)}; reshape it`);
  if (x.dtype === "bool") throw new DTypeError(op, `bool tensors cannot be pooled; cast first, e.g. \`x.cast("f32")\``);
  const h = x.shape[x.rank - 2] ?? 0;
  const w = x.shape[x.rank - 1] ?? 0;
  if (outSize(h, k[0], s[0], p[0], p[0], d[0]) <= 0 || outSize(w, k[1], s[1], p[1], p[1], d[1]) <= 0) {
    throw new ShapeError(op, [x.shape], `the window [${k.join(", ")}] (dilation ${d.join(", ")}) is larger than the padded input ${formatShape(x.shape)}; pad the input or use a smaller kernel`);
  }
  return { k, s, p, d };
}

function pool(op: "maxPool2d" | "avgPool2d", x: Tensor, plan: { k: [number, number]; s: [number, number]; p: [number, number]; d: [number, number] }, countIncludePad: boolean): Tensor {
  const { k, s, p, d } = plan;
  return tidy(() => {
    const added = x.rank === 3;
    const x4 = added ? reshapeUnchecked(x, [1, ...x.shape]) : x;
    const [h, w] = x4.shape.slice(2) as [number, number];
    const oh = outSize(h, k[0], s[0], p[0], p[0], d[0]);
    const ow = outSize(w, k[1], s[1], p[1], p[1], d[1]);
    let out: Tensor;
    if (op === "maxPool2d") {
      const fill = isFloat(x4.dtype) ? -Infinity : (integerRange(x4.dtype)?.[0] ?? 0);
      const padded = pad(x4, [[0, 0], [0, 0], [p[0], p[0]], [p[1], p[1]]], fill);
      out = reduce("max", windows(padded, k, s, d, [oh, ow]), 2);
    } else {
      const xf = isFloat(x4.dtype) ? x4 : castUnchecked(x4, "f32");
      const padded = pad(xf, [[0, 0], [0, 0], [p[0], p[0]], [p[1], p[1]]], 0);
      const sums = reduce("sum", windows(padded, k, s, d, [oh, ow]), 2);
      // Multiplied by the exact-as-possible reciprocal: WGSL division is only within 2.5 ULP.
      if (countIncludePad) out = binary("mul", sums, 1 / (k[0] * k[1]));
      else {
        // The number of real elements per window: the same pool over a padded tensor of ones.
        const ones = pad(register(x.device, new FullOpIr(output(x.device, [1, 1, h, w], xf.dtype), 1)), [[0, 0], [0, 0], [p[0], p[0]], [p[1], p[1]]], 0);
        out = binary("div", sums, reduce("sum", windows(ones, k, s, d, [oh, ow]), 2));
      }
    }
    return added ? reshapeUnchecked(out, out.shape.slice(1)) : out;
  });
}

/**
 * The maximum over each `kernel` window of NCHW `x` (module doc: padding never wins, NaN wins).
 * @throws ValueError for a kernel, stride or padding that is not allowed; ShapeError for a window
 *   larger than the padded input or an input that is not 3-D/4-D.
 */
export function maxPool2d(x: Tensor, kernel: Size2, options: MaxPool2dOptions = {}): Tensor {
  const opts = checkOptions("maxPool2d", options, ["stride", "padding", "dilation"]);
  return pool("maxPool2d", x, poolPlan("maxPool2d", x, kernel, opts), true);
}

/** The mean over each `kernel` window of NCHW `x` (module doc: padded zeros count by default). */
export function avgPool2d(x: Tensor, kernel: Size2, options: AvgPool2dOptions = {}): Tensor {
  const opts = checkOptions("avgPool2d", options, ["stride", "padding", "countIncludePad"]);
  const countIncludePad = checkBoolean("avgPool2d", "options.countIncludePad", opts.countIncludePad) ?? true;
  return pool("avgPool2d", x, poolPlan("avgPool2d", x, kernel, opts), countIncludePad);
}
