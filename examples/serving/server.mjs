// @ts-check
// Concurrent serving with Weft: one model whose weights live once on the device, and an HTTP
// server that runs every request on its own stream (Stream.spawn under the per-task policy), so a
// slow request never holds up another's kernels and the shared weights are never copied.
//
//   npm install @weft/weft [webgpu]
//   node server.mjs                     # serve POST /predict on PORT (default 3000)
//   curl -d '{"input":[[0.1, ...16 numbers]]}' localhost:3000/predict
//   node server.mjs --self-test 64      # start on a free port, send 64 concurrent requests,
//                                       # check every answer against plain JavaScript, report
//                                       # latency and throughput, check nothing leaked, stop
import { createServer } from "node:http";
import * as weft from "@weft/weft";

const INPUT = 16;
const HIDDEN = 64;
const CLASSES = 4;
/** Largest accepted batch (rows) per request: bounds the memory one request can take. */
const MAX_ROWS = 256;
/** Batch sizes compiled at start-up (1..WARM_ROWS rows); the self-test sends these sizes. */
const WARM_ROWS = 8;

/** A small deterministic generator (mulberry32), so the model is the same on every backend. */
function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
}

/** Host copies of the weights (the self-test's reference uses them). */
function hostWeights() {
  const r = random(42);
  const fill = (n, scale) => Float32Array.from({ length: n }, () => r() * scale);
  return {
    w1: fill(INPUT * HIDDEN, 2 / Math.sqrt(INPUT)),
    b1: fill(HIDDEN, 0.2),
    w2: fill(HIDDEN * CLASSES, 2 / Math.sqrt(HIDDEN)),
    b2: fill(CLASSES, 0.2),
  };
}

/** The model on the device: uploaded once, shared by every request's stream. */
function deviceModel(host) {
  const model = {
    w1: weft.tensor(host.w1, { shape: [INPUT, HIDDEN] }),
    b1: weft.tensor(host.b1),
    w2: weft.tensor(host.w2, { shape: [HIDDEN, CLASSES] }),
    b2: weft.tensor(host.b2),
  };
  return {
    /** softmax(relu(x·W1 + b1)·W2 + b2) for a [rows, INPUT] batch; resolves the probabilities. */
    async predict(rows) {
      const x = weft.tensor(rows);
      const y = weft.tidy(() => x.matmul(model.w1).add(model.b1).relu().matmul(model.w2).add(model.b2).softmax(-1));
      x.dispose();
      try {
        return /** @type {number[][]} */ (await y.array());
      } finally {
        y.dispose();
      }
    },
    dispose() {
      for (const t of Object.values(model)) t.dispose();
    },
  };
}

/** The same model in plain JavaScript (float64), for the self-test. */
function referencePredict(host, rows) {
  return rows.map((x) => {
    const h = Array.from({ length: HIDDEN }, (_, j) => Math.max(0, x.reduce((acc, xi, i) => acc + xi * host.w1[i * HIDDEN + j], host.b1[j])));
    const z = Array.from({ length: CLASSES }, (_, k) => h.reduce((acc, hj, j) => acc + hj * host.w2[j * CLASSES + k], host.b2[k]));
    const m = Math.max(...z);
    const e = z.map((v) => Math.exp(v - m));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / sum);
  });
}

/** Validates a request body: `{ input: number[][] }` with INPUT columns and 1..MAX_ROWS rows. */
function parseInput(body) {
  const input = JSON.parse(body)?.input;
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_ROWS) throw new Error(`input must be 1..${MAX_ROWS} rows`);
  for (const row of input) {
    if (!Array.isArray(row) || row.length !== INPUT || !row.every((v) => typeof v === "number" && Number.isFinite(v))) {
      throw new Error(`every row must be ${INPUT} finite numbers`);
    }
  }
  return /** @type {number[][]} */ (input);
}

/** Starts the HTTP server; resolves it once listening. */
function startServer(model, port) {
  const server = createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/predict") {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "POST /predict" }));
      return;
    }
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      let rows;
      try {
        rows = parseInput(body);
      } catch (error) {
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: String(error) }));
        return;
      }
      // The request's own stream: its ops queue there, independent of every other request.
      weft.Stream.spawn(async () => ({ stream: weft.StreamId.current(), output: await model.predict(rows) })).then(
        (result) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result)),
        (error) => res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: String(error) })),
      );
    });
  });
  // Idle keep-alive connections stay open longer than Node's 5 s default: a client (or a load
  // balancer) reusing one would otherwise race the server closing it.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  return new Promise((resolve) => server.listen(port, "127.0.0.1", () => resolve(server)));
}

/** Sends `count` requests, `concurrency` at a time; checks every answer; prints a report. */
async function selfTest(host, port, count, concurrency) {
  const r = random(7);
  const inputs = Array.from({ length: count }, (_, i) => Array.from({ length: 1 + (i % WARM_ROWS) }, () => Array.from({ length: INPUT }, () => r() * 4)));
  const latencies = [];
  const streams = new Set();
  let worst = 0;
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const t0 = performance.now();
      const res = await fetch(`http://127.0.0.1:${port}/predict`, { method: "POST", body: JSON.stringify({ input: inputs[i] }) });
      const answer = await res.json();
      latencies.push(performance.now() - t0);
      if (res.status !== 200) throw new Error(`request ${i}: HTTP ${res.status} ${JSON.stringify(answer)}`);
      streams.add(answer.stream);
      const want = referencePredict(host, inputs[i]);
      want.forEach((row, a) => row.forEach((v, b) => (worst = Math.max(worst, Math.abs(v - answer.output[a][b])))));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const p = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(1);
  console.log(`served ${count} requests (${concurrency} in flight) in ${seconds.toFixed(2)} s: ${(count / seconds).toFixed(0)} requests/s, p50 ${p(0.5)} ms, p99 ${p(0.99)} ms`);
  console.log(`requests ran on ${streams.size} distinct streams; largest difference from plain JavaScript: ${worst.toExponential(2)}`);
  const bad = await fetch(`http://127.0.0.1:${port}/predict`, { method: "POST", body: JSON.stringify({ input: [[1, 2]] }) });
  console.log(`a malformed request gets HTTP ${bad.status}`);
  if (worst > 1e-4) throw new Error(`answers differ from the reference by ${worst}`);
  if (streams.size !== count) throw new Error(`expected ${count} distinct streams, saw ${streams.size}`);
  if (bad.status !== 400) throw new Error("a malformed request must be rejected with 400");
}

const selfTestIndex = process.argv.indexOf("--self-test");
const concurrencyIndex = process.argv.indexOf("--concurrency");
const device = await weft.init({ backend: /** @type {"auto" | "cpu" | "webgpu"} */ (process.env.WEFT_BACKEND ?? "auto") });
weft.setStreamPolicy("per-task"); // every Stream.spawn gets a fresh stream
const host = hostWeights();
const model = deviceModel(host);
// Compile (and autotune) the kernels of the batch sizes we expect before taking traffic: the
// launches are discarded, the pipelines stay cached. Other sizes compile on first use.
await weft.warmup(async () => {
  for (let rows = 1; rows <= WARM_ROWS; rows++) await model.predict(Array.from({ length: rows }, () => new Array(INPUT).fill(0)));
});
await weft.syncAll();
const baseline = weft.memory().liveTensors;

if (selfTestIndex === -1) {
  const port = Number(process.env.PORT ?? 3000);
  await startServer(model, port);
  console.log(`serving POST http://127.0.0.1:${port}/predict on ${device.label} ({"input": rows of ${INPUT} numbers})`);
} else {
  const count = Number(process.argv[selfTestIndex + 1] ?? 64);
  const concurrency = concurrencyIndex === -1 ? 16 : Number(process.argv[concurrencyIndex + 1]);
  const server = await startServer(model, 0);
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  try {
    await selfTest(host, port, count, concurrency);
  } finally {
    server.close();
  }
  await weft.syncAll();
  const leaked = weft.memory().liveTensors - baseline;
  model.dispose();
  await weft.syncAll();
  console.log(`tensors left by the requests: ${leaked}; after disposing the model: ${weft.memory().liveTensors} (${device.backend})`);
  if (leaked !== 0 || weft.memory().liveTensors !== 0) process.exitCode = 1;
}
