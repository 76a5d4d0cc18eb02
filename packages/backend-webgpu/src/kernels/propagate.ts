import { storageBinding } from "../codegen/wgsl/bindings.js";
import type { KernelLaunchPlan } from "./elementwise.js";

/**
 * A kernel that binds `bindings` storage buffers and does nothing: launched instead of an op that
 * has no element to compute (an empty output, a copy of an empty view), so the op still *reads*
 * its inputs and *writes* its outputs in the server's eyes. A failure (or a pending status check)
 * claiming an input then reaches the outputs through the server's taint, exactly as when a kernel
 * runs: an empty tensor computed from a failed `gather` fails at read on WebGPU as on the CPU,
 * whose kernels always run (`docs/semantics.md`, "Index errors").
 *
 * @remarks
 * **Binding layout.** `bindings` read-write `u32` arrays (every storage binding is writable at
 * the pipeline level anyway); one workgroup of one invocation. Keyed by the binding count only.
 */
export function propagateKernel(bindings: number): KernelLaunchPlan {
  const decls = Array.from({ length: bindings }, (_, i) => storageBinding(i, `b${i}`, "u32"));
  const source = [...decls, "", "@compute @workgroup_size(1)", "fn main() {}", ""].join("\n");
  return { kernel: { key: `propagate:${bindings}`, source, entryPoint: "main", label: "propagate (no elements)" }, count: [1, 1, 1] };
}
