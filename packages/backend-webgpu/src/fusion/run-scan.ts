import { invariant } from "@weft/environment";
import type { ExecutionContext, OperationIr } from "@weft/fusion";
import { numElements } from "@weft/fusion";
import { IndexOutOfRangeError } from "@weft/server";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import { SCAN_BLOCK, WALK_CHUNK, scanKernel, scanKey, scatterKernel, scatterKey, type ScanPass, type ScanSpec, type ScatterSpec } from "../kernels/axis-walk.js";
import { copyInto, distinctBindings } from "./distinct-bindings.js";
import type { Launcher } from "./launcher.js";
import { bindingOf, bytesOf } from "./run-elementwise.js";
import { clearStatus } from "./run-gather.js";

type ScanOperation = Extract<OperationIr, { kind: "scan" }>;
type ScatterOperation = Extract<OperationIr, { kind: "scatter" }>;

/** The uniforms of one chunk launch (`kernels/axis-walk.ts`). */
function start(at: number): Uint8Array {
  return new Uint8Array(Uint32Array.of(at).buffer);
}

/**
 * Runs a `scan` with `kernels/axis-walk.ts`' passes: one serial pass per row up to
 * `SCAN_BLOCK`, else block totals, carries (in chunks of `WALK_CHUNK` blocks) and the blocks
 * folded from their carries, through two scratch arrays of `rows · blocks` elements.
 */
export function runScan(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, op: ScanOperation): void {
  const input = ctx.handles.getHandle(op.input);
  const out = contiguousHandle(launcher.empty(bytesOf(op.out.shape, op.out.dtype), ctx.stream), op.out.shape, op.out.dtype);
  const n = op.input.shape[op.axis] ?? 0;
  if (numElements(op.out.shape) === 0) {
    launcher.propagate([input.memory], [out.memory], ctx.stream);
  } else {
    const layout = { shape: input.shape, strides: input.strides, offset: input.offset };
    const plan = (pass: ScanPass) => {
      const spec: ScanSpec = { pass, op: op.op, input: layout, dtype: op.out.dtype, axis: op.axis };
      return launcher.plan(scanKey(spec, launcher.profile), () => scanKernel(spec, launcher.profile));
    };
    if (n <= SCAN_BLOCK) {
      launcher.launch(plan("serial"), [bindingOf(input, "read"), bindingOf(out, "write")], ctx.stream);
    } else {
      const blocks = Math.ceil(n / SCAN_BLOCK);
      const rows = numElements(op.input.shape) / n;
      const totals = contiguousHandle(launcher.empty(bytesOf([rows, blocks], op.out.dtype), ctx.stream), [rows, blocks], op.out.dtype);
      const carries = contiguousHandle(launcher.empty(bytesOf([rows, blocks], op.out.dtype), ctx.stream), [rows, blocks], op.out.dtype);
      try {
        launcher.launch(plan("totals"), [bindingOf(input, "read"), bindingOf(totals, "write")], ctx.stream);
        const carry = plan("carries");
        for (let at = 0; at < blocks; at += WALK_CHUNK) {
          // Later chunks read the carries the previous one wrote: read-write keeps their claims.
          launcher.launch(carry, [bindingOf(totals, "read"), bindingOf(carries, at === 0 ? "write" : "read-write")], ctx.stream, start(at));
        }
        launcher.launch(plan("apply"), [bindingOf(input, "read"), bindingOf(carries, "read"), bindingOf(out, "write")], ctx.stream);
      } finally {
        totals.memory.release();
        carries.memory.release();
      }
    }
  }
  ctx.handles.registerHandle(op.out.id, out);
  ctx.handles.free(op.input);
}

/**
 * Runs a `scatter`: copies the input into the output, then launches `kernels/axis-walk.ts`'
 * scatter kernel per chunk of the sources, with `gather`'s status check (`run-gather.ts`): an
 * out-of-range index makes the output fail at read with an `IndexOutOfRangeError`.
 */
export function runScatter(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, op: ScatterOperation): void {
  const input = ctx.handles.getHandle(op.input);
  const out = contiguousHandle(launcher.empty(bytesOf(op.out.shape, op.out.dtype), ctx.stream), op.out.shape, op.out.dtype);
  copyInto(launcher, input, out, undefined, ctx.stream, "scatter copy");
  const m = op.indices.shape[op.axis] ?? 0;
  const launches = numElements(op.indices.shape) > 0;
  // The indices and the sources may be one allocation (an i32 tensor scattered into by itself).
  const bound = distinctBindings(launcher, [ctx.handles.getHandle(op.indices), ctx.handles.getHandle(op.src)], ctx.stream, [out.memory], launches);
  const [indices, src] = bound.handles;
  invariant(indices !== undefined && src !== undefined, "a scatter binds its indices and its sources");
  if (launches) {
    const spec: ScatterSpec = {
      op: op.op,
      shape: op.input.shape,
      indices: { shape: indices.shape, strides: indices.strides, offset: indices.offset },
      src: { shape: src.shape, strides: src.strides, offset: src.offset },
      dtype: op.out.dtype,
      axis: op.axis,
    };
    const status = launcher.empty(8, ctx.stream);
    try {
      clearStatus(launcher, contiguousHandle(status, [2], "u32"), ctx);
      const plan = launcher.plan(scatterKey(spec, launcher.profile), () => scatterKernel(spec, launcher.profile));
      for (let at = 0; at < m; at += WALK_CHUNK) {
        launcher.launch(plan, [bindingOf(indices, "read"), bindingOf(src, "read"), bindingOf(out, "read-write"), { binding: status.binding(), access: "read-write" }], ctx.stream, start(at));
      }
      const size = op.input.shape[op.axis] ?? 0;
      const shape = [...op.input.shape];
      const what = op.op === "assign" ? "scatter" : "scatterAdd";
      launcher.verify(
        {
          status: status.binding(),
          writes: [out.memory.binding()],
          what,
          decode: (words) => (words[0] === 0 ? undefined : new IndexOutOfRangeError(what, (words[1] ?? 0) | 0, size, shape, op.axis)),
        },
        ctx.stream,
      );
    } finally {
      status.release();
    }
  } else {
    launcher.propagate([indices.memory, src.memory, out.memory], [out.memory], ctx.stream);
  }
  bound.release();
  ctx.handles.registerHandle(op.out.id, out);
  ctx.handles.free(op.input);
  ctx.handles.free(op.indices);
  ctx.handles.free(op.src);
}
