/**
 * A profiling aid for the host path (issue "Speed at the hardware limit"): one of several loops,
 * timed, on the CPU backend or WebGPU, so that `node --cpu-prof .device/profile-host.mjs …` shows
 * where the host time goes and the printed figures give µs per op, per launch or per request.
 *
 * ```sh
 * node .device/profile-host.mjs record  cpu|webgpu [ops=20000]      # workload 5a: µs per recorded op
 * node .device/profile-host.mjs chain   cpu|webgpu [n=65536] [iterations=2000]   # µs per fused chain (one launch)
 * node .device/profile-host.mjs sum|rowsum|matmul cpu|webgpu [n] [iterations]  # the same loop: sum of n, row sum of [n/16384, 16384], n×n matmul
 * node .device/profile-host.mjs serving cpu|webgpu [requests=256] [inFlight=32] # req/s, µs per request (WEFT_PROBE_PRE=n: n dependent adds first)
 * WEFT_PROBE_SERVERS='[{…},{…}]' node .device/profile-host.mjs serving-ab webgpu [requests] [inFlight]  # server options A/B in one process
 * node .device/profile-host.mjs dependent cpu|webgpu [ops=10000]    # ms per loop of dependent adds + read
 * node .device/profile-host.mjs small cpu|webgpu [count=64] [n=16384]  # the CPU section's `small`: count chains of n, every output read; ms per round
 * node .device/profile-host.mjs train cpu|webgpu [steps=20] [wait=0]  # the training workload's steps (batch 256): ms per step, server counters per step; wait=1 waits after every step
 * ```
 *
 * @module
 */
import { Session } from "node:inspector/promises";
import { PerformanceObserver } from "node:perf_hooks";
import { requestWebGpuDevice, type WebGpuServerOptions, type WebGpuServerStats } from "@weft/backend-webgpu";
import { Stream } from "@weft/environment";
import { type Device, type Tensor, tensor, tidy } from "@weft/tensor";
import { createCpuDevice } from "@weft/weft";
import { MLP_DIMS, mlpInputs, mlpWeights, perTaskStreams, weftMlpLogits, weftMlpWeights, weftRequest } from "./harness/mlp.js";
import { createWeftVariant } from "./peers/weft.js";
import { weftChain } from "./workloads/chain.js";
import { weftDependentAdds } from "./workloads/dependent.js";
import { round as serveRound } from "./workloads/serving.js";
import { trainingBatch, weftTrainer } from "./workloads/training.js";

const [mode = "record", backend = "cpu", a, b] = process.argv.slice(2);

async function device(): Promise<{ device: Device; settle: () => Promise<void>; stats: () => WebGpuServerStats | undefined; blocks: () => string }> {
  if (backend === "cpu") return { device: createCpuDevice(), settle: async () => {}, stats: () => undefined, blocks: () => "" };
  // WEFT_PROBE_SERVER: the WebGPU server's options as JSON (e.g. '{"maxPendingBytes":1073741824}').
  const options = process.env["WEFT_PROBE_SERVER"] === undefined ? undefined : (JSON.parse(process.env["WEFT_PROBE_SERVER"]) as WebGpuServerOptions);
  const w = await createWeftVariant(await requestWebGpuDevice({ backend: "auto" }), true, options);
  const blocks = (): string => {
    const log = w.fusion.inspector.executedBlocks;
    const sizes = new Map<string, number>();
    for (const b of log) {
      const k = `${b.name}:${b.kinds.length}(${b.kinds.filter((x) => x === "drop").length} drops)`;
      sizes.set(k, (sizes.get(k) ?? 0) + 1);
    }
    w.fusion.inspector.clearLog();
    return `${[...sizes].map(([k, n]) => `${n}× ${k}`).join(", ")}; ${w.fusion.inspector.plans} plans cached, ${w.fusion.inspector.explorations} explorations so far`;
  };
  return { device: w.device, settle: w.settle, stats: () => w.server.stats(), blocks };
}

const { device: d, settle, stats, blocks } = await device();
/** `PROFILE_BLOCKS=1`: print the executed blocks (name:ops) after each loop. */
const showBlocks = process.env["PROFILE_BLOCKS"] === "1";

/** The server's submits, dispatches, read batches and maps since `before`, per `per` (WebGPU only). */
function counters(before: WebGpuServerStats | undefined, per: number, unit: string): string {
  const now = stats();
  if (before === undefined || now === undefined) return "";
  const f = (k: "submits" | "dispatches" | "readBatches" | "readMaps" | "buffersCreated" | "buffersReused" | "bindGroups"): string => ((now[k] - before[k]) / per).toFixed(2);
  // Rare events (a stall's usual causes) as totals: a per-unit 0.00 would hide them.
  const t = (k: "pipelines" | "deferredLaunches" | "fallbacks" | "buffersCreated" | "bindGroups"): number => now[k] - before[k];
  return `; per ${unit}: ${f("submits")} submits, ${f("dispatches")} dispatches, ${f("readBatches")} read batches, ${f("readMaps")} maps, ${f("buffersCreated")} buffers created, ${f("buffersReused")} reused, ${f("bindGroups")} bind groups created; in all: ${t("pipelines")} pipelines created, ${t("deferredLaunches")} launches waited for one, ${t("fallbacks")} fallbacks, ${t("buffersCreated")} buffers and ${t("bindGroups")} bind groups created`;
}

/**
 * WEFT_PROBE_NATIVE=1: times every call of a WebGPU method (device, queue, encoder, pass, buffer)
 * from here on, by wrapping the binding's prototypes, and `report(units)` prints calls and µs per
 * unit. The wrapper adds ~0.1 µs per call; read the split, not the total. Off: `undefined`.
 */
function nativeCalls(): { report(units: number, unit: string): void } | undefined {
  if (process.env["WEFT_PROBE_NATIVE"] !== "1") return undefined;
  const stats = new Map<string, { n: number; ms: number }>();
  const restore: (() => void)[] = [];
  for (const name of ["GPUDevice", "GPUQueue", "GPUCommandEncoder", "GPUComputePassEncoder", "GPUBuffer"]) {
    const cls = (globalThis as Record<string, unknown>)[name] as { prototype: Record<string, unknown> } | undefined;
    if (cls === undefined) continue;
    for (const method of Object.getOwnPropertyNames(cls.prototype)) {
      const d = Object.getOwnPropertyDescriptor(cls.prototype, method);
      if (d === undefined || typeof d.value !== "function" || method === "constructor") continue;
      const f = d.value as (...args: unknown[]) => unknown;
      const key = `${name}.${method}`;
      cls.prototype[method] = function (this: unknown, ...args: unknown[]): unknown {
        const t = performance.now();
        try {
          return f.apply(this, args);
        } finally {
          const s = stats.get(key) ?? { n: 0, ms: 0 };
          s.n++;
          s.ms += performance.now() - t;
          stats.set(key, s);
        }
      };
      restore.push(() => {
        cls.prototype[method] = f;
      });
    }
  }
  return {
    report(units, unit) {
      for (const r of restore) r();
      let total = 0;
      for (const [key, s] of [...stats].sort((a, b) => b[1].ms - a[1].ms)) {
        total += s.ms;
        console.log(`  ${key.padEnd(40)} ${(s.n / units).toFixed(2).padStart(6)} calls/${unit} ${((s.ms * 1000) / s.n).toFixed(2).padStart(8)} µs/call ${((s.ms * 1000) / units).toFixed(2).padStart(8)} µs/${unit}`);
      }
      console.log(`  every WebGPU call: ${((total * 1000) / units).toFixed(1)} µs/${unit}`);
    },
  };
}

/** Workload 5a's loop: `ops` adds on 16 elements, 10 per `tidy`; host time only. */
async function record(ops: number): Promise<void> {
  const x = tensor(new Float32Array(16).fill(0.5), { device: d, shape: [16] });
  const once = (): number => {
    const start = performance.now();
    for (let i = 0; i < ops; i += 10) {
      tidy(() => {
        let y = x;
        for (let j = 0; j < 10; j++) y = y.add(1);
        return undefined;
      });
    }
    return performance.now() - start;
  };
  once();
  await d.sync();
  const times: number[] = [];
  const before = stats();
  for (let k = 0; k < 5; k++) {
    times.push(once());
    await d.sync();
  }
  times.sort((p, q) => p - q);
  console.log(`record on ${d.label}: ${((times[2]! / ops) * 1000).toFixed(2)} µs/op (median of 5 × ${ops} ops)${counters(before, 5 * ops, "op")}`);
  if (showBlocks) console.log(`  blocks (last logged): ${blocks()}`);
  x.dispose();
}

/** Where a step's time goes: recording, the synchronous part of `sync()` (executing what was recorded), and the wait. */
interface Split {
  record: number;
  execute: number;
  wait: number;
}

/** Records `count` outputs of `produce`, then one awaited sync; adds each phase's time to `split`; returns the outputs (kept alive until the wait). */
async function splitStep(produce: () => Tensor, count: number, split: Split): Promise<Tensor[]> {
  const kept: Tensor[] = [];
  const t0 = performance.now();
  for (let j = 0; j < count; j++) kept.push(produce());
  const t1 = performance.now();
  const done = d.sync();
  const t2 = performance.now();
  await done;
  split.record += t1 - t0;
  split.execute += t2 - t1;
  split.wait += performance.now() - t2;
  return kept;
}

/**
 * One producer in a loop (newest output kept, one non-awaited sync per iteration), like the
 * bench's throughput method: the fused chain over `n` elements, `sum` of `n`, the row sum of
 * `[n / 16384, 16384]`, or the matmul of two `[n, n]`.
 */
async function loop(kind: "chain" | "sum" | "rowsum" | "matmul", n: number, iterations: number): Promise<void> {
  const shape = kind === "rowsum" ? [n / 16384, 16384] : kind === "matmul" ? [n, n] : [n];
  const count = shape.reduce((p, q) => p * q, 1);
  const x = tensor(new Float32Array(count).fill(0.25), { device: d, shape });
  const produce = (): Tensor => (kind === "chain" ? weftChain(x) : kind === "sum" ? x.sum() : kind === "rowsum" ? x.sum(1) : x.matmul(x));
  let outs: Tensor[] = [];
  // WEFT_PROBE_BATCH=k: record k outputs, keep them, then one awaited sync (host time then includes the waits).
  const batch = Number(process.env["WEFT_PROBE_BATCH"] ?? 0);
  const once = async (steps: number): Promise<void> => {
    const before = stats();
    const start = performance.now();
    if (batch > 0) {
      // The bench's reduction loop: `batch` outputs recorded back to back and kept, one wait.
      // Where a batch's time goes: recording, the synchronous part of `sync()` (executing what
      // was recorded: host work, with the device's submits), and the wait for the device.
      const split: Split = { record: 0, execute: 0, wait: 0 };
      for (let i = 0; i < steps; i += batch) for (const o of await splitStep(produce, batch, split)) o.dispose();
      const us = (ms: number): string => ((ms / steps) * 1000).toFixed(1);
      console.log(`  per iteration: record ${us(split.record)} µs, execute ${us(split.execute)} µs, wait ${us(split.wait)} µs`);
    } else {
      for (let i = 0; i < steps; i++) {
        outs.push(produce());
        void d.sync();
        if (outs.length > 1) outs.shift()?.dispose();
      }
    }
    const host = performance.now() - start;
    await d.sync();
    const total = performance.now() - start;
    console.log(`${kind} of [${shape}] on ${d.label}: ${((total / steps) * 1000).toFixed(1)} µs/iteration, host ${((host / steps) * 1000).toFixed(1)} µs/iteration${counters(before, steps, "iteration")}`);
  };
  await once(Math.min(50, iterations));
  await once(iterations);
  // The latency method: one wait per iteration (WEFT_PROBE_LATENCY=k iterations, 50 by default).
  const steps = Math.max(1, Math.min(iterations, Number(process.env["WEFT_PROBE_LATENCY"] ?? 50)));
  const native = nativeCalls();
  const split: Split = { record: 0, execute: 0, wait: 0 };
  const start = performance.now();
  for (let i = 0; i < steps; i++) for (const o of await splitStep(produce, 1, split)) o.dispose();
  const per = (ms: number): string => ((ms / steps) * 1000).toFixed(1);
  console.log(`${kind} of [${shape}] on ${d.label}, one wait per iteration: ${per(performance.now() - start)} µs/iteration (record ${per(split.record)}, execute ${per(split.execute)}, wait ${per(split.wait)})`);
  native?.report(steps, "iteration");
  for (const o of outs) o.dispose();
  outs = [];
  x.dispose();
}

/**
 * `WEFT_PROBE_MODEL=logits`: the serving requests without the last softmax (three launches per
 * request instead of four): what one launch fewer per request is worth, at most, on this host.
 */
const logitsOnly = process.env["WEFT_PROBE_MODEL"] === "logits";

/** A serving request of the model's logits only (see {@link logitsOnly}). */
function logitsRequest(ws: readonly Tensor[], input: Float32Array): Promise<ArrayLike<number>> {
  return Stream.spawn(async () => {
    const x = tensor(input, { device: d, shape: [8, MLP_DIMS[0]] });
    const y = tidy(() => weftMlpLogits(x, ws));
    x.dispose();
    try {
      return (await y.data()) as ArrayLike<number>;
    } finally {
      y.dispose();
    }
  });
}

/**
 * `WEFT_PROBE_PRE=n`: before the serving rounds, what the bench's `dependent` workload does before
 * its `serving` workload — six times a `tidy` of `n` dependent adds on one f32 (all `n` alive
 * until the `tidy` ends), then a read. With n = 10,000 the serving rounds then promote whole
 * requests at every scavenge (docs/performance.md#bistable-promotion); run under `node
 * --min-semi-space-size=16 --trace-gc-nvp` and read `promoted=`.
 */
async function preDependent(n: number): Promise<void> {
  if (n === 0) return;
  const x = tensor(new Float32Array([0.5]), { device: d, shape: [1] });
  for (let r = 0; r < 6; r++) {
    const y = weftDependentAdds(x, n);
    await y.data();
    y.dispose();
  }
  x.dispose();
}

/** The serving workload: `requests` requests, `inFlight` at once, each on its own stream. */
async function serving(requests: number, inFlight: number): Promise<void> {
  await preDependent(Number(process.env["WEFT_PROBE_PRE"] ?? 0));
  const ws = weftMlpWeights(d, mlpWeights());
  const inputs = mlpInputs(requests, 8);
  const latencies: number[] = [];
  const one = (i: number): Promise<ArrayLike<number>> => (logitsOnly ? logitsRequest(ws, inputs[i]!) : weftRequest(d, ws, inputs[i]!, 8));
  const round = async (): Promise<number> => {
    latencies.length = 0;
    return (await perTaskStreams(() => serveRound(one, requests, inFlight, latencies))).ms;
  };
  await round();
  await settle();
  // WEFT_PROBE_ROUNDS=k: timed rounds (3 by default).
  const rounds = Number(process.env["WEFT_PROBE_ROUNDS"] ?? 3);
  // GC pauses inside the timed rounds (count and ms, the longest), and the process's CPU time
  // (all threads: less sensitive than wall time to other processes sharing the cores).
  const gc = { count: 0, ms: 0, max: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.count++;
      gc.ms += e.duration;
      gc.max = Math.max(gc.max, e.duration);
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  // WEFT_PROBE_ALLOC=1: the bytes allocated per request in each round, from V8's sampling heap
  // profiler (every object, collected or not; it slows the round down: read µs from a run without it).
  const alloc = process.env["WEFT_PROBE_ALLOC"] === "1" ? new Session() : undefined;
  alloc?.connect();
  await alloc?.post("HeapProfiler.enable");
  for (let r = 0; r < rounds; r++) {
    const before = stats();
    Object.assign(gc, { count: 0, ms: 0, max: 0 });
    await alloc?.post("HeapProfiler.startSampling", { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    const native = r === rounds - 1 ? nativeCalls() : undefined;
    const cpu = process.cpuUsage();
    const ms = await round();
    native?.report(requests, "request");
    const used = process.cpuUsage(cpu);
    const sampled = alloc === undefined ? undefined : await alloc.post("HeapProfiler.stopSampling");
    const bytes = sampled === undefined ? "" : `; ${(sampledBytes(sampled.profile.head) / requests / 1024).toFixed(1)} KB allocated/request`;
    await new Promise((resolve) => setImmediate(resolve)); // the round's GC entries are delivered
    const cpuPerRequest = (used.user + used.system) / requests;
    const sorted = latencies.sort((p, q) => p - q);
    const at = (q: number): string => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN).toFixed(2);
    console.log(`serving on ${d.label}: ${((requests * 1000) / ms).toFixed(0)} req/s, ${((ms / requests) * 1000).toFixed(0)} µs/request (${inFlight} in flight), latency p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms; ${cpuPerRequest.toFixed(0)} µs CPU/request; GC ${gc.count}× ${gc.ms.toFixed(1)} ms (longest ${gc.max.toFixed(1)} ms)${bytes}${counters(before, requests, "request")}`);
    if (showBlocks) console.log(`  blocks (last logged): ${blocks()}`);
  }
  observer.disconnect();
  alloc?.disconnect();
  for (const t of ws) t.dispose();
}

/**
 * `serving-ab`: the serving rounds on one server per option set of `WEFT_PROBE_SERVERS` (a JSON
 * array of `WebGpuServerOptions`), in turns — a round on each, then again — in one process:
 * `WEFT_PROBE_WARMUP` rounds each (10 by default), then `WEFT_PROBE_ROUNDS` timed ones (20).
 * Why: on the H200's host one setting's req/s moved 3,300–6,700 between processes (run ea,
 * BENCHMARKS.md), more than any setting's effect; in one process every setting shares the JIT's
 * state, the GC and the machine's moment. Prints each setting's median req/s (and range), p50
 * and p99 over its timed requests.
 */
async function servingAb(requests: number, inFlight: number): Promise<void> {
  const configs = JSON.parse(process.env["WEFT_PROBE_SERVERS"] ?? "[{}]") as WebGpuServerOptions[];
  const inputs = mlpInputs(requests, 8);
  const setups: { label: string; device: Device; ws: Tensor[]; settle: () => Promise<void>; rates: number[]; latencies: number[] }[] = [];
  for (const options of configs) {
    const w = await createWeftVariant(await requestWebGpuDevice({ backend: "auto" }), true, options);
    setups.push({ label: JSON.stringify(options), device: w.device, ws: weftMlpWeights(w.device, mlpWeights()), settle: w.settle, rates: [], latencies: [] });
  }
  const round = async (device: Device, ws: readonly Tensor[], latencies: number[] | undefined): Promise<number> =>
    (await perTaskStreams(() => serveRound((i) => weftRequest(device, ws, inputs[i]!, 8), requests, inFlight, latencies))).ms;
  const warmup = Number(process.env["WEFT_PROBE_WARMUP"] ?? 10);
  const rounds = Number(process.env["WEFT_PROBE_ROUNDS"] ?? 20);
  for (let r = 0; r < warmup; r++) for (const s of setups) await round(s.device, s.ws, undefined);
  for (const s of setups) await s.settle();
  for (const s of setups) await round(s.device, s.ws, undefined);
  for (let r = 0; r < rounds; r++) {
    for (const s of setups) s.rates.push((requests * 1000) / (await round(s.device, s.ws, s.latencies)));
  }
  const at = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  for (const s of setups) {
    const rates = [...s.rates].sort((p, q) => p - q);
    const lat = [...s.latencies].sort((p, q) => p - q);
    console.log(`serving-ab ${s.label}: ${at(rates, 0.5).toFixed(0)} req/s (median of ${rates.length} rounds, ${rates[0]?.toFixed(0)}–${rates[rates.length - 1]?.toFixed(0)}), p50 ${at(lat, 0.5).toFixed(2)} ms, p99 ${at(lat, 0.99).toFixed(2)} ms (${inFlight} in flight)`);
    for (const t of s.ws) t.dispose();
  }
}

/** The bytes a sampling heap profile's tree accounts for (its nodes' self sizes). */
function sampledBytes(node: { readonly selfSize: number; readonly children: readonly { readonly selfSize: number; readonly children: readonly unknown[] }[] }): number {
  let sum = node.selfSize;
  for (const child of node.children) sum += sampledBytes(child as typeof node);
  return sum;
}

/** Workload "dependent": `ops` dependent `add(1)` on one element inside a `tidy`, then its read. */
async function dependent(ops: number): Promise<void> {
  const x = tensor([0.5], { device: d, shape: [1] });
  for (let r = 0; r < 5; r++) {
    const before = stats();
    const start = performance.now();
    const y = tidy(() => {
      let t = x;
      for (let i = 0; i < ops; i++) t = t.add(1);
      return t;
    });
    const v = await y.data();
    const ms = performance.now() - start;
    y.dispose();
    if (v[0] !== 0.5 + ops) throw new Error(`dependent adds gave ${v[0]}, want ${0.5 + ops}`);
    console.log(`dependent on ${d.label}: ${ms.toFixed(1)} ms for ${ops} adds + read (${((ms / ops) * 1000).toFixed(2)} µs/op)${counters(before, 1, "loop")}`);
    if (showBlocks) console.log(`  blocks (last logged): ${blocks()}`);
  }
  x.dispose();
}

/**
 * The CPU section's `small` workload (bench/cpu/workloads.ts): the chain on `count` inputs of `n`
 * elements, then every output's `data()`, one round at a time; prints the median of 15 rounds
 * and the time per chain.
 */
async function small(count: number, n: number): Promise<void> {
  const xs = Array.from({ length: count }, (_, k) => tensor(new Float32Array(n).map((_, i) => Math.sin(i + k) * 3), { device: d, shape: [n] }));
  // Wall time and process CPU time (this process's threads together: on a loaded machine the CPU
  // time of a single-threaded round is the steadier figure).
  const round = async (): Promise<[number, number]> => {
    const cpu = process.cpuUsage();
    const start = performance.now();
    const outs = xs.map(weftChain);
    await Promise.all(outs.map((o) => o.data()));
    const ms = performance.now() - start;
    const used = process.cpuUsage(cpu);
    for (const o of outs) o.dispose();
    return [ms, (used.user + used.system) / 1000];
  };
  for (let r = 0; r < 5; r++) await round();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < 15; r++) {
    const [w, c] = await round();
    wall.push(w);
    cpu.push(c);
  }
  wall.sort((p, q) => p - q);
  cpu.sort((p, q) => p - q);
  const median = wall[7]!;
  console.log(`small (${count} chains of ${n}) on ${d.label}: ${median.toFixed(1)} ms per round (median of 15; min ${wall[0]!.toFixed(1)}), ${((median / count) * 1000).toFixed(0)} µs per chain; process CPU ${cpu[7]!.toFixed(1)} ms per round (min ${cpu[0]!.toFixed(1)})`);
  if (showBlocks) console.log(`  blocks (last logged): ${blocks()}`);
  for (const x of xs) x.dispose();
}

/**
 * The training workload's loop (`bench/workloads/training.ts`): 10 warm-up steps and a settle,
 * then rounds of `steps` steps, each round ending with one wait (or, `wait` = 1, a wait after
 * every step); ms per step and the server's counters per step (bind groups created show whether
 * a step's launches find their bind groups again).
 */
async function train(steps: number, waitEach: boolean): Promise<void> {
  const trainer = weftTrainer(d, mlpWeights(), trainingBatch(256), 256);
  for (let i = 0; i < 10; i++) trainer.step();
  await trainer.wait();
  await settle();
  const rounds = Number(process.env["WEFT_PROBE_ROUNDS"] ?? 5);
  for (let r = 0; r < rounds; r++) {
    const before = stats();
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) {
      trainer.step();
      if (waitEach) await trainer.wait();
    }
    await trainer.wait();
    const ms = performance.now() - t0;
    console.log(`train on ${d.label}: ${(ms / steps).toFixed(2)} ms per step (${steps} steps${waitEach ? ", a wait after each" : ", one wait"})${counters(before, steps, "step")}`);
  }
  trainer.dispose();
}

if (mode === "record") await record(Number(a ?? 20_000));
else if (mode === "chain" || mode === "sum" || mode === "rowsum" || mode === "matmul") await loop(mode, Number(a ?? 1 << 16), Number(b ?? 2000));
else if (mode === "serving") await serving(Number(a ?? 256), Number(b ?? 32));
else if (mode === "serving-ab") await servingAb(Number(a ?? 256), Number(b ?? 32));
else if (mode === "dependent") await dependent(Number(a ?? 10_000));
else if (mode === "small") await small(Number(a ?? 64), Number(b ?? 16_384));
else if (mode === "train") await train(Number(a ?? 20), b === "1");
else throw new Error(`unknown mode '${mode}' (record, chain, sum, rowsum, matmul, serving, serving-ab, dependent, small, train)`);
await d.syncAll();
process.exit(0);
