#!/usr/bin/env node
// `npm run bench [-- options]`: bundles bench/main.ts into .device/bench.mjs and runs it.
//
// The bundle carries everything but the `webgpu` package (Dawn, a native addon): the @weft/*
// packages are taken from their *sources* (no build needed), and TensorFlow.js and jax-js are
// bundled in, so the GPU machine needs nothing but `.device/` (see docs/performance.md#gpu-machine):
//
//   source .device/enter.sh; node .device/bench.mjs --backend vulkan --json .device/bench.json
//
// Options (passed through to the bundle; see BENCHMARKS.md):
//   --quick                     small sizes, for the software adapter (minutes on 2 cores)
//   --backend vulkan|opengles|auto|cpu   (cpu: the CPU section, Weft's CPU backend vs TF.js CPU and WebAssembly)
//   --json <file>               write every result as JSON
//   --only <name,...>           run only these workloads (chain, readback, reduction, matmul,
//                               host, dependent, small, serving, memory, remote)
//   --runs <n>                  n whole runs; each target reports its median and spread between runs
//   --isolate                   each library (raw, weft, tfjs, jax) in its own process, figures merged
//   --peers <names>             create only these libraries in this process
//   --bundle-only               bundle and stop (what you do before carrying .device to a GPU)
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outfile = join(root, ".device", "bench.mjs");
mkdirSync(dirname(outfile), { recursive: true });

/** `@weft/<pkg>` resolves to the package sources, as in vitest.shared.ts. */
const alias = {};
for (const pkg of readdirSync(join(root, "packages"))) {
  const src = join(root, "packages", pkg, "src", "index.ts");
  if (existsSync(src)) alias[`@weft/${pkg}`] = src;
  const internal = join(root, "packages", pkg, "src", "internal.ts");
  if (existsSync(internal)) alias[`@weft/${pkg}/internal`] = internal;
}
alias["@weft/tensor/testing/core"] = join(root, "packages", "tensor", "src", "testing", "core.ts");
alias["@weft/remote/server"] = join(root, "packages", "remote", "src", "server", "index.ts");

// The CPU backend's WebAssembly kernels are build outputs (packages/backend-cpu/scripts/build-wasm.mjs).
const wasm = spawnSync(process.execPath, [join(root, "packages", "backend-cpu", "scripts", "build-wasm.mjs")], { stdio: "inherit" });
if (wasm.status !== 0) process.exit(wasm.status ?? 1);

const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["webgpu"],
  alias,
  logLevel: "warning",
  // CommonJS pieces of the peers (tfjs node builds) call `require` for Node built-ins.
  // TF.js's WebAssembly loader (emscripten) reads `__dirname` in Node: give the bundle its own.
  banner: {
    js:
      "import { createRequire as __weftCreateRequire } from 'node:module'; const require = __weftCreateRequire(import.meta.url);" +
      " import { fileURLToPath as __weftFileUrlToPath } from 'node:url'; const __filename = __weftFileUrlToPath(import.meta.url); const __dirname = __weftFileUrlToPath(new URL('.', import.meta.url));",
  },
};
await build({ ...common, entryPoints: [join(root, "bench", "main.ts")], outfile });
// TF.js's WebAssembly binaries beside the bundle, for the CPU section (bench/peers/tfjs-host.ts).
const wasmDir = join(root, ".device", "tfjs-wasm");
mkdirSync(wasmDir, { recursive: true });
const tfWasmDist = join(root, "node_modules", "@tensorflow", "tfjs-backend-wasm", "dist");
for (const f of readdirSync(tfWasmDist)) if (f.endsWith(".wasm")) copyFileSync(join(tfWasmDist, f), join(wasmDir, f));
// The remote workload's client loads `ws` at run time on Node 20 (packages/remote/src/client/socket.ts):
// the package beside the bundles, where an ES module's import looks for it.
cpSync(join(root, "node_modules", "ws"), join(root, ".device", "node_modules", "ws"), { recursive: true });
// The conformance kit without vitest, for the GPU machine (see bench/conformance-gpu.ts).
await build({ ...common, entryPoints: [join(root, "bench", "conformance-gpu.ts")], outfile: join(root, ".device", "conformance.mjs") });
// A profiling aid: the fused chain in a loop, for `node --cpu-prof` on the GPU machine.
await build({ ...common, entryPoints: [join(root, "bench", "profile-chain.ts")], outfile: join(root, ".device", "profile-chain.mjs") });
// The host path's loops (recording, a fused chain, serving) on the CPU backend or WebGPU, for `node --cpu-prof`.
await build({ ...common, entryPoints: [join(root, "bench", "profile-host.ts")], outfile: join(root, ".device", "profile-host.mjs") });
// The raw round trip of one dispatch and its wait, no engine (docs/performance.md#host-floors).
await build({ ...common, entryPoints: [join(root, "bench", "raw-latency.ts")], outfile: join(root, ".device", "raw-latency.mjs") });
// Matmul tile configurations timed outside the tuner (docs/performance.md, "Split-K matmul").
await build({ ...common, entryPoints: [join(root, "bench", "profile-matmul.ts")], outfile: join(root, ".device", "profile-matmul.mjs") });
// The random-program differential test as a long run (see bench/fuzz.ts and scripts/fuzz.mjs).
await build({ ...common, entryPoints: [join(root, "bench", "fuzz.ts")], outfile: join(root, ".device", "fuzz.mjs") });
// The resource-bound figures of docs/resource-bounds.md (scripts/measure-bounds.mjs), for the GPU machine.
await build({ ...common, entryPoints: [join(root, "scripts", "measure-bounds.mjs")], outfile: join(root, ".device", "measure-bounds.mjs") });
// The CLI (`weft demo`, `weft doctor`), for the GPU machine.
await build({ ...common, entryPoints: [join(root, "packages", "weft", "src", "cli.ts")], outfile: join(root, ".device", "weft-cli.mjs") });

const args = process.argv.slice(2);
if (args.includes("--bundle-only")) {
  console.log(`bench: bundled ${outfile}`);
  process.exit(0);
}
const run = spawnSync(process.execPath, [outfile, ...args], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, EGL_PLATFORM: process.env.EGL_PLATFORM ?? "surfaceless" },
});
process.exit(run.status ?? 1);
