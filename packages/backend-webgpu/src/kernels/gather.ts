import type { DType } from "@weft/fusion";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { broadcastStrides, checkIndexRange, emitCoords, offsetExpr, type StridedLayout } from "../codegen/wgsl/indexing.js";
import { checkDType, storageElement, finishSource, type DeviceProfile } from "../codegen/wgsl/types.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";
import type { KernelLaunchPlan } from "./elementwise.js";

/**
 * `out[…, i, …] = input[…, indices[…, i, …], …]` along `axis`. Negative indices count from the end
 * (`-1` is the last); indices still out of range are clamped to the axis (a GPU kernel cannot
 * throw; the tensor API validates what it can see).
 * **Binding layout:** input, indices (`i32`), output.
 */
export interface GatherSpec {
  readonly input: StridedLayout;
  readonly indices: StridedLayout;
  readonly dtype: DType;
  readonly axis: number;
  readonly outShape: readonly number[];
}

/** Canonical key of a gather kernel. */
export function gatherKey(spec: GatherSpec, profile: DeviceProfile): string {
  const l = (x: StridedLayout): string => `${x.shape}:${x.strides}:${x.offset}`;
  return `gather:${spec.dtype}:${spec.axis}(${l(spec.input)}|${l(spec.indices)})[${spec.outShape}]#${profile.key}`;
}

/** Generates the gather kernel. */
export function gatherKernel(spec: GatherSpec, profile: DeviceProfile): KernelLaunchPlan {
  const n = spec.outShape.reduce((a, b) => a * b, 1);
  checkIndexRange(n, "gather");
  checkDType(spec.dtype, profile, "gather");
  const wg = profile.workgroupSize;
  const dim = spec.input.shape[spec.axis] ?? 1;
  const w = new WgslBuilder();
  if (spec.dtype === "f16") w.line("enable f16;", "");
  w.line(
    `@group(0) @binding(0) var<storage, read> src: array<${storageElement(spec.dtype, 1)}>;`,
    "@group(0) @binding(1) var<storage, read> idx: array<i32>;",
    `@group(0) @binding(2) var<storage, read_write> dst: array<${storageElement(spec.dtype, 1)}>;`,
    "",
    `@compute @workgroup_size(${wg})`,
  );
  w.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    b.line(`let i = ${LINEAR_GROUP} * ${wg}u + lid;`, `if (i >= ${n}u) { return; }`);
    const coords = emitCoords(b, "i", spec.outShape, "c");
    b.line(`var j = idx[${offsetExpr(coords, broadcastStrides(spec.indices, spec.outShape), spec.indices.offset)}];`);
    b.line(`j = clamp(select(j, j + ${dim}i, j < 0i), 0i, ${Math.max(0, dim - 1)}i);`);
    const srcCoords = coords.map((c, d) => (d === spec.axis ? "u32(j)" : c));
    b.line(`dst[i] = src[${offsetExpr(srcCoords, spec.input.strides, spec.input.offset)}];`);
  });
  return { kernel: { key: gatherKey(spec, profile), source: finishSource(w.toString()), entryPoint: "main", label: "gather" }, count: dispatch1d(Math.ceil(n / wg), profile, "gather") };
}
