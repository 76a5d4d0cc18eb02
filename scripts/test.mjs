#!/usr/bin/env node
// `npm test`: build and test every package through Nx, then the suites outside packages/ (the bench
// harness, the examples, the release checks), and print one closing line,
// `N passed, N failed, N skipped`, summing every vitest JSON report.
// In CI (CI=true) the Nx cache is skipped so the tests really run.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const packages = readdirSync(join(root, "packages"));
for (const p of packages) rmSync(join(root, "packages", p, "test-results.json"), { force: true });
const args = ["nx", "run-many", "-t", "build", "lint", "typecheck", "test", "--output-style=static"];
if (process.env.CI || process.argv.includes("--skip-nx-cache")) args.push("--skip-nx-cache");
const env = { ...process.env, NX_DAEMON: "false", NX_NO_CLOUD: "true", NX_TUI: "false", NX_INTERACTIVE: "false" };
// The doc lint over the whole repository (the packages' lint targets cover only their own files).
const docs = spawnSync("node", [join(root, "scripts", "lint-docs.mjs")], { cwd: root, stdio: "inherit", env });
const run = spawnSync("npx", args, { cwd: root, stdio: "inherit", env });
// Suites that are not packages, run after the build: the benchmark harness (bench/, typechecked
// here too), the examples (examples/, run against the built packages) and the release checks
// (scripts/release/: manifests, npm names, changeset version, a fresh install of the packed tarballs).
const outside = ["bench", "examples", join("scripts", "release")];
const benchTypes = spawnSync("npx", ["tsc", "-p", "bench/tsconfig.json"], { cwd: root, stdio: "inherit", env });
const outsideRuns = outside.map((dir) => {
  rmSync(join(root, dir, "test-results.json"), { force: true });
  return spawnSync("npx", ["vitest", "run", "--reporter=default", "--reporter=json", "--outputFile.json=test-results.json"], {
    cwd: join(root, dir),
    stdio: "inherit",
    env,
  });
});
let passed = 0, failed = 0, skipped = 0, missing = [];
for (const p of [...packages.map((p) => join("packages", p)), ...outside]) {
  const file = join(root, p, "test-results.json");
  if (!existsSync(file)) { missing.push(p); continue; }
  const r = JSON.parse(readFileSync(file, "utf8"));
  passed += r.numPassedTests; failed += r.numFailedTests; skipped += r.numPendingTests + (r.numTodoTests ?? 0);
}
if (missing.length > 0) console.log(`no test report from: ${missing.join(", ")}`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
const outsideFailed = outsideRuns.some((r) => r.status !== 0);
process.exit(docs.status !== 0 || run.status !== 0 || benchTypes.status !== 0 || outsideFailed || failed > 0 || passed === 0 || missing.length > 0 ? 1 : 0);
