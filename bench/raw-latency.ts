/**
 * The floor of one round trip on this device, in raw WebGPU (no engine): what any library's
 * "record one kernel, wait for it" costs at least (issue "Speed at the hardware limit";
 * docs/performance.md#host-floors). Run on the GPU machine after `node scripts/bench.mjs
 * --bundle-only`:
 *
 * ```sh
 * node .device/raw-latency.mjs [rows=4096]
 * ```
 *
 * Prints, medians of 200 after 20 untimed: the row-sum kernel's throughput (50 dispatches per
 * submit: its time on the device); one one-invocation dispatch, `queue.submit`,
 * `onSubmittedWorkDone` (the round trip alone); the same with a `validation` error scope around
 * the submit (what Weft's server adds); one row-sum dispatch of `rows × 16384` f32 and its wait
 * (the bench's `rowsum` latency, raw); and that dispatch with a copy and a `mapAsync` read.
 *
 * @module
 */
import { requestWebGpuDevice } from "@weft/backend-webgpu";
import { median } from "./harness/measure.js";

const COLS = 16384;
const rows = Number(process.argv[2] ?? 4096);
const { device, limits } = await requestWebGpuDevice({ backend: "auto", powerPreference: "high-performance" });
/** Workgroup size of the row sum: 256, or the device's limit when lower (compatibility adapters). */
const wg = Math.min(256, limits.maxComputeInvocationsPerWorkgroup);
const x = device.createBuffer({ size: rows * COLS * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
const y = device.createBuffer({ size: rows * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });

const rowSum = device.createComputePipeline({
  layout: "auto",
  compute: {
    entryPoint: "main",
    module: device.createShaderModule({
      code: `
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
var<workgroup> part: array<f32, ${wg}>;
@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) l: u32) {
  let base = g.x * ${COLS / 4}u;
  var s = 0.0;
  for (var i = l; i < ${COLS / 4}u; i += ${wg}u) { let v = x[base + i]; s += v.x + v.y + v.z + v.w; }
  part[l] = s;
  workgroupBarrier();
  for (var k = ${wg / 2}u; k > 0u; k >>= 1u) { if (l < k) { part[l] += part[l + k]; } workgroupBarrier(); }
  if (l == 0u) { y[g.x] = part[0]; }
}`,
    }),
  },
});
const tiny = device.createComputePipeline({
  layout: "auto",
  compute: {
    entryPoint: "main",
    module: device.createShaderModule({ code: "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n@compute @workgroup_size(1) fn main() { y[0] = y[0] + 1.0; }" }),
  },
});
const rowSumGroup = device.createBindGroup({ layout: rowSum.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: x } }, { binding: 1, resource: { buffer: y } }] });
const tinyGroup = device.createBindGroup({ layout: tiny.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: y } }] });

/** One pass of `reps` dispatches of `pipeline`, its copy of `y` into `copyTo` after it when given. */
function encode(pipeline: GPUComputePipeline, group: GPUBindGroup, workgroups: number, reps = 1, copyTo?: GPUBuffer): GPUCommandBuffer {
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, group);
  for (let i = 0; i < reps; i++) pass.dispatchWorkgroups(workgroups);
  pass.end();
  if (copyTo !== undefined) encoder.copyBufferToBuffer(y, 0, copyTo, 0, rows * 4);
  return encoder.finish();
}

/** Median, 10th and 90th percentile (µs) of `step` over 200 timed runs after 20 untimed ones. */
async function timed(step: () => Promise<void>): Promise<string> {
  const t: number[] = [];
  for (let i = 0; i < 220; i++) {
    const start = performance.now();
    await step();
    if (i >= 20) t.push((performance.now() - start) * 1000);
  }
  t.sort((p, q) => p - q);
  const at = (q: number): string => (t[Math.floor(q * t.length)] as number).toFixed(1);
  return `median ${at(0.5)} µs, p10 ${at(0.1)}, p90 ${at(0.9)}`;
}

/** Submits `commands`, optionally inside a validation scope, and waits for the queue. */
async function submitAndWait(commands: GPUCommandBuffer, scope: boolean): Promise<void> {
  if (scope) device.pushErrorScope("validation");
  device.queue.submit([commands]);
  const error = scope ? device.popErrorScope() : undefined;
  await device.queue.onSubmittedWorkDone();
  await error;
}

{
  const per: number[] = [];
  for (let i = 0; i < 12; i++) {
    const start = performance.now();
    await submitAndWait(encode(rowSum, rowSumGroup, rows, 50), false);
    if (i >= 2) per.push(((performance.now() - start) * 1000) / 50);
  }
  console.log(`row sum ${rows}×${COLS} f32, 50 dispatches per submit: ${median(per).toFixed(1)} µs per dispatch`);
}
console.log(`one dispatch (1 invocation), submit, onSubmittedWorkDone: ${await timed(() => submitAndWait(encode(tiny, tinyGroup, 1), false))}`);
console.log(`the same inside a validation error scope: ${await timed(() => submitAndWait(encode(tiny, tinyGroup, 1), true))}`);
console.log(`one row sum dispatch, submit, onSubmittedWorkDone: ${await timed(() => submitAndWait(encode(rowSum, rowSumGroup, rows), false))}`);
console.log(`the same inside a validation error scope: ${await timed(() => submitAndWait(encode(rowSum, rowSumGroup, rows), true))}`);
const staging = device.createBuffer({ size: rows * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
console.log(
  `one row sum dispatch, a copy, mapAsync, a fresh array: ${await timed(async () => {
    device.queue.submit([encode(rowSum, rowSumGroup, rows, 1, staging)]);
    await staging.mapAsync(GPUMapMode.READ);
    new Float32Array(staging.getMappedRange()).slice();
    staging.unmap();
  })}`,
);
for (const b of [x, y, staging]) b.destroy();
device.destroy();
