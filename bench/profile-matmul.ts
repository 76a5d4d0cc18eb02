/**
 * A profiling aid for matmul tile configurations (issue "Speed at the hardware limit"): times named
 * configurations of the `vec4`/`register` kernels on one `n×n · n×n` product, outside the tuner, on
 * the runtime's own stream — single products each followed by a wait (every run's time printed),
 * then 20 products back to back and one wait.
 *
 * ```sh
 * node .device/profile-matmul.mjs 2048 vec416x16r8x8k16,vec416x16r8x8k16s4
 * ```
 *
 * @module
 */
import { createWebGpuRuntime, requestWebGpuDevice } from "@weft/backend-webgpu";
import { configName, MATMUL_CONFIGS, matmulCandidate, prepareMatmulInputs } from "@weft/backend-webgpu/internal";

const n = Number(process.argv[2] ?? 1024);
const names = (process.argv[3] ?? "vec416x16r8x8k16").split(",");
const gpu = await requestWebGpuDevice({ backend: "auto" });
const runtime = await createWebGpuRuntime({ device: gpu.device, fusion: true, autotune: false });
const client = runtime.client;
const inputs = prepareMatmulInputs(client, [n, n], [n, n], [n, n], "f32");
const candidates = names.map((name) => {
  const config = MATMUL_CONFIGS.find((c) => configName(c) === name);
  if (config === undefined) throw new Error(`no matmul config '${name}' (known: ${MATMUL_CONFIGS.map(configName).join(", ")})`);
  return matmulCandidate(config, runtime.profile, (_key, build) => build());
});
for (let round = 0; round < 3; round++) {
  for (const c of candidates) {
    const times: string[] = [];
    for (let i = 0; i < 12; i++) {
      const start = performance.now();
      const out = await c.run(inputs, client);
      await client.sync();
      times.push((performance.now() - start).toFixed(2));
      out.memory.release();
    }
    console.log(`${c.name.padEnd(22)} single runs (ms): ${times.join(" ")}`);
  }
}
for (const c of candidates) {
  const start = performance.now();
  for (let i = 0; i < 20; i++) (await c.run(inputs, client)).memory.release();
  await client.sync();
  console.log(`${c.name.padEnd(22)} back to back: ${((performance.now() - start) / 20).toFixed(3)} ms per product`);
}
inputs.lhs.memory.release();
inputs.rhs.memory.release();
process.exit(0);
