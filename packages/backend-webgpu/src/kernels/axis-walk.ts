import type { DType, ScanOp, ScatterOp } from "@weft/fusion";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { checkIndexRange, emitCoords, offsetExpr, type StridedLayout } from "../codegen/wgsl/indexing.js";
import { checkDType, storageElement, type DeviceProfile } from "../codegen/wgsl/types.js";
import { storageBinding } from "../codegen/wgsl/bindings.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";
import type { KernelLaunchPlan } from "./elementwise.js";

/**
 * The WebGPU `scan` and `scatter` kernels: one invocation per row along the axis walks the row in
 * order, so the arithmetic is the CPU oracle's (`@weft/backend-cpu`'s `axis-kernels.ts`) step
 * for step — a serial running sum/product, sources written or added in source order — and the
 * results are the same bits (`docs/semantics.md`, "Issue 7's ops").
 *
 * @remarks
 * **Chunks.** Mesa's software GLES stops a loop past 65,535 iterations silently (`kernel.ts`), so
 * one launch walks at most {@link WALK_CHUNK} elements of each row, from the uniform `start`; the
 * runtime launches `⌈n / WALK_CHUNK⌉` times in order on the stream. A scan's later chunk reads
 * its carry from the element the previous chunk wrote.
 * **Parallelism** is across rows only: a tensor with few long rows walks them serially (a block
 * scan with a carry pass would parallelise one row, at the price of a tree summation order; see
 * `docs/semantics.md`).
 * **Index check** (`scatter`): as `gather`'s (`kernels/gather.ts`): an index outside `[-n, n)` is
 * skipped and recorded in the two status words, which the runtime has the server verify, so the
 * output fails at read with an `IndexOutOfRangeError`.
 */
export const WALK_CHUNK = 4096;

/** What a scan kernel is generated from (structure only). */
export interface ScanSpec {
  readonly op: ScanOp;
  readonly input: StridedLayout;
  readonly dtype: DType;
  readonly axis: number;
}

/** Canonical key of a scan kernel. */
export function scanKey(spec: ScanSpec, profile: DeviceProfile): string {
  const l = spec.input;
  return `scan:${spec.op}:${spec.dtype}:${spec.axis}(${l.shape}:${l.strides}:${l.offset})#${profile.key}`;
}

function rowsOf(shape: readonly number[], axis: number): number {
  return shape.reduce((a, d, i) => (i === axis ? a : a * d), 1);
}

function contiguous(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length).fill(1);
  for (let d = shape.length - 2; d >= 0; d--) strides[d] = (strides[d + 1] ?? 1) * (shape[d + 1] ?? 1);
  return strides;
}

const START = ["struct Walk { start: u32 }"];

/** Generates the scan kernel: bindings src, dst (dense), uniforms `{ start }`. */
export function scanKernel(spec: ScanSpec, profile: DeviceProfile): KernelLaunchPlan {
  checkDType(spec.dtype, profile, "scan");
  const shape = spec.input.shape;
  checkIndexRange(shape.reduce((a, b) => a * b, 1), "scan");
  const rows = rowsOf(shape, spec.axis);
  const n = shape[spec.axis] ?? 0;
  const wg = profile.workgroupSize;
  const t = storageElement(spec.dtype, 1);
  const w = new WgslBuilder();
  if (spec.dtype === "f16") w.line("enable f16;", "");
  w.line(storageBinding(0, "src", t), storageBinding(1, "dst", t), ...START, "@group(0) @binding(2) var<uniform> walk: Walk;", "", `@compute @workgroup_size(${wg})`);
  w.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    b.line(`let row = ${LINEAR_GROUP} * ${wg}u + lid;`, `if (row >= ${rows}u) { return; }`);
    const outer = shape.map((d, i) => (i === spec.axis ? 1 : d));
    const coords = emitCoords(b, "row", outer, "c");
    const sa = spec.input.strides[spec.axis] ?? 0;
    const so = contiguous(shape)[spec.axis] ?? 0;
    b.line(`let base = ${offsetExpr(coords, spec.input.strides, spec.input.offset)};`, `let obase = ${offsetExpr(coords, contiguous(shape), 0)};`);
    const identity = spec.op === "sum" ? `${t}(0)` : `${t}(1)`;
    b.line(`var acc = ${identity};`, `if (walk.start > 0u) { acc = dst[obase + (walk.start - 1u) * ${so}u]; }`);
    b.line(`let end = min(walk.start + ${WALK_CHUNK}u, ${n}u);`);
    b.block("for (var i = walk.start; i < end; i = i + 1u)", (c) => {
      c.line(`acc = acc ${spec.op === "sum" ? "+" : "*"} src[base + i * ${sa}u];`, `dst[obase + i * ${so}u] = acc;`);
    });
  });
  return { kernel: { key: scanKey(spec, profile), source: w.toString(), entryPoint: "main", label: `scan ${spec.op}` }, count: dispatch1d(Math.ceil(rows / wg), profile, "scan") };
}

/** What a scatter kernel is generated from (structure only). */
export interface ScatterSpec {
  readonly op: ScatterOp;
  /** The input's shape (the output is dense of this shape). */
  readonly shape: readonly number[];
  readonly indices: StridedLayout;
  readonly src: StridedLayout;
  readonly dtype: DType;
  readonly axis: number;
}

/** Canonical key of a scatter kernel. */
export function scatterKey(spec: ScatterSpec, profile: DeviceProfile): string {
  const l = (x: StridedLayout): string => `${x.shape}:${x.strides}:${x.offset}`;
  return `scatter:${spec.op}:${spec.dtype}:${spec.axis}[${spec.shape}](${l(spec.indices)}|${l(spec.src)})#${profile.key}`;
}

/**
 * Generates the scatter kernel: bindings indices (`i32`), src, dst (dense, already holding the
 * input), status (`array<atomic<u32>, 2>`), uniforms `{ start }`. One invocation per row of the
 * indices' outer shape.
 */
export function scatterKernel(spec: ScatterSpec, profile: DeviceProfile): KernelLaunchPlan {
  checkDType(spec.dtype, profile, "scatter");
  checkIndexRange(spec.shape.reduce((a, b) => a * b, 1), "scatter");
  const ishape = spec.indices.shape;
  const rows = rowsOf(ishape, spec.axis);
  const m = ishape[spec.axis] ?? 0;
  const n = spec.shape[spec.axis] ?? 0;
  const wg = profile.workgroupSize;
  const t = storageElement(spec.dtype, 1);
  const w = new WgslBuilder();
  if (spec.dtype === "f16") w.line("enable f16;", "");
  w.line(
    storageBinding(0, "idx", "i32"),
    storageBinding(1, "src", t),
    storageBinding(2, "dst", t),
    "@group(0) @binding(3) var<storage, read_write> status: array<atomic<u32>, 2>;",
    ...START,
    "@group(0) @binding(4) var<uniform> walk: Walk;",
    "",
    `@compute @workgroup_size(${wg})`,
  );
  w.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    b.line(`let row = ${LINEAR_GROUP} * ${wg}u + lid;`, `if (row >= ${rows}u) { return; }`);
    const outer = ishape.map((d, i) => (i === spec.axis ? 1 : d));
    const coords = emitCoords(b, "row", outer, "c");
    const outStrides = contiguous(spec.shape);
    const si = spec.indices.strides[spec.axis] ?? 0;
    const ss = spec.src.strides[spec.axis] ?? 0;
    const so = outStrides[spec.axis] ?? 0;
    b.line(
      `let ibase = ${offsetExpr(coords, spec.indices.strides, spec.indices.offset)};`,
      `let sbase = ${offsetExpr(coords, spec.src.strides, spec.src.offset)};`,
      `let obase = ${offsetExpr(coords, outStrides, 0)};`,
      `let end = min(walk.start + ${WALK_CHUNK}u, ${m}u);`,
    );
    b.block("for (var j = walk.start; j < end; j = j + 1u)", (c) => {
      c.line(`let raw = idx[ibase + j * ${si}u];`);
      c.block(`if (raw < -${n}i || raw >= ${n}i)`, (d) => d.line("atomicStore(&status[1], bitcast<u32>(raw));", "atomicStore(&status[0], 1u);", "continue;"));
      c.line(`let at = obase + u32(select(raw, raw + ${n}i, raw < 0i)) * ${so}u;`);
      c.line(spec.op === "assign" ? `dst[at] = src[sbase + j * ${ss}u];` : `dst[at] = dst[at] + src[sbase + j * ${ss}u];`);
    });
  });
  return { kernel: { key: scatterKey(spec, profile), source: w.toString(), entryPoint: "main", label: `scatter ${spec.op}` }, count: dispatch1d(Math.ceil(rows / wg), profile, "scatter") };
}
