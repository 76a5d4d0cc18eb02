import { invariant } from "@weft/environment";
import type { ExecutionContext, OperationIr } from "@weft/fusion";
import { numElements } from "@weft/fusion";
import { IndexOutOfRangeError } from "@weft/server";
import { ExprGraph } from "../codegen/wgsl/expr.js";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import { elementwiseKernel, elementwiseKey, type ElementwiseSpec } from "../kernels/elementwise.js";
import { gatherKernel, gatherKey, type GatherSpec } from "../kernels/gather.js";
import { distinctBindings } from "./distinct-bindings.js";
import type { Launcher } from "./launcher.js";
import { bindingOf, bytesOf } from "./run-elementwise.js";

type GatherOperation = Extract<OperationIr, { kind: "gather" }>;

/**
 * Runs a `gather` with the semantics table's index rule (`docs/semantics.md`, "Index errors"):
 * clears two status words, launches the gather kernel (which clamps every load into the buffer
 * and records an out-of-range index in the words), and has the server verify the words, so the
 * output — and everything computed from it — fails at read with an `IndexOutOfRangeError`
 * naming the index, exactly like the CPU backend whose kernel throws.
 *
 * @remarks
 * **Cost.** One extra tiny dispatch (the clear) per gather and 8 bytes read back with the stream's
 * next submit; the output is usable at once (the check only decides whether its reads succeed).
 * **Why verify, not clamp.** Clamping silently returns another element: a silent wrong result.
 */
export function runGather(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, op: GatherOperation): void {
  const out = contiguousHandle(launcher.empty(bytesOf(op.out.shape, op.out.dtype), ctx.stream), op.out.shape, op.out.dtype);
  const launches = numElements(op.out.shape) > 0;
  // An i32 tensor gathered by its own values would bind one allocation twice.
  const bound = distinctBindings(launcher, [ctx.handles.getHandle(op.input), ctx.handles.getHandle(op.indices)], ctx.stream, [], launches);
  const [input, indices] = bound.handles;
  invariant(input !== undefined && indices !== undefined, "a gather binds its input and its indices");
  if (launches) {
    const spec: GatherSpec = {
      input: { shape: input.shape, strides: input.strides, offset: input.offset },
      indices: { shape: indices.shape, strides: indices.strides, offset: indices.offset },
      dtype: op.out.dtype,
      axis: op.axis,
      outShape: op.out.shape,
    };
    const status = launcher.empty(8, ctx.stream);
    try {
      clearStatus(launcher, contiguousHandle(status, [2], "u32"), ctx);
      const plan = launcher.plan(gatherKey(spec, launcher.profile), () => gatherKernel(spec, launcher.profile));
      launcher.launch(plan, [bindingOf(input, "read"), bindingOf(indices, "read"), bindingOf(out, "write"), { binding: status.binding(), access: "read-write" }], ctx.stream);
      const size = op.input.shape[op.axis] ?? 0;
      const shape = [...op.input.shape];
      launcher.verify(
        {
          status: status.binding(),
          writes: [out.memory.binding()],
          what: "gather",
          decode: (words) => (words[0] === 0 ? undefined : new IndexOutOfRangeError("gather", (words[1] ?? 0) | 0, size, shape, op.axis)),
        },
        ctx.stream,
      );
    } finally {
      status.release();
    }
  } else {
    // No output element: the output is still computed from the input and the indices.
    launcher.propagate([input.memory, indices.memory], [out.memory], ctx.stream);
  }
  bound.release();
  ctx.handles.registerHandle(op.out.id, out);
  ctx.handles.free(op.input);
  ctx.handles.free(op.indices);
}

/** Writes 0 to both status words (a one-workgroup fill; the words are reused memory). */
export function clearStatus(launcher: Launcher, status: WebGpuHandle, ctx: ExecutionContext<WebGpuHandle>): void {
  const graph = new ExprGraph();
  const node = graph.constant(0, "u32");
  const spec: ElementwiseSpec = { shape: [2], graph, label: "clear status", inputs: [], outputs: [{ node, dtype: "u32" }] };
  const key = elementwiseKey(spec, launcher.profile);
  const plan = launcher.plan(key, () => elementwiseKernel(spec, launcher.profile, key));
  launcher.launch(plan, [bindingOf(status, "write")], ctx.stream);
}
