import { invariant } from "@weft/environment";
import type { DType } from "@weft/fusion";
import type { CubeCount } from "@weft/server";
import type { WgslKernel } from "../kernel.js";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { emitExpressions, type ExprGraph, type NodeId } from "../codegen/wgsl/expr.js";
import { broadcastStrides, checkIndexRange, emitCoords, isIdentityLayout, offsetExpr, type StridedLayout } from "../codegen/wgsl/indexing.js";
import { convert } from "../codegen/wgsl/ops.js";
import { encodeParams, KernelParams } from "../codegen/wgsl/params.js";
import { Preamble } from "../codegen/wgsl/preamble.js";
import { checkDType, storageElement, finishSource, type DeviceProfile } from "../codegen/wgsl/types.js";
import { storageBinding } from "../codegen/wgsl/bindings.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";

/** One tensor an elementwise kernel reads, and whether it is also the in-place destination. */
export interface ElementwiseInput {
  readonly layout: StridedLayout;
  readonly dtype: DType;
  /** `read-write` when an output is written in place into this input's memory. */
  readonly access: "read" | "read-write";
}

/** One tensor an elementwise kernel writes. */
export interface ElementwiseOutput {
  /** The graph node whose value is written. */
  readonly node: NodeId;
  readonly dtype: DType;
  /** Writes into input `slot`'s binding (same contiguous layout) instead of an own binding. */
  readonly inPlaceSlot?: number;
  /** Destination layout (default: contiguous, offset 0) — used by concat, pad and packed outputs. */
  readonly layout?: StridedLayout;
  /**
   * Writes through the binding of output `packedWith` (an earlier output of the same storage
   * type) at `layout.offset`, instead of an own binding: the single-element outputs of a block
   * packed into one allocation (`runElementwiseBlock`).
   */
  readonly packedWith?: number;
}

/**
 * A fused elementwise kernel: every output element `i` of `shape` evaluates `graph` with each input
 * read at `i` through its broadcast strides.
 *
 * @remarks
 * **Binding layout.** Inputs at bindings `0..k-1` in order (`read`, or `read_write` for an in-place
 * destination), then each output that is neither in place nor packed with an earlier one, in order
 * (`read_write`), then — when the
 * graph has parameters — the uniform block (`elementwiseUniforms`).
 * **Vectorisation.** `vec4` loads and stores when every input and output is contiguous with the
 * reference shape, offsets are multiples of 4, the element count is a multiple of 4, and no node
 * reads the element index.
 */
export interface ElementwiseSpec {
  readonly shape: readonly number[];
  readonly inputs: readonly ElementwiseInput[];
  readonly graph: ExprGraph;
  readonly outputs: readonly ElementwiseOutput[];
  /** A short label for debugging (`"add+exp"`). */
  readonly label: string;
}

/** A generated kernel and its dispatch. */
export interface KernelLaunchPlan {
  readonly kernel: WgslKernel;
  readonly count: CubeCount;
}

/**
 * The canonical key of an elementwise spec: no ids, no values (scalars, bounds, fill values, seeds
 * are parameters); shapes and strides are baked.
 */
export function elementwiseKey(spec: ElementwiseSpec, profile: DeviceProfile): string {
  const inputs = spec.inputs.map((i) => `${i.dtype}:${i.access}:${i.layout.shape}:${i.layout.strides}:${i.layout.offset}`).join("|");
  const outputs = spec.outputs.map((o) => `${o.node}:${o.dtype}:${o.inPlaceSlot ?? "-"}:${o.packedWith ?? "-"}:${o.layout ? `${o.layout.strides}@${o.layout.offset}` : "c"}`).join("|");
  return `ew[${spec.shape}](${inputs})->(${outputs}){${spec.graph.key()}}#${profile.key}`;
}

/** The uniform bytes of `spec`'s parameters for one launch (`undefined` when it has none). */
export function elementwiseUniforms(spec: ElementwiseSpec): Uint8Array | undefined {
  return encodeParams(spec.graph.params);
}

/** Whether the kernel of `spec` is vectorised (see {@link ElementwiseSpec}). */
export function vectorizable(spec: ElementwiseSpec): boolean {
  const n = spec.shape.reduce((a, b) => a * b, 1);
  if (n % 4 !== 0 || n === 0 || spec.graph.usesIndex()) return false;
  if (!spec.inputs.every((i) => isIdentityLayout(i.layout, spec.shape) && i.layout.offset % 4 === 0)) return false;
  return spec.outputs.every((o) => o.layout === undefined || (isIdentityLayout(o.layout, spec.shape) && o.layout.offset % 4 === 0));
}

/** Generates the WGSL kernel and dispatch for `spec`. */
export function elementwiseKernel(spec: ElementwiseSpec, profile: DeviceProfile, key = elementwiseKey(spec, profile)): KernelLaunchPlan {
  const n = spec.shape.reduce((a, b) => a * b, 1);
  checkIndexRange(n, spec.label);
  const width: 1 | 4 = vectorizable(spec) ? 4 : 1;
  const threads = Math.ceil(n / width);
  const wg = profile.workgroupSize;
  const helpers = new Preamble();
  const w = new WgslBuilder();
  const dtypes = [...spec.inputs.map((i) => i.dtype), ...spec.outputs.map((o) => o.dtype)];
  dtypes.forEach((d) => checkDType(d, profile, spec.label));
  if (dtypes.includes("f16")) w.line("enable f16;", "");

  spec.inputs.forEach((input, slot) => {
    w.line(storageBinding(slot, `in${slot}`, storageElement(input.dtype, width)));
  });
  const outNames: string[] = [];
  let binding = spec.inputs.length;
  spec.outputs.forEach((o, k) => {
    if (o.inPlaceSlot !== undefined) {
      outNames.push(`in${o.inPlaceSlot}`);
      return;
    }
    if (o.packedWith !== undefined) {
      const name = outNames[o.packedWith];
      invariant(name !== undefined && o.packedWith < k && o.layout !== undefined, () => `packed output ${k} names output ${o.packedWith} and a layout`);
      outNames.push(name);
      return;
    }
    w.line(storageBinding(binding++, `out${k}`, storageElement(o.dtype, width)));
    outNames.push(`out${k}`);
  });
  w.line("");
  const params = new KernelParams();
  const param = params.add(spec.graph);
  params.declare(w, binding);

  const body = new WgslBuilder();
  const coordsNeeded =
    width === 1 &&
    (spec.inputs.some((i) => !isIdentityLayout(i.layout, spec.shape)) || spec.outputs.some((o) => o.layout !== undefined && !isIdentityLayout(o.layout, spec.shape)));
  body.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    b.line(`let i = ${LINEAR_GROUP} * ${wg}u + lid;`);
    b.line(`if (i >= ${threads}u) { return; }`);
    const coords = coordsNeeded ? emitCoords(b, "i", spec.shape, "c") : [];
    const indexOf = (layout: StridedLayout): string => {
      if (isIdentityLayout(layout, spec.shape)) {
        const off = layout.offset / width;
        invariant(Number.isInteger(off), "vectorised offsets are multiples of 4");
        return off === 0 ? "i" : `i + ${off}u`;
      }
      return offsetExpr(coords, broadcastStrides(layout, spec.shape), layout.offset);
    };
    const { lines, exprs } = emitExpressions(spec.graph, spec.outputs.map((o) => o.node), {
      width,
      helpers,
      param,
      index: "i",
      load: (slot) => {
        const input = spec.inputs[slot];
        invariant(input !== undefined, () => `input slot ${slot} is not bound`);
        const raw = `in${slot}[${indexOf(input.layout)}]`;
        return input.dtype === "bool" ? convert(raw, { dtype: "u32", width }, { dtype: "bool", width }) : raw;
      },
    });
    b.line(...lines);
    spec.outputs.forEach((o, k) => {
      const value = exprs[k] ?? "";
      const from = spec.graph.node(o.node).dtype;
      let stored = convert(value, { dtype: from, width }, { dtype: o.dtype, width });
      if (o.dtype === "bool") stored = convert(stored, { dtype: "bool", width }, { dtype: "u32", width });
      const index = o.layout === undefined ? "i" : indexOf(o.layout);
      b.line(`${outNames[k] ?? ""}[${index}] = ${stored};`);
    });
  });

  if (!helpers.empty) helpers.emit(w);
  w.line(`@compute @workgroup_size(${wg})`);
  const source = finishSource(w.toString() + body.toString());
  return {
    kernel: { key, source, entryPoint: "main", label: spec.label },
    count: dispatch1d(Math.ceil(threads / wg), profile, spec.label),
  };
}
