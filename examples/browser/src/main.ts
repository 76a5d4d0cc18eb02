/**
 * Weft in a page: `init()` takes WebGPU from `navigator.gpu` (Chrome, Edge, Safari 26+, Firefox
 * with WebGPU enabled) on a hardware adapter and the CPU backend otherwise (`?backend=webgpu`
 * insists on WebGPU, e.g. on a software adapter such as SwiftShader); nothing native is installed — the Node-only
 * `webgpu` package is an optional peer that browser bundles never include.
 *
 * The page writes what it computed into `#log`, the device into `#device`, and `done` or `failed`
 * into `#status[data-state]` (the example's test in CI reads those).
 */
import * as weft from "@weft/weft";

const log = document.querySelector<HTMLPreElement>("#log")!;
const status = document.querySelector<HTMLOutputElement>("#status")!;
const print = (line: string): void => {
  log.textContent += `${line}\n`;
};

/** `?backend=webgpu|cpu|auto` (default auto: WebGPU on a hardware adapter, else the CPU). */
function requestedBackend(): "auto" | "cpu" | "webgpu" {
  const asked = new URLSearchParams(location.search).get("backend");
  return asked === "webgpu" || asked === "cpu" ? asked : "auto";
}

async function run(): Promise<void> {
  const device = await weft.init({ backend: requestedBackend(), log: print });
  document.querySelector<HTMLOutputElement>("#device")!.value = `${device.backend}: ${device.label}`;

  // One fused kernel for the whole chain, run when it is read.
  const x = weft.linspace(-2, 2, 9);
  const y = weft.tidy(() => x.mul(x).add(1).sqrt().sub(1)); // sqrt(x² + 1) - 1
  const values = [...(await y.data())];
  print(`chain: ${values.map((v) => v.toFixed(4)).join(" ")}`);
  const expected = [-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2].map((v) => Math.sqrt(v * v + 1) - 1);
  const worst = Math.max(...values.map((v, i) => Math.abs(v - (expected[i] ?? NaN))));
  print(`largest difference from JavaScript: ${worst.toExponential(2)}`);

  // A small matmul and a reduction.
  const m = weft.tidy(() => weft.arange(0, 6).reshape([2, 3]).matmul(weft.ones([3, 2])));
  print(`matmul: ${JSON.stringify(await m.array())}`);

  // Streams in a browser: without AsyncContext a Stream.spawn scope holds until the task's first
  // await (then work records on the default stream) — results are the same, concurrency is lower.
  print(`async stream scopes survive await here: ${weft.Stream.asyncScopesSupported}`);

  for (const t of [x, y, m]) t.dispose();
  await weft.syncAll();
  print(`live tensors: ${weft.memory().liveTensors}`);
  if (!(worst < 1e-5)) throw new Error(`wrong result (difference ${worst})`);
}

run().then(
  () => {
    status.value = "done";
    status.dataset["state"] = "done";
  },
  (error: unknown) => {
    print(`error: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    status.value = "failed";
    status.dataset["state"] = "failed";
  },
);
