/**
 * TensorFlow.js 4.22 on the host, for the CPU section of the bench: its plain-JavaScript CPU
 * backend (`@tensorflow/tfjs-backend-cpu`) and its WebAssembly backend
 * (`@tensorflow/tfjs-backend-wasm`: XNNPACK, SIMD when the engine has it).
 *
 * @remarks
 * **One `tf`, two backends.** TF.js has one active backend per process; each variant calls
 * {@link TfHostPeer.use} before it sets up and before every timed sample is taken, so the two
 * backends run side by side in one run, like every other variant.
 * **The WebAssembly binaries** are read from `tfjs-wasm/` next to the bundle (`scripts/bench.mjs`
 * copies them there from the package), so the bundle needs nothing else at run time.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as tf from "@tensorflow/tfjs-core";
import { version_cpu } from "@tensorflow/tfjs-backend-cpu";
import { setWasmPaths } from "@tensorflow/tfjs-backend-wasm";

/** One TF.js backend on the host. */
export interface TfHostPeer {
  readonly tf: typeof tf;
  /** `"cpu"` or `"wasm"`. */
  readonly backend: string;
  /** What the backend runs with (`"wasm simd, 1 thread"`), for the report. */
  readonly flavour: string;
  /** Makes this backend the active one. */
  use(): Promise<void>;
}

async function activate(name: string): Promise<void> {
  if (tf.getBackend() === name) return;
  const ok = await tf.setBackend(name);
  if (!ok) throw new Error(`tf.setBackend('${name}') refused the backend`);
  await tf.ready();
}

/** TF.js's plain-JavaScript CPU backend. */
export async function createTfCpuPeer(): Promise<TfHostPeer> {
  await activate("cpu");
  // Naming an export keeps the bundler from dropping the module, whose import registers the backend.
  return { tf, backend: "cpu", flavour: `plain JavaScript (${version_cpu})`, use: () => activate("cpu") };
}

/** TF.js's WebAssembly backend, with its binaries from `tfjs-wasm/` beside the bundle. */
export async function createTfWasmPeer(): Promise<TfHostPeer> {
  const here = dirname(fileURLToPath(import.meta.url));
  const dir = join(here, "tfjs-wasm");
  if (!existsSync(join(dir, "tfjs-backend-wasm-simd.wasm"))) throw new Error(`no TF.js WebAssembly binaries in ${dir} (run the bench through scripts/bench.mjs)`);
  setWasmPaths(`${dir}/`);
  await activate("wasm");
  const simd = await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT");
  const threads = await tf.env().getAsync("WASM_HAS_MULTITHREAD_SUPPORT");
  return { tf, backend: "wasm", flavour: `WebAssembly${simd === true ? " SIMD" : ""}${threads === true ? ", multithreaded" : ", 1 thread"}`, use: () => activate("wasm") };
}
