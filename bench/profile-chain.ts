/**
 * A profiling aid for the GPU machine: the fused 8-op chain of workload 1 in a loop (keep the
 * newest output, one non-awaited sync per iteration, one wait at the end), timed, so that
 * `node --cpu-prof .device/profile-chain.mjs` shows where the host time per iteration goes.
 *
 * @module
 */
import { requestWebGpuDevice } from "@weft/backend-webgpu";
import { tensor, type Tensor } from "@weft/tensor";
import { createWeftVariant } from "./peers/weft.js";
import { weftChain } from "./workloads/chain.js";

const n = Number(process.argv[2] ?? 1 << 24);
const iterations = Number(process.argv[3] ?? 300);
const gpu = await requestWebGpuDevice({ backend: "auto" });
const w = await createWeftVariant(gpu, true);
const x = tensor(new Float32Array(n).fill(0.25), { device: w.device, shape: [n] });
let outs: Tensor[] = [];
const loop = async (count: number): Promise<number> => {
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    outs.push(weftChain(x));
    void w.device.sync();
    if (outs.length > 1) outs.shift()?.dispose();
  }
  const host = performance.now() - start;
  await w.device.sync();
  const total = performance.now() - start;
  console.log(`chain 2^${Math.log2(n)}: ${((total / count) * 1000).toFixed(1)} µs/iteration, host ${((host / count) * 1000).toFixed(1)} µs/iteration`);
  return total;
};
await loop(20);
await loop(iterations);
for (const o of outs) o.dispose();
outs = [];
x.dispose();
await w.device.sync();
