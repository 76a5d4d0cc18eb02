import type { DType, ScanOp, ScatterOp } from "@weft/fusion";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { checkIndexRange, emitCoords, offsetExpr, type StridedLayout } from "../codegen/wgsl/indexing.js";
import { checkDType, storageElement, type DeviceProfile } from "../codegen/wgsl/types.js";
import { storageBinding } from "../codegen/wgsl/bindings.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";
import type { KernelLaunchPlan } from "./elementwise.js";

/**
 * The WebGPU `scan` and `scatter` kernels: each invocation walks a row (a scan block) in order, so
 * the arithmetic is the CPU oracle's (`@weft/backend-cpu`'s `axis-kernels.ts`) step for step — a
 * running sum/product folded per block of {@link SCAN_BLOCK} from a carry, sources written or
 * added in source order — and the results are the same bits (`docs/semantics.md`, "Issue 7's
 * ops").
 *
 * @remarks
 * **Scan blocks.** A row longer than one block runs in three passes: every block's total in
 * parallel, the carries (a serial fold of the totals per row), every block folded from its carry
 * in parallel; so a long row costs `O(n / SCAN_BLOCK + SCAN_BLOCK)` steps of latency, not `O(n)`.
 * **Chunks.** Mesa's software GLES stops a loop past 65,535 iterations silently (`kernel.ts`), so
 * the walks that can be longer (the carries, a scatter's sources) cover at most
 * {@link WALK_CHUNK} elements per launch, from the uniform `start`; the runtime launches
 * `⌈length / WALK_CHUNK⌉` times in order on the stream.
 * **Parallelism** of a scatter is across rows only: a tensor with few rows and many sources walks
 * them serially.
 * **Index check** (`scatter`): as `gather`'s (`kernels/gather.ts`): an index outside `[-n, n)` is
 * skipped and recorded in the two status words, which the runtime has the server verify, so the
 * output fails at read with an `IndexOutOfRangeError`.
 */
export const WALK_CHUNK = 4096;

/**
 * Elements per block of the scan order: must equal the CPU oracle's `SCAN_BLOCK`
 * (`@weft/backend-cpu`'s `axis-kernels.ts`), since the order is part of the result's bits.
 */
export const SCAN_BLOCK = 512;

/**
 * One pass of a scan (rows of `n` elements, `b = ⌈n / SCAN_BLOCK⌉` blocks):
 * - `serial` (`n ≤ SCAN_BLOCK`): one invocation per row folds it; bindings src, dst.
 * - `totals`: one invocation per block folds it from its first element; bindings src, totals.
 * - `carries`: one invocation per row: `carry[1] = total[0]`, `carry[k] = carry[k-1] ⊕ total[k-1]`,
 *   for the blocks `[start, start + WALK_CHUNK)` (uniform); bindings totals, carries.
 * - `apply`: one invocation per block folds it from its carry (block 0: from its first element)
 *   into the output; bindings src, carries, dst.
 */
export type ScanPass = "serial" | "totals" | "carries" | "apply";

/** What a scan kernel is generated from (structure only). */
export interface ScanSpec {
  readonly pass: ScanPass;
  readonly op: ScanOp;
  readonly input: StridedLayout;
  readonly dtype: DType;
  readonly axis: number;
}

/** Canonical key of a scan kernel. */
export function scanKey(spec: ScanSpec, profile: DeviceProfile): string {
  const l = spec.input;
  return `scan:${spec.pass}:${spec.op}:${spec.dtype}:${spec.axis}(${l.shape}:${l.strides}:${l.offset})#${profile.key}`;
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

/** Generates one pass of the scan (see {@link ScanPass}). */
export function scanKernel(spec: ScanSpec, profile: DeviceProfile): KernelLaunchPlan {
  checkDType(spec.dtype, profile, "scan");
  const shape = spec.input.shape;
  checkIndexRange(shape.reduce((a, b) => a * b, 1), "scan");
  const rows = rowsOf(shape, spec.axis);
  const n = shape[spec.axis] ?? 0;
  const blocks = Math.ceil(n / SCAN_BLOCK);
  const wg = profile.workgroupSize;
  const t = storageElement(spec.dtype, 1);
  const op = spec.op === "sum" ? "+" : "*";
  const w = new WgslBuilder();
  if (spec.dtype === "f16") w.line("enable f16;", "");
  const pass = spec.pass;
  let threads: number;
  switch (pass) {
    case "serial":
      w.line(storageBinding(0, "src", t), storageBinding(1, "dst", t));
      threads = rows;
      break;
    case "totals":
      w.line(storageBinding(0, "src", t), storageBinding(1, "totals", t));
      threads = rows * blocks;
      break;
    case "carries":
      w.line(storageBinding(0, "totals", t), storageBinding(1, "carries", t), ...START, "@group(0) @binding(2) var<uniform> walk: Walk;");
      threads = rows;
      break;
    case "apply":
      w.line(storageBinding(0, "src", t), storageBinding(1, "carries", t), storageBinding(2, "dst", t));
      threads = rows * blocks;
      break;
    default:
      return pass satisfies never;
  }
  w.line("", `@compute @workgroup_size(${wg})`);
  w.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    b.line(`let q = ${LINEAR_GROUP} * ${wg}u + lid;`, `if (q >= ${threads}u) { return; }`);
    if (pass === "carries") {
      b.line(`let at = q * ${blocks}u;`, `let end = min(walk.start + ${WALK_CHUNK}u, ${blocks}u);`);
      b.block("for (var k = max(walk.start, 1u); k < end; k = k + 1u)", (c) => {
        c.line(`carries[at + k] = select(carries[at + k - 1u] ${op} totals[at + k - 1u], totals[at], k == 1u);`);
      });
      return;
    }
    const perRow = pass === "serial" ? 1 : blocks;
    b.line(`let row = q / ${perRow}u;`, `let block = q % ${perRow}u;`);
    const outer = shape.map((d, i) => (i === spec.axis ? 1 : d));
    const coords = emitCoords(b, "row", outer, "c");
    const sa = spec.input.strides[spec.axis] ?? 0;
    const so = contiguous(shape)[spec.axis] ?? 0;
    b.line(
      `let base = ${offsetExpr(coords, spec.input.strides, spec.input.offset)};`,
      `let obase = ${offsetExpr(coords, contiguous(shape), 0)};`,
      `let start = block * ${SCAN_BLOCK}u;`,
      `let end = min(start + ${SCAN_BLOCK}u, ${n}u);`,
      `var acc = src[base + start * ${sa}u];`,
    );
    if (pass === "apply") b.line(`if (block > 0u) { acc = carries[row * ${blocks}u + block] ${op} acc; }`);
    if (pass !== "totals") b.line(`dst[obase + start * ${so}u] = acc;`);
    b.block("for (var i = start + 1u; i < end; i = i + 1u)", (c) => {
      c.line(`acc = acc ${op} src[base + i * ${sa}u];`);
      if (pass !== "totals") c.line(`dst[obase + i * ${so}u] = acc;`);
    });
    if (pass === "totals") b.line(`totals[q] = acc;`);
  });
  return { kernel: { key: scanKey(spec, profile), source: w.toString(), entryPoint: "main", label: `scan ${spec.op} ${pass}` }, count: dispatch1d(Math.ceil(threads / wg), profile, "scan") };
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
