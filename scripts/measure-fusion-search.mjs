#!/usr/bin/env node
// The figures of BENCHMARKS.md, "Fusion search", on the built packages (`npm run build`):
//
//   node scripts/measure-fusion-search.mjs [--backend cpu|webgpu] [--requests N]
//
// 1. The four sequences of the fusion-search issue (docs/fusion-search.md): kernels on their own
//    stream, Burn's way (every executed block but the unfused init/drop bookkeeping).
// 2. The serving workload (the demo's MLP 64→128→128→10, batch 8, `requests` concurrent tasks
//    after one warm-up request): kernels per request, and the demo's fused-block share (fused
//    blocks of all executed blocks, init/drop included, as `weft demo` prints it).
// 3. Persisted plans: a device with `planCache` serves one request, writes its plans, and a fresh
//    device (a restarted server) loads them and serves: explorations of each.
// Counts are the result; nothing is timed.
import { Stream } from "@weft/environment";
import { rand, randn, tensor, tidy } from "@weft/tensor";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createCpuDevice, createWebGpuDevice } from "../packages/weft/dist/index.js";

const { values: options } = parseArgs({ options: { backend: { type: "string", default: "cpu" }, requests: { type: "string", default: "32" } } });
const backend = options.backend;
const requests = Number(options.requests);
const create = (options = {}) => (backend === "cpu" ? Promise.resolve(createCpuDevice(options)) : createWebGpuDevice(options));
const device = await create();
const inspector = device.fusion.inspector;
const isKernel = (b) => !(b.fused === false && (b.name === "init" || b.name === "drop"));
const values = (shape, seed) => Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(seed * 7 + i) * 0.9);

const chainA = [(u) => u.add(1), (u) => u.exp(), (u) => u.mul(3), (u) => u.abs().sqrt()];
const chainB = [(u) => u.mul(2), (u) => u.neg(), (u) => u.abs(), (u) => u.add(1)];
const interleaved = ([x, y]) => {
  let a = x;
  let b = y;
  for (let i = 0; i < 4; i++) {
    a = chainA[i](a);
    b = chainB[i](b);
  }
  return [a, b];
};
const sequences = [
  ["x.add(1), independent y.sum(), x's chain .mul(2).exp()", [[64, 16], [32, 8]], ([x, y]) => { const a = x.add(1); const s = y.sum(); return [a.mul(2).exp(), s]; }],
  ["two 4-op chains, different shapes, interleaved", [[64, 16], [32, 8]], interleaved],
  ["the same two chains, same shape", [[64, 16], [64, 16]], interleaved],
  ["chain, unrelated matmul in the middle, chain continues", [[64, 16], [16, 16], [16, 16]], ([x, p, q]) => { const c = x.add(1).mul(2); const m = p.matmul(q); return [c.exp().neg(), m]; }],
];
console.log(`fusion search on ${device.label}`);
for (const [name, shapes, body] of sequences) {
  const inputs = shapes.map((shape, i) => tensor(values(shape, i + 1), { device, shape }));
  await device.syncAll();
  inspector.clearLog();
  const outputs = await Stream.spawn(async () => {
    const outs = tidy(() => body(inputs));
    for (const o of outs) await o.data();
    return outs;
  });
  const kernels = inspector.executedBlocks.filter(isKernel);
  console.log(`  ${name}: ${kernels.length} kernel(s) ${JSON.stringify(kernels.map((b) => `${b.fused ? "fused" : "unfused"} ${b.name}[${b.kinds.join(",")}]`))}`);
  for (const t of [...outputs, ...inputs]) t.dispose();
}

const model = (device) => tidy(() => ({
  w1: randn([64, 128], { device, seed: 11 }).mul(1 / 8),
  b1: randn([128], { device, seed: 12 }).mul(0.1),
  w2: randn([128, 128], { device, seed: 13 }).mul(1 / Math.sqrt(128)),
  b2: randn([128], { device, seed: 14 }).mul(0.1),
  w3: randn([128, 10], { device, seed: 15 }).mul(1 / Math.sqrt(128)),
  b3: randn([10], { device, seed: 16 }).mul(0.1),
}));
const w = model(device);
const serveOn = async (device, w, i) => {
  const x = rand([8, 64], { device, seed: 1000 + i });
  const y = tidy(() => x.matmul(w.w1).add(w.b1).gelu().matmul(w.w2).add(w.b2).gelu().matmul(w.w3).add(w.b3).softmax(-1));
  x.dispose();
  try {
    return await y.data();
  } finally {
    y.dispose();
  }
};
const serve = (i) => serveOn(device, w, i);
await device.syncAll();
await Stream.spawn(() => serve(0));
const explored = inspector.explorations;
inspector.clearLog();
await Promise.all(Array.from({ length: requests }, (_, i) => Stream.spawn(() => serve(i + 1))));
const log = inspector.executedBlocks;
const kernels = log.filter(isKernel);
const fused = log.filter((b) => b.fused).length;
console.log(`  serving (${requests} concurrent requests): ${kernels.length / requests} kernels/request (${kernels.filter((b) => b.fused).length / requests} fused), explorations while serving ${inspector.explorations - explored}`);
console.log(`  demo fused-block share: ${fused} fused of ${log.length} executed blocks (${((100 * fused) / log.length).toFixed(1)}%)`);
console.log(`  one request: ${JSON.stringify(inspector.composition(log[log.length - 1].stream))}`);
for (const t of Object.values(w)) t.dispose();
await device.syncAll();

const directory = mkdtempSync(join(tmpdir(), "weft-plans-"));
const explorationsOfOneRequest = async () => {
  const d = await create({ planCache: { directory } });
  await d.fusion.planCache.load();
  const weights = model(d);
  await d.syncAll();
  const before = d.fusion.inspector.explorations;
  await Stream.spawn(() => serveOn(d, weights, 1));
  const explored = d.fusion.inspector.explorations - before;
  for (const t of Object.values(weights)) t.dispose();
  await d.syncAll();
  await d.fusion.planCache.flush();
  const plans = d.fusion.inspector.plans;
  d.dispose();
  return { explored, plans };
};
const first = await explorationsOfOneRequest();
const restarted = await explorationsOfOneRequest();
rmSync(directory, { recursive: true, force: true });
console.log(`  persisted plans: first process ${first.explored} explorations (${first.plans} plans written), restarted process ${restarted.explored} explorations`);
process.exit(0);
