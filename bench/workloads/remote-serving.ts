/**
 * Workload "remote": the serving workload through `weft serve` on localhost — the demo's MLP
 * (64→128→128→10, batch 8, shared weights), 256 requests with 32 in flight, each on its own stream
 * (`Stream.spawn`), each reading its result — run locally, through one server, and through a
 * router over two servers, all on this machine. Requests/s and p50/p99 latency, steady state after
 * a warm-up round; remote results are checked against the local ones.
 *
 * The servers are `weft serve --backend auto` processes started from the CLI bundle next to this
 * one (`.device/weft-cli.mjs`), on 127.0.0.1, and always stopped. The local device is the one
 * `init({ backend: "auto" })` picks, so both sides compute on the same backend.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Stream, getStreamPolicy, setStreamPolicy } from "@weft/environment";
import { type Device, type Tensor, rand, randn, tidy } from "@weft/tensor";
import { chooseDevice } from "@weft/weft";
import { createRemoteDevice, type RemoteDevice } from "@weft/remote";
import type { BenchContext } from "../context.js";
import { percentile } from "./serving.js";

const INPUT = 64;
const HIDDEN = 128;
const CLASSES = 10;
const TOKEN = "weft-bench";

/** The shape of the run: requests, how many in flight, rows per request. */
export interface ServingShape {
  readonly requests: number;
  readonly inFlight: number;
  readonly batch: number;
}

/** What one serving run measured. */
export interface ServingResult {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The outputs of requests 0 and 1, for the cross-check. */
  readonly first: readonly Float32Array[];
}

interface Weights {
  readonly w: readonly Tensor[];
}

function weights(device: Device): Weights {
  return tidy(() => ({
    w: [
      randn([INPUT, HIDDEN], { device, seed: 11 }).mul(1 / Math.sqrt(INPUT)),
      randn([HIDDEN], { device, seed: 12 }).mul(0.1),
      randn([HIDDEN, HIDDEN], { device, seed: 13 }).mul(1 / Math.sqrt(HIDDEN)),
      randn([HIDDEN], { device, seed: 14 }).mul(0.1),
      randn([HIDDEN, CLASSES], { device, seed: 15 }).mul(1 / Math.sqrt(HIDDEN)),
      randn([CLASSES], { device, seed: 16 }).mul(0.1),
    ],
  }));
}

async function request(device: Device, { w }: Weights, index: number, batch: number): Promise<Float32Array> {
  const [w1, b1, w2, b2, w3, b3] = w as [Tensor, Tensor, Tensor, Tensor, Tensor, Tensor];
  const y = tidy(() => rand([batch, INPUT], { device, seed: 1000 + index }).matmul(w1).add(b1).gelu().matmul(w2).add(b2).gelu().matmul(w3).add(b3).softmax(-1));
  try {
    return (await y.data()) as Float32Array;
  } finally {
    y.dispose();
  }
}

/** `shape.requests` requests with `shape.inFlight` in flight, each in `Stream.spawn`. */
async function serveAll(device: Device, w: Weights, shape: ServingShape, offset: number): Promise<{ latencies: number[]; outputs: Map<number, Float32Array>; ms: number }> {
  const latencies: number[] = [];
  const outputs = new Map<number, Float32Array>();
  let next = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < shape.requests) {
      const i = next++;
      const t0 = performance.now();
      const out = await Stream.spawn(() => request(device, w, offset + i, shape.batch));
      latencies.push(performance.now() - t0);
      if (i < 2) outputs.set(i, out);
    }
  };
  await Promise.all(Array.from({ length: shape.inFlight }, worker));
  return { latencies, outputs, ms: performance.now() - started };
}

/** Runs the serving workload on `device`: one warm-up round, then the timed round. */
export async function runServing(device: Device, shape: ServingShape): Promise<ServingResult> {
  const policy = getStreamPolicy();
  setStreamPolicy("per-task");
  const w = weights(device);
  try {
    await serveAll(device, w, { ...shape, requests: Math.min(shape.requests, 64) }, 0);
    const { latencies, outputs, ms } = await serveAll(device, w, shape, 0);
    const sorted = [...latencies].sort((a, b) => a - b);
    return {
      requestsPerSecond: (shape.requests * 1000) / ms,
      p50Ms: percentile(sorted, 0.5),
      p99Ms: percentile(sorted, 0.99),
      first: [outputs.get(0) ?? new Float32Array(), outputs.get(1) ?? new Float32Array()],
    };
  } finally {
    for (const t of w.w) t.dispose();
    await device.syncAll();
    setStreamPolicy(policy);
  }
}

/** A running `weft serve` started from the CLI bundle. */
interface Served {
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts `weft serve --port 0 --host 127.0.0.1 --backend auto` from `cli` (a bundle or dist/cli.js). */
export async function startServing(cli: string): Promise<Served> {
  const child = spawn(process.execPath, [cli, "serve", "--port", "0", "--host", "127.0.0.1", "--backend", "auto"], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WEFT_TOKEN: TOKEN },
  });
  let text = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`weft serve did not start within 60 s: ${text}`)), 60_000);
    const look = (d: string): void => {
      text += d;
      const m = /listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(text);
      if (m === null) return;
      clearTimeout(timer);
      resolve(Number(m[1]));
    };
    child.stdout.setEncoding("utf8").on("data", look);
    child.stderr.setEncoding("utf8").on("data", (d: string) => (text += d));
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`weft serve exited with ${String(code)}: ${text}`));
    });
  });
  return {
    url: `ws://127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      const kill = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(kill);
    },
  };
}

/** The largest absolute difference between the remote and local outputs of requests 0 and 1. */
function maxDiff(a: readonly Float32Array[], b: readonly Float32Array[]): number {
  let m = 0;
  a.forEach((x, k) => x.forEach((v, i) => (m = Math.max(m, Math.abs(v - ((b[k] as Float32Array)[i] ?? Number.NaN))))));
  return m;
}

/** Runs the workload: local, one server, two servers; records requests/s, p50 and p99. */
export async function runRemoteServing(ctx: BenchContext): Promise<void> {
  const shape: ServingShape = { requests: 256, inFlight: 32, batch: 8 };
  const size = `MLP 64→128→128→10, batch 8, ${shape.requests} requests, ${shape.inFlight} in flight`;
  const cli = fileURLToPath(new URL("./weft-cli.mjs", import.meta.url));
  if (!existsSync(cli)) {
    ctx.report.add({ workload: "remote", variant: "(workload)", method: "count", size, status: `unavailable: ${cli} is missing (npm run bench bundles it)` });
    return;
  }
  const record = (variant: string, r: ServingResult, check: string): void => {
    ctx.report.add({ workload: "remote", variant, method: "throughput", size, status: "ok", ms: 1000 / r.requestsPerSecond, value: r.requestsPerSecond, unit: "req/s", check });
    ctx.report.add({ workload: "remote", variant: `${variant} p50`, method: "latency", size, status: "ok", ms: r.p50Ms });
    ctx.report.add({ workload: "remote", variant: `${variant} p99`, method: "latency", size, status: "ok", ms: r.p99Ms });
  };
  const local = await chooseDevice({ backend: "auto" });
  const base = await runServing(local.device, shape);
  record(`local (${local.backend})`, base, "reference");
  const servers = await Promise.all([startServing(cli), startServing(cli)]);
  try {
    for (const urls of [servers.slice(0, 1), servers]) {
      const device: RemoteDevice = await createRemoteDevice({ url: urls.map((s) => s.url), token: TOKEN });
      try {
        const r = await runServing(device, shape);
        const diff = maxDiff(r.first, base.first);
        record(`remote, ${urls.length} server${urls.length > 1 ? "s" : ""}`, r, diff <= 1e-3 ? `ok (max diff ${diff.toExponential(1)})` : `WRONG: max diff ${diff}`);
        ctx.report.ratio(
          "remote",
          `remote ${urls.length} server(s) / local, requests/s`,
          ctx.report.find("remote", `remote, ${urls.length} server${urls.length > 1 ? "s" : ""}`, "throughput", size),
          ctx.report.find("remote", `local (${local.backend})`, "throughput", size),
          { text: "(informative)", min: 0 },
          { info: true, id: `remote-${urls.length}-vs-local` },
        );
      } finally {
        device.close();
      }
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}
