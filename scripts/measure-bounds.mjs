#!/usr/bin/env node
// The figures of docs/resource-bounds.md ("Measured"), on the built packages (`npm run build`):
//
//   node --expose-gc scripts/measure-bounds.mjs [--backend cpu|webgpu] [--tasks N] [--steps N] [--inits N]
//
// Run it with --expose-gc: a replaced device is destroyed at once, but its JavaScript wrapper
// (and the native objects behind it) go only when V8 collects it, and V8 does not see native
// memory, so without a forced GC the re-init RSS grows by a few MiB per init until V8 happens to
// collect (H200, 2026-11-29: +4.3 MiB per init without, flat with; every replaced GPUDevice
// wrapper was collected).
//
// 1. `steps` steps with a new scalar each (a decaying learning rate): pipelines held after the
//    first step and after the last (flat once kernels no longer embed scalar values).
// 2. `tasks` short tasks (Stream.spawn, per-task policy) borrowing the weights: live handles.
// 3. 32 finished tasks: bytes reserved, before and after releaseUnused().
// 4. A 64 MiB memoryLimit: the typed OutOfMemoryError, then the same allocation after freeing.
// 5. init() × `inits`: RSS after each (each init releases the device it replaces).
// Counts and states are the result; times are printed only as context.
import * as weft from "@weft/weft";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const backend = opt("backend", "cpu");
const tasks = Number(opt("tasks", "20000"));
const steps = Number(opt("steps", "600"));
const inits = Number(opt("inits", "10"));
const MiB = 1024 * 1024;
const mb = (b) => `${(b / MiB).toFixed(1)} MiB`;
const log = (line) => console.log(line);

async function freshDevice(extra = {}) {
  return weft.init({ backend, log: null, ...extra });
}

// 1. New scalar per step.
{
  const device = await freshDevice();
  weft.setStreamPolicy("single");
  const x = weft.tidy(() => weft.randn([64, 64], { seed: 1 }));
  let afterFirst = 0;
  for (let step = 0; step < steps; step++) {
    const lr = 0.1 * Math.pow(0.995, step);
    const y = weft.tidy(() => x.mul(lr).add(lr / 2).exp().sum());
    await y.data();
    y.dispose();
    if (step === 0) afterFirst = weft.stats().pipelines;
  }
  const s = weft.stats();
  log(`new scalar per step, ${steps} steps: pipelines held ${afterFirst} after step 1, ${s.pipelines} after step ${steps}; kernels generated ${s.kernelsGenerated}; evictions ${s.caches.pipelines?.evictions ?? s.caches.compiledKernels?.evictions ?? 0}`);
  x.dispose();
  void device;
}

// 2. Short tasks borrowing the weights.
{
  const device = await freshDevice();
  weft.setStreamPolicy("per-task");
  const w = weft.tidy(() => weft.randn([64, 128], { seed: 2 }).mul(0.1));
  const b = weft.tidy(() => weft.randn([128], { seed: 3 }).mul(0.1));
  await weft.syncAll();
  const before = weft.memory().liveHandles;
  let peak = before;
  const t0 = performance.now();
  for (let i = 0; i < tasks; i++) {
    await weft.Stream.spawn(async () => {
      const y = weft.tidy(() => weft.rand([8, 64], { seed: 1000 + i }).matmul(w).add(b).relu());
      await y.data();
      y.dispose();
    });
    if (i % 1000 === 0) peak = Math.max(peak, weft.memory().liveHandles);
  }
  const after = weft.memory().liveHandles;
  log(`${tasks} short tasks borrowing the weights: live handles ${before} before, ${after} after (peak ${peak}); views freed by their tasks ${weft.stats().viewsReleased} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  w.dispose();
  b.dispose();
  weft.setStreamPolicy("single");
  void device;
}

// 3. 32 finished tasks.
{
  const device = await freshDevice();
  weft.setStreamPolicy("per-task");
  await Promise.all(
    Array.from({ length: 32 }, (_, i) =>
      weft.Stream.spawn(async () => {
        const y = weft.tensor([i, i + 1, i + 2]);
        await y.data();
        y.dispose();
      }),
    ),
  );
  const held = weft.memory().bytesReserved;
  weft.releaseUnused();
  log(`32 finished tasks (12 bytes each): ${mb(held)} reserved; ${mb(weft.memory().bytesReserved)} after releaseUnused(); stream slots holding memory ${weft.memory().streams}`);
  weft.setStreamPolicy("single");
  void device;
}

// 4. A 64 MiB cap.
{
  await freshDevice({ memoryLimit: 64 * MiB });
  const n = (40 * MiB) / 4;
  const a = weft.ones([n]);
  await a.data();
  const b = weft.ones([n]);
  let outcome = "no error (the cap did not hold)";
  try {
    await b.data();
  } catch (error) {
    const root = error.root ?? error;
    outcome = `${root.constructor.name} (kind ${root.kind}, transient ${root.transient}): ${root.message.split(";")[0]}`;
  }
  b.dispose();
  a.dispose();
  const c = weft.tidy(() => weft.ones([n]).mul(2));
  const last = (await c.data())[n - 1];
  c.dispose();
  log(`64 MiB memoryLimit, two 40 MiB tensors: ${outcome}; after freeing, the same allocation gives ${last}; reserved ${mb(weft.memory().bytesReserved)}`);
}

// 5. Re-init.
{
  const rss = [];
  for (let i = 0; i < inits; i++) {
    await freshDevice();
    const y = weft.tidy(() => weft.ones([256, 256]).mul(i).sum());
    await y.data();
    y.dispose();
    globalThis.gc?.();
    rss.push(process.memoryUsage().rss);
  }
  log(`init() × ${inits}: RSS ${rss.map(mb).join(", ")}${globalThis.gc === undefined ? " (without --expose-gc: replaced devices wait for V8's GC, which does not see their native memory)" : ""}`);
}
weft.device().dispose();
