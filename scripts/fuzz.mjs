#!/usr/bin/env node
// `npm run fuzz [-- options]`: bundles bench/fuzz.ts (the random-program differential test as a
// long run) into .device/fuzz.mjs and runs it; the options are passed through (see bench/fuzz.ts):
//
//   npm run fuzz -- --programs 2000 --seed 123 --backend webgpu
//
// Like the benchmarks, the bundle takes the @weft/* packages from their sources (no build needed)
// and leaves only `webgpu` (Dawn) external, so `.device/fuzz.mjs` also runs on the GPU machine.
// `--bundle-only` bundles and stops.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outfile = join(root, ".device", "fuzz.mjs");
mkdirSync(dirname(outfile), { recursive: true });
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
await build({
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["webgpu"],
  alias,
  logLevel: "warning",
  entryPoints: [join(root, "bench", "fuzz.ts")],
  outfile,
});
const args = process.argv.slice(2);
if (args.includes("--bundle-only")) {
  console.log(`fuzz: bundled ${outfile}`);
  process.exit(0);
}
const run = spawnSync(process.execPath, [outfile, ...args], { cwd: root, stdio: "inherit", env: { EGL_PLATFORM: "surfaceless", ...process.env } });
process.exit(run.status ?? 1);
