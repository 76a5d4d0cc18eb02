import type { DType, SortOutput } from "@weft/fusion";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { checkIndexRange, emitCoords, offsetExpr, type StridedLayout } from "../codegen/wgsl/indexing.js";
import { checkDType, type DeviceProfile } from "../codegen/wgsl/types.js";
import { storageBinding } from "../codegen/wgsl/bindings.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";
import type { KernelLaunchPlan } from "./elementwise.js";

/**
 * The WebGPU `sort` kernels (`docs/semantics.md`, "Issue 7's ops"): a bitonic sorting network over
 * `(key, position)` pairs, where the `u32` key's unsigned order is the documented order (the CPU
 * backend's `sortKeys`, `@weft/backend-cpu`'s `axis-kernels.ts`: floats by their bits with `-0`
 * made `+0` and NaN above `+Inf`, `i32` with the sign bit flipped, complemented descending).
 *
 * @remarks
 * **Why bitonic, and why pairs.** A bitonic network's compare-and-swap pattern does not depend on
 * the data, so it runs in lockstep in one workgroup with only barriers between stages, and its
 * longer stages are one dispatch each. It is not stable, but no two pairs are equal (positions
 * differ), so the sorted order is unique — exactly the stable order, the same bits as the CPU's
 * radix sort. Values are copied bit for bit (4-byte types are bound as `u32`), so NaN payloads
 * and `-0` survive.
 * **Two paths** (per row of `n` along the axis, padded to the power of two `P` with pairs
 * `(0xffffffff, 0xffffffff)` that sort after every real pair, NaN included):
 * - `P ≤ T` ({@link sortBlockSize}: the largest power of two ≤ 2048 whose two `u32` arrays fit
 *   the workgroup storage): one workgroup per row loads, sorts in workgroup memory and writes the
 *   first `kept` entries — one dispatch for any number of rows.
 * - `P > T`: blocks of `T` are sorted in workgroup memory into a scratch pair array (directions
 *   alternating as the global network's), then each merge level `k = 2T … P` runs its strides
 *   `j ≥ T` as one global compare-and-swap dispatch each and its strides `j < T` in workgroup
 *   memory in one dispatch; a last dispatch writes the output. `k` and `j` are uniforms, so a
 *   row length compiles four pipelines whatever its number of levels: `O(n log² n)` work in
 *   `O(log² (n / T))` dispatches (56 for `n = 2^20` with `T = 2048`: the block sort, 45 global and 9 in-workgroup merge passes, the write).
 * **Keys.** Shapes, strides and `T` are structure, baked into the text (the existing rule for
 * layout kernels); no value of the data is.
 */
export type SortPass =
  /** One workgroup per row: load, sort, write the output (`P ≤ T`). */
  | { readonly kind: "rows" }
  /** One workgroup per block of `T`: load, sort with the global network's directions, store the pairs. */
  | { readonly kind: "blocks" }
  /** One invocation per pair of the scratch arrays: the stage `(k, j)` from the uniforms, `j ≥ T`. */
  | { readonly kind: "global" }
  /** One workgroup per block: the strides `j < T` of level `k` (a uniform) in workgroup memory. */
  | { readonly kind: "local" }
  /**
   * One invocation per output element: the value or the position the scratch names. Bindings:
   * `rows` src, dst; `blocks` src, keys, positions; `global`/`local` keys, positions (uniforms
   * `{k, j}` after them); `write` src (values only), positions, dst.
   */
  | { readonly kind: "write" };

/** What a sort kernel is generated from (structure only). */
export interface SortSpec {
  readonly pass: SortPass;
  /** The input's layout (`blocks`, `rows`, `write` read it). */
  readonly input: StridedLayout;
  readonly dtype: DType;
  readonly axis: number;
  readonly descending: boolean;
  readonly output: SortOutput;
  /** Entries kept per row (`out.shape[axis]`). */
  readonly kept: number;
  /** Padded row length `P` (a power of two ≥ the axis length). */
  readonly padded: number;
  /** Workgroup block `T` (`rows`: `P` itself). */
  readonly block: number;
}

/** The largest power of two ≤ 2048 whose two `u32` arrays fit `profile`'s workgroup storage. */
export function sortBlockSize(profile: DeviceProfile): number {
  let t = 2048;
  while (t > 2 && t * 8 > profile.maxWorkgroupStorage) t /= 2;
  return t;
}

/** Canonical key of a sort kernel. */
export function sortKey(spec: SortSpec, profile: DeviceProfile): string {
  const l = spec.input;
  return `sort:${spec.pass.kind}:${spec.dtype}:${spec.axis}:${spec.descending ? "d" : "a"}:${spec.output}:${spec.kept}:${spec.padded}:${spec.block}(${l.shape}:${l.strides}:${l.offset})#${profile.key}`;
}

/** Storage element of the values: 4-byte types as `u32` (bit-exact copies), `f16` as itself. */
function element(dtype: DType): string {
  return dtype === "f16" ? "f16" : "u32";
}

/** WGSL `fn sort_key(v) -> u32` for `dtype` (module doc; every test on the bits). */
function keyFunction(dtype: DType, descending: boolean): string[] {
  const lines = [`fn sort_key(v: ${element(dtype)}) -> u32 {`];
  if (dtype === "f32" || dtype === "f16") {
    lines.push(
      dtype === "f16" ? "  var b = bitcast<u32>(f32(v));" : "  var b = v;",
      "  let m = b & 0x7fffffffu;",
      `  if (m > 0x7f800000u) { return ${descending ? "0u" : "0xffffffffu"}; }`,
      "  if (m == 0u) { b = 0u; }",
      "  let k = select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);",
    );
  } else if (dtype === "i32") {
    lines.push("  let k = v ^ 0x80000000u;");
  } else {
    lines.push("  let k = v;");
  }
  lines.push(descending ? "  return ~k;" : "  return k;", "}", "");
  return lines;
}

const BEFORE = ["fn before(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {", "  return ka < kb || (ka == kb && ia < ib);", "}", ""];

/** The outer (non-axis) shape: the axis as size 1. */
function outerShape(shape: readonly number[], axis: number): number[] {
  return shape.map((d, i) => (i === axis ? 1 : d));
}

/** Emits `let base = …;` (the row's first input element) for row `row`. */
function inputBase(b: WgslBuilder, spec: SortSpec, row: string): void {
  const coords = emitCoords(b, row, outerShape(spec.input.shape, spec.axis), "c");
  b.line(`let base = ${offsetExpr(coords, spec.input.strides, spec.input.offset)};`);
}

/** Lines loading the row's pair `i` (local `li`) into workgroup memory, padded past `n`. */
function loadFromInput(b: WgslBuilder, spec: SortSpec, position: string, slot: string): void {
  const n = spec.input.shape[spec.axis] ?? 0;
  const sa = spec.input.strides[spec.axis] ?? 0;
  b.block(`if (${position} < ${n}u)`, (c) => c.line(`sk[${slot}] = sort_key(src[base + ${position} * ${sa}u]);`, `si[${slot}] = ${position};`));
  b.block("else", (c) => c.line(`sk[${slot}] = 0xffffffffu;`, `si[${slot}] = 0xffffffffu;`));
}

/** The compare-and-swap of local pair `t` at stride `j` in a block of level `k` (global block base `gb`). */
function localStage(b: WgslBuilder, block: number, wg: number, j: string, k: string): void {
  b.block(`for (var t = lid; t < ${block / 2}u; t = t + ${wg}u)`, (c) => {
    c.line(
      `let i = 2u * ${j} * (t / ${j}) + (t % ${j});`,
      `let l = i + ${j};`,
      `let up = ((gb + i) & ${k}) == 0u;`,
      "let ki = sk[i];",
      "let ii = si[i];",
      "let kl = sk[l];",
      "let il = si[l];",
      "let swap = select(before(ki, ii, kl, il), before(kl, il, ki, ii), up);",
    );
    c.block("if (swap)", (d) => d.line("sk[i] = kl;", "si[i] = il;", "sk[l] = ki;", "si[l] = ii;"));
  });
  b.line("workgroupBarrier();");
}

/** Generates one pass of the sort (see {@link SortPass}). */
export function sortKernel(spec: SortSpec, profile: DeviceProfile): KernelLaunchPlan {
  checkDType(spec.dtype, profile, "sort");
  const wg = profile.workgroupSize;
  const shape = spec.input.shape;
  const rows = shape.reduce((a, d, i) => (i === spec.axis ? a : a * d), 1);
  const p = spec.padded;
  const t = spec.block;
  checkIndexRange(rows * p, "sort");
  const w = new WgslBuilder();
  if (spec.dtype === "f16") w.line("enable f16;", "");
  const pass = spec.pass.kind;
  const pk = (binding: number): string => storageBinding(binding, "pk", "u32");
  const pi = (binding: number): string => storageBinding(binding, "pi", "u32");
  const uniforms = (binding: number): string[] => ["struct Stage { k: u32, j: u32 }", `@group(0) @binding(${binding}) var<uniform> stage: Stage;`];
  const dstElement = spec.output === "indices" ? "i32" : element(spec.dtype);
  let count: number;
  switch (pass) {
    case "rows":
      w.line(storageBinding(0, "src", element(spec.dtype)), storageBinding(1, "dst", dstElement));
      count = rows;
      break;
    case "blocks":
      w.line(storageBinding(0, "src", element(spec.dtype)), pk(1), pi(2));
      count = rows * (p / t);
      break;
    case "global":
      w.line(pk(0), pi(1), ...uniforms(2));
      count = Math.ceil((rows * p) / 2 / wg);
      break;
    case "local":
      w.line(pk(0), pi(1), ...uniforms(2));
      count = rows * (p / t);
      break;
    case "write":
      if (spec.output === "indices") w.line(pi(0), storageBinding(1, "dst", dstElement));
      else w.line(storageBinding(0, "src", element(spec.dtype)), pi(1), storageBinding(2, "dst", dstElement));
      count = Math.ceil((rows * spec.kept) / wg);
      break;
    default:
      return pass satisfies never;
  }
  w.line("");
  if (pass === "rows" || pass === "blocks") w.line(...keyFunction(spec.dtype, spec.descending));
  if (pass !== "write") w.line(...BEFORE);
  if (pass === "rows" || pass === "blocks" || pass === "local") w.line(`var<workgroup> sk: array<u32, ${t}>;`, `var<workgroup> si: array<u32, ${t}>;`, "");
  w.line(`@compute @workgroup_size(${wg})`);
  w.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    const sa = spec.input.strides[spec.axis] ?? 0;
    switch (pass) {
      case "rows":
      case "blocks": {
        const blocks = p / t;
        b.line(`let g = ${LINEAR_GROUP};`, `if (g >= ${count}u) { return; }`, `let row = g / ${blocks}u;`, `let gb = (g % ${blocks}u) * ${t}u;`);
        inputBase(b, spec, "row");
        b.block(`for (var li = lid; li < ${t}u; li = li + ${wg}u)`, (c) => {
          c.line("let pos = gb + li;");
          loadFromInput(c, spec, "pos", "li");
        });
        b.line("workgroupBarrier();");
        b.block(`for (var k = 2u; k <= ${t}u; k = k * 2u)`, (c) => {
          c.block("for (var j = k / 2u; j > 0u; j = j / 2u)", (d) => localStage(d, t, wg, "j", "k"));
        });
        if (pass === "rows") {
          const outShape = shape.map((d, i) => (i === spec.axis ? spec.kept : d));
          const outStrides = contiguous(outShape);
          const coords = outerShape(shape, spec.axis).map((size, d) => (size === 1 ? "0u" : `c${d}`));
          const so = outStrides[spec.axis] ?? 0;
          b.line(`let obase = ${offsetExpr(coords, outStrides, 0)};`);
          b.block(`for (var li = lid; li < ${spec.kept}u; li = li + ${wg}u)`, (c) => {
            c.line(spec.output === "indices" ? "dst[obase + li * " + `${so}u] = i32(si[li]);` : `dst[obase + li * ${so}u] = src[base + si[li] * ${sa}u];`);
          });
        } else {
          b.block(`for (var li = lid; li < ${t}u; li = li + ${wg}u)`, (c) => c.line(`pk[row * ${p}u + gb + li] = sk[li];`, `pi[row * ${p}u + gb + li] = si[li];`));
        }
        return;
      }
      case "global": {
        b.line(
          `let q = ${LINEAR_GROUP} * ${wg}u + lid;`,
          `if (q >= ${(rows * p) / 2}u) { return; }`,
          `let row = q / ${p / 2}u;`,
          `let r = q % ${p / 2}u;`,
          "let i = 2u * stage.j * (r / stage.j) + (r % stage.j);",
          "let l = i + stage.j;",
          "let up = (i & stage.k) == 0u;",
          `let a = row * ${p}u + i;`,
          `let z = row * ${p}u + l;`,
          "let ki = pk[a];",
          "let ii = pi[a];",
          "let kl = pk[z];",
          "let il = pi[z];",
        );
        b.block("if (select(before(ki, ii, kl, il), before(kl, il, ki, ii), up))", (c) => c.line("pk[a] = kl;", "pi[a] = il;", "pk[z] = ki;", "pi[z] = ii;"));
        return;
      }
      case "local": {
        const blocks = p / t;
        b.line(`let g = ${LINEAR_GROUP};`, `if (g >= ${count}u) { return; }`, `let row = g / ${blocks}u;`, `let gb = (g % ${blocks}u) * ${t}u;`, `let at = row * ${p}u + gb;`);
        b.block(`for (var li = lid; li < ${t}u; li = li + ${wg}u)`, (c) => c.line("sk[li] = pk[at + li];", "si[li] = pi[at + li];"));
        b.line("workgroupBarrier();");
        b.block(`for (var j = ${t / 2}u; j > 0u; j = j / 2u)`, (c) => localStage(c, t, wg, "j", "stage.k"));
        b.block(`for (var li = lid; li < ${t}u; li = li + ${wg}u)`, (c) => c.line("pk[at + li] = sk[li];", "pi[at + li] = si[li];"));
        return;
      }
      case "write": {
        const kept = spec.kept;
        b.line(`let o = ${LINEAR_GROUP} * ${wg}u + lid;`, `if (o >= ${rows * kept}u) { return; }`, `let row = o / ${kept}u;`, `let li = o % ${kept}u;`);
        const outShape = shape.map((d, i) => (i === spec.axis ? kept : d));
        // The output is dense: element o is (row's outer coords, li); write it at its dense place.
        inputBase(b, spec, "row");
        const outStrides = contiguous(outShape);
        const coords = outerShape(shape, spec.axis).map((size, d) => (size === 1 ? "0u" : `c${d}`));
        const so = outStrides[spec.axis] ?? 0;
        b.line(`let pos = pi[row * ${p}u + li];`, `let at = ${offsetExpr(coords, outStrides, 0)} + li * ${so}u;`);
        b.line(spec.output === "indices" ? "dst[at] = i32(pos);" : `dst[at] = src[base + pos * ${sa}u];`);
        return;
      }
      default:
        return pass satisfies never;
    }
  });
  return { kernel: { key: sortKey(spec, profile), source: w.toString(), entryPoint: "main", label: `sort ${pass}` }, count: dispatch1d(count, profile, "sort") };
}

function contiguous(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length).fill(1);
  for (let d = shape.length - 2; d >= 0; d--) strides[d] = (strides[d + 1] ?? 1) * (shape[d + 1] ?? 1);
  return strides;
}
