import type { ExecutionContext, OperationIr } from "@weft/fusion";
import { numElements } from "@weft/fusion";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import { sortBlockSize, sortKernel, sortKey, type SortPass, type SortSpec } from "../kernels/sort.js";
import type { Launcher } from "./launcher.js";
import { bindingOf, bytesOf } from "./run-elementwise.js";

type SortOperation = Extract<OperationIr, { kind: "sort" }>;

/**
 * Runs a `sort` with the kernels of `kernels/sort.ts` (their doc says why and how): one dispatch
 * when a padded row fits a workgroup's block, else a block sort, the merge levels and a write,
 * through two scratch `u32` arrays (keys, positions) of `rows · P` entries freed right after.
 */
export function runSort(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, op: SortOperation): void {
  const input = ctx.handles.getHandle(op.input);
  const out = contiguousHandle(launcher.empty(bytesOf(op.out.shape, op.out.dtype), ctx.stream), op.out.shape, op.out.dtype);
  const n = op.input.shape[op.axis] ?? 0;
  if (numElements(op.out.shape) === 0) {
    // No output element (an empty axis, or k = 0): the output is still computed from the input.
    launcher.propagate([input.memory], [out.memory], ctx.stream);
  } else {
    let padded = 2;
    while (padded < n) padded *= 2;
    const limit = sortBlockSize(launcher.profile);
    const base = {
      input: { shape: input.shape, strides: input.strides, offset: input.offset },
      dtype: op.input.dtype,
      axis: op.axis,
      descending: op.descending,
      output: op.output,
      kept: op.out.shape[op.axis] ?? 0,
      padded,
      block: Math.min(padded, limit),
    } as const;
    const plan = (pass: SortPass) => {
      const spec: SortSpec = { ...base, pass };
      return launcher.plan(sortKey(spec, launcher.profile), () => sortKernel(spec, launcher.profile));
    };
    if (padded <= limit) {
      launcher.launch(plan({ kind: "rows" }), [bindingOf(input, "read"), bindingOf(out, "write")], ctx.stream);
    } else {
      const rows = numElements(op.input.shape) / n;
      const keys = launcher.empty(rows * padded * 4, ctx.stream);
      const positions = launcher.empty(rows * padded * 4, ctx.stream);
      try {
        const k = { binding: keys.binding(), access: "read-write" } as const;
        const p = { binding: positions.binding(), access: "read-write" } as const;
        launcher.launch(plan({ kind: "blocks" }), [bindingOf(input, "read"), { ...k, access: "write" }, { ...p, access: "write" }], ctx.stream);
        const global = plan({ kind: "global" });
        const local = plan({ kind: "local" });
        for (let level = 2 * limit; level <= padded; level *= 2) {
          for (let j = level / 2; j >= limit; j /= 2) launcher.launch(global, [k, p], ctx.stream, new Uint8Array(Uint32Array.of(level, j).buffer));
          launcher.launch(local, [k, p], ctx.stream, new Uint8Array(Uint32Array.of(level, 0).buffer));
        }
        const write = plan({ kind: "write" });
        const bindings = op.output === "indices" ? [{ ...p, access: "read" as const }, bindingOf(out, "write")] : [bindingOf(input, "read"), { ...p, access: "read" as const }, bindingOf(out, "write")];
        launcher.launch(write, bindings, ctx.stream);
      } finally {
        keys.release();
        positions.release();
      }
    }
  }
  ctx.handles.registerHandle(op.out.id, out);
  ctx.handles.free(op.input);
}
