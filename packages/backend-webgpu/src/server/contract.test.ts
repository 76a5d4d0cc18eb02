/**
 * The `ComputeServer` contract (`@weft/server/testing`) on the WebGPU server, over Dawn (Mesa's
 * software GLES here, Vulkan on a GPU machine): the same suite the host and dummy servers run.
 */
import { describeComputeServer, type ContractKernels } from "@weft/server/testing";
import type { WgslKernel } from "../kernel.js";
import { requestTestDevice } from "../testing/gpu-test-support.js";
import { WebGpuServer } from "./webgpu-server.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

const WORKGROUP = 64;

const kernels: ContractKernels<WgslKernel> = {
  increment(elements: number) {
    return {
      kernel: {
        key: "contract/increment-u32",
        source: `
@group(0) @binding(0) var<storage, read_write> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> output: array<u32>;
@compute @workgroup_size(${WORKGROUP}) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < arrayLength(&output) && g.x < arrayLength(&input)) { output[g.x] = input[g.x] + 1u; }
}`,
      },
      count: [Math.max(1, Math.ceil(elements / WORKGROUP)), 1, 1],
    };
  },
  invalid: {
    key: "contract/invalid",
    label: "contract/invalid",
    source: `
@group(0) @binding(0) var<storage, read_write> output: array<u32>;
@compute @workgroup_size(1) fn main() { output[0] = undeclaredName; }`,
  },
};

describeComputeServer("WebGpuServer", async () => {
  const gpu = await requestTestDevice();
  return { server: new WebGpuServer(gpu.device), kernels, dispose: () => gpu.device.destroy() };
});
