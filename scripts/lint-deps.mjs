#!/usr/bin/env node
// Enforces the dependency direction of docs/design.md#packages: a package may import only the @weft packages
// below it, and only those it declares in package.json. Test files (*.test.ts, src/testing/**, the
// browser pages *.entry.ts) may also import what the package lists in devDependencies (the
// conformance kit, the CPU oracle, the private browser harness).
//
//   node scripts/lint-deps.mjs            # every package
//   node scripts/lint-deps.mjs fusion     # one package (what `nx run @weft/fusion:lint` calls)
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, dirname, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
/** What each package may import in its shipped sources, lowest layer first. */
export const ALLOWED = {
  environment: [],
  server: ["environment"],
  runtime: ["environment", "server"],
  fusion: ["environment", "server", "runtime"],
  "backend-cpu": ["environment", "server", "runtime", "fusion"],
  "backend-webgpu": ["environment", "server", "runtime", "fusion"],
  tensor: ["environment", "server", "runtime", "fusion"],
  remote: ["environment", "server", "runtime", "fusion", "tensor"],
  autodiff: ["environment", "server", "runtime", "fusion", "tensor"],
  weft: ["environment", "server", "runtime", "fusion", "backend-cpu", "backend-webgpu", "tensor", "remote", "autodiff"],
  // Private test infrastructure (never published): the Chromium harness.
  "browser-harness": ["environment"],
};
const nameOf = (spec) => {
  const m = /^@weft\/([a-z-]+)(\/.*)?$/.exec(spec);
  return m ? m[1] : undefined;
};
function* files(dir) {
  for (const entry of readdirSync(dir)) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) yield* files(p);
    else if (/\.(ts|mts|js|mjs)$/.test(entry)) yield p;
  }
}
const only = process.argv[2];
const problems = [];
for (const pkg of Object.keys(ALLOWED)) {
  if (only && only !== pkg) continue;
  const dir = join(root, "packages", pkg);
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const deps = new Set(Object.keys(manifest.dependencies ?? {}).map(nameOf).filter(Boolean));
  const devDeps = new Set(Object.keys(manifest.devDependencies ?? {}).map(nameOf).filter(Boolean));
  for (const file of files(join(dir, "src"))) {
    const text = readFileSync(file, "utf8");
    const rel = relative(root, file);
    const isTest = /\.test\.ts$|\/testing\/|\.bench\.ts$|\.entry\.ts$/.test(rel);
    for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["']([^"']+)["']/g)) {
      const target = nameOf(m[1]);
      if (target === undefined) continue;
      if (target === pkg) {
        problems.push(`${rel}: imports its own package '${m[1]}' (import the concrete file instead)`);
        continue;
      }
      const layerOk = ALLOWED[pkg].includes(target);
      if (layerOk && deps.has(target)) continue;
      if (isTest && devDeps.has(target) && target !== pkg) continue;
      if (!layerOk && !(isTest && devDeps.has(target))) {
        problems.push(`${rel}: '${pkg}' may not import '${m[1]}' — dependencies point down only (docs/design.md#packages); allowed: ${ALLOWED[pkg].join(", ") || "none"}`);
      } else {
        problems.push(`${rel}: imports '${m[1]}' but ${pkg}/package.json does not declare it`);
      }
    }
  }
}
if (problems.length > 0) {
  console.error(problems.join("\n"));
  console.error(`lint-deps: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`lint-deps: ${only ?? "all packages"} ok`);
