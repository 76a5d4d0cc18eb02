import type { DType } from "@weft/fusion";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { broadcastStrides, checkIndexRange, emitCoords, offsetExpr, type StridedLayout } from "../codegen/wgsl/indexing.js";
import { checkDType, storageElement, finishSource, type DeviceProfile } from "../codegen/wgsl/types.js";
import { storageBinding } from "../codegen/wgsl/bindings.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";
import type { KernelLaunchPlan } from "./elementwise.js";

/**
 * `out[…, i, …] = input[…, indices[…, i, …], …]` along `axis`, with the semantics table's index
 * rule (`docs/semantics.md`, "Index errors"): indices lie in `[-n, n)` for an axis of size `n`,
 * negative ones count from the end.
 *
 * @remarks
 * **Out of range.** A kernel cannot throw, and must never read outside its buffer: an index
 * outside `[-n, n)` is clamped for the load, and the kernel stores `1` and the offending index
 * into the two `u32` status words. The runtime then has the server verify them
 * (`ComputeServer.verify`), which makes the output — and everything computed from it — fail at
 * read with an `IndexOutOfRangeError` naming the index. The status words must be zero before the
 * launch (the runtime clears them); the kernel only ever writes them on a bad index.
 * **Binding layout:** input, indices (`i32`), output, status (`array<atomic<u32>, 2>`).
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
    storageBinding(0, "src", storageElement(spec.dtype, 1)),
    storageBinding(1, "idx", "i32"),
    storageBinding(2, "dst", storageElement(spec.dtype, 1)),
    "@group(0) @binding(3) var<storage, read_write> status: array<atomic<u32>, 2>;",
    "",
    `@compute @workgroup_size(${wg})`,
  );
  w.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    b.line(`let i = ${LINEAR_GROUP} * ${wg}u + lid;`, `if (i >= ${n}u) { return; }`);
    const coords = emitCoords(b, "i", spec.outShape, "c");
    b.line(`let j = idx[${offsetExpr(coords, broadcastStrides(spec.indices, spec.outShape), spec.indices.offset)}];`);
    // In range: [-dim, dim). Compared as i32 against the axis size (dim ≤ 2^31 - 1).
    b.block(`if (j < -${dim}i || j >= ${dim}i)`, (c) => c.line("atomicStore(&status[1], bitcast<u32>(j));", "atomicStore(&status[0], 1u);"));
    b.line(`let k = u32(clamp(select(j, j + ${dim}i, j < 0i), 0i, ${Math.max(0, dim - 1)}i));`);
    const srcCoords = coords.map((c, d) => (d === spec.axis ? "k" : c));
    b.line(`dst[i] = src[${offsetExpr(srcCoords, spec.input.strides, spec.input.offset)}];`);
  });
  return { kernel: { key: gatherKey(spec, profile), source: finishSource(w.toString()), entryPoint: "main", label: "gather" }, count: dispatch1d(Math.ceil(n / wg), profile, "gather") };
}
