#!/usr/bin/env node
// What a user gets from npm, checked before a release: every public package is packed with
// `npm pack`, each tarball is inspected (LICENSE, README, publint, source maps that resolve, no
// undeclared import), and a fresh project under the system temp folder — outside the monorepo —
// installs only the entry `@weft/weft` from its tarball (the layers come through its dependencies;
// `overrides` point them at their tarballs, as the registry would). In that project:
// ESM imports and `require()` of every public entry, a TypeScript consumer compiled with
// skipLibCheck off (GPU types must not be `any`), `npx weft doctor` without WebGPU (the message
// naming the optional peer), node_modules under the size budget, then `webgpu` added and
// `npx weft doctor` again (it must load Dawn and create a WebGPU device).
//
//   node scripts/release/fresh-install.mjs [--keep] [--no-webgpu]
//     --keep        leave the scratch folder (its path is printed)
//     --no-webgpu   skip the last step (a machine without a WebGPU adapter for Dawn)
//
// Needs the packages built (`npm run build`); `npm run check:pack` builds first. Exit 1 on any
// failed check. docs/RELEASING.md explains each rule.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { publint } from "publint";
import { formatMessage } from "publint/utils";
import { publicPackages, root } from "./manifests.mjs";

/** A CPU-only install of the entry (no `webgpu`) must stay below this. */
export const SIZE_BUDGET_BYTES = 60 * 1024 * 1024;

/** Subpaths that need an optional peer this check does not install, and that peer. */
const NEEDS_OPTIONAL_PEER = { "@weft/tensor/testing": "vitest", "@weft/autodiff/testing": "vitest", "@weft/server/testing": "vitest" };

/** Runs a command; resolves its status and output (never throws). */
function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, timeout: 300_000, ...options });
  return { status: result.status ?? 1, stdout: result.stdout ?? "", stderr: result.stderr ?? "", error: result.error };
}

/** {@link run} without blocking, so independent commands (packing) overlap. */
function runAsync(command, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", (error) => resolve({ status: 1, stdout, stderr: `${stderr}${String(error)}` }));
    child.on("close", (status) => resolve({ status: status ?? 1, stdout, stderr }));
  });
}

/** Total size in bytes of the files under `dir` (what `du -sb` reports, without block rounding). */
export function folderBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += folderBytes(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

/** Every file path under `dir`, relative to it, with forward slashes. */
function listFiles(dir, base = dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? listFiles(path, base) : [relative(base, path).split("\\").join("/")];
  });
}

/** The bare package names `source` imports (static, dynamic with a literal, re-exports). */
export function importedPackages(source) {
  const names = new Set();
  for (const m of source.matchAll(/(?:^|[\s;])(?:import|export)\s[^"'`]*?from\s*["']([^"']+)["']|(?:^|[\s;(])import\s*\(\s*["']([^"']+)["']\s*\)|(?:^|[\s;])import\s*["']([^"']+)["']/gm)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec === undefined || spec.startsWith(".") || spec.startsWith("/") || spec.startsWith("#") || spec.startsWith("node:")) continue;
    const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0];
    if (!builtinModules.includes(name)) names.add(name);
  }
  return names;
}

/**
 * Runs every check; resolves `{ checks, figures, scratch }` where each check is
 * `{ name, ok, detail }`. Never throws for a failed check (it is reported), only for a broken setup.
 */
export async function freshInstallCheck({ keep = false, withWebGpu = true, log = () => {} } = {}) {
  const checks = [];
  const figures = {};
  let last = Date.now();
  const check = (name, ok, detail = "") => {
    checks.push({ name, ok: Boolean(ok), detail });
    const now = Date.now();
    log(`${ok ? "ok  " : "FAIL"} ${name} (${((now - last) / 1000).toFixed(1)} s)${detail ? ` — ${detail}` : ""}`);
    last = now;
  };
  const packages = publicPackages();
  const missingBuild = packages.filter((p) => !existsSync(join(p.path, "dist")));
  if (missingBuild.length > 0) throw new Error(`build first (npm run build): no dist in ${missingBuild.map((p) => p.dir).join(", ")}`);
  const scratch = mkdtempSync(join(tmpdir(), "weft-fresh-install-"));
  figures.scratch = scratch;
  try {
    // 1. Pack.
    const tarballs = join(scratch, "tarballs");
    mkdirSync(tarballs);
    const packed = new Map();
    // One npm process packs every workspace (npm's start-up dominates a pack of this size).
    const workspaces = packages.flatMap((pkg) => ["-w", `packages/${pkg.dir}`]);
    const result = run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", tarballs, ...workspaces], { cwd: root });
    check("npm pack of every public package", result.status === 0, result.status === 0 ? "" : result.stderr.trim());
    if (result.status !== 0) return { checks, figures, scratch };
    for (const info of JSON.parse(result.stdout)) {
      const pkg = packages.find((p) => p.manifest.name === info.name);
      if (pkg === undefined) throw new Error(`npm pack answered for an unknown package ${info.name}`);
      packed.set(pkg.manifest.name, { pkg, file: join(tarballs, info.filename), info });
      figures[`${pkg.manifest.name} tarball`] = `${(info.size / 1024).toFixed(0)} kB packed, ${(info.unpackedSize / 1024).toFixed(0)} kB unpacked, ${info.entryCount} files`;
    }
    // 2. Inspect each tarball.
    for (const [name, { pkg, file }] of packed) {
      const unpacked = join(scratch, "unpacked", pkg.dir);
      mkdirSync(unpacked, { recursive: true });
      run("tar", ["-xzf", file, "-C", unpacked, "--strip-components=1"]);
      const files = new Set(listFiles(unpacked));
      check(`${name}: carries LICENSE, README.md and package.json`, ["LICENSE", "README.md", "package.json"].every((f) => files.has(f)));
      const license = existsSync(join(unpacked, "LICENSE")) ? readFileSync(join(unpacked, "LICENSE"), "utf8") : "";
      check(`${name}: LICENSE is the MIT license`, license.startsWith("MIT License"));
      const lint = await publint({ pack: { tarball: new Uint8Array(readFileSync(file)).buffer }, strict: true });
      const manifest = JSON.parse(readFileSync(join(unpacked, "package.json"), "utf8"));
      const serious = lint.messages.filter((m) => m.type !== "suggestion");
      check(`${name}: publint (strict) finds nothing`, serious.length === 0, serious.map((m) => formatMessage(m, manifest)).join("; "));
      // Every source a .map names is in the tarball, so debuggers and "go to definition" land in TypeScript.
      const unresolved = [];
      for (const f of files) {
        if (!f.endsWith(".map")) continue;
        const map = JSON.parse(readFileSync(join(unpacked, f), "utf8"));
        for (const source of map.sources ?? []) {
          const target = posix.normalize(posix.join(posix.dirname(f), map.sourceRoot ?? "", source));
          if (!files.has(target)) unresolved.push(`${f} → ${target}`);
        }
      }
      check(`${name}: every source map and declaration map resolves inside the tarball`, unresolved.length === 0, unresolved.slice(0, 5).join("; "));
      // Every package the shipped JavaScript imports is declared.
      const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {}), manifest.name]);
      const undeclared = [];
      for (const f of files) {
        if (!f.startsWith("dist/") || !f.endsWith(".js")) continue;
        for (const dep of importedPackages(readFileSync(join(unpacked, f), "utf8"))) if (!declared.has(dep)) undeclared.push(`${f} imports ${dep}`);
      }
      check(`${name}: the shipped JavaScript imports only declared packages`, undeclared.length === 0, undeclared.join("; "));
      if (manifest.bin !== undefined) {
        const dry = run("npm", ["publish", "--dry-run", "--ignore-scripts", file], { cwd: scratch });
        const corrected = /auto-corrected|was invalid and removed/.test(dry.stderr);
        check(`${name}: npm publish keeps the bin entry as written`, dry.status === 0 && !corrected, corrected ? dry.stderr.split("\n").filter((l) => /bin|corrected/.test(l)).join(" ") : dry.status === 0 ? "" : dry.stderr.trim());
        for (const target of Object.values(manifest.bin)) {
          const text = existsSync(join(unpacked, target)) ? readFileSync(join(unpacked, target), "utf8") : "";
          check(`${name}: bin ${target} exists and starts with a node shebang`, text.startsWith("#!/usr/bin/env node"));
        }
      }
    }
    // 3. A fresh project that installs the entry alone.
    const entry = packed.get("@weft/weft");
    if (entry === undefined) throw new Error("@weft/weft was not packed");
    const app = join(scratch, "app");
    mkdirSync(app);
    const overrides = Object.fromEntries([...packed].filter(([n]) => n !== "@weft/weft").map(([n, p]) => [n, `file:${p.file}`]));
    const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify(
        {
          name: "weft-fresh-install",
          private: true,
          type: "module",
          dependencies: { "@weft/weft": `file:${entry.file}` },
          devDependencies: { "@types/node": rootManifest.devDependencies["@types/node"] },
          overrides,
        },
        null,
        2,
      ),
    );
    const install = run("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts"], { cwd: app });
    check("fresh project: npm install of @weft/weft (its layers through its dependencies)", install.status === 0, install.status === 0 ? "" : install.stderr.trim().slice(-2000));
    if (install.status !== 0) return { checks, figures, scratch };
    const installed = readdirSync(join(app, "node_modules", "@weft")).map((d) => `@weft/${d}`).sort();
    check("fresh project: every layer came with the entry", JSON.stringify(installed) === JSON.stringify([...packed.keys()].sort()), installed.join(", "));
    check("fresh project: the optional peer webgpu (Dawn) is not installed", !existsSync(join(app, "node_modules", "webgpu")));
    const bytes = folderBytes(join(app, "node_modules"));
    figures["node_modules without WebGPU (with the consumer's @types/node)"] = `${(bytes / 1024 / 1024).toFixed(1)} MB`;
    check(`fresh project: a CPU-only install stays under ${SIZE_BUDGET_BYTES / 1024 / 1024} MB`, bytes < SIZE_BUDGET_BYTES, `${(bytes / 1024 / 1024).toFixed(1)} MB`);

    // Every public entry, from ESM and from require().
    const specifiers = [];
    for (const [name, { pkg }] of packed) {
      for (const key of Object.keys(pkg.manifest.exports ?? {})) {
        if (key.endsWith(".json")) continue;
        const spec = key === "." ? name : `${name}/${key.slice(2)}`;
        if (!(spec in NEEDS_OPTIONAL_PEER)) specifiers.push(spec);
      }
    }
    writeFileSync(
      join(app, "esm.mjs"),
      [
        `for (const spec of ${JSON.stringify(specifiers)}) {`,
        "  const mod = await import(spec);",
        "  if (Object.keys(mod).length === 0) throw new Error(`${spec} exports nothing`);",
        "}",
        'import * as weft from "@weft/weft";',
        "await weft.init({ log: null });",
        "const t = weft.tensor([[1, 2], [3, 4]]).add(1).mul(2);",
        "const values = [...(await t.data())];",
        "t.dispose();",
        'if (values.join() !== "4,6,8,10") throw new Error(`wrong result ${values}`);',
        'console.log(`esm ok ${weft.device().backend} ${weft.VERSION}`);',
      ].join("\n"),
    );
    const esm = run(process.execPath, ["esm.mjs"], { cwd: app });
    check(`fresh project: import() of every public entry (${specifiers.length}) and a computation`, esm.status === 0 && esm.stdout.includes("esm ok cpu"), (esm.stdout + esm.stderr).trim());
    writeFileSync(
      join(app, "cjs.cjs"),
      [
        `for (const spec of ${JSON.stringify(specifiers)}) {`,
        "  const mod = require(spec);",
        "  if (Object.keys(mod).length === 0) throw new Error(`${spec} exports nothing through require`);",
        "}",
        'const weft = require("@weft/weft");',
        "weft.init({ log: null }).then(async () => {",
        "  const t = weft.tensor([1, 2, 3]).mul(3);",
        "  const values = [...(await t.data())];",
        "  t.dispose();",
        '  if (values.join() !== "3,6,9") throw new Error(`wrong result ${values}`);',
        '  console.log("require ok");',
        "});",
      ].join("\n"),
    );
    const cjs = run(process.execPath, ["cjs.cjs"], { cwd: app });
    check(`fresh project: require() of every public entry (${specifiers.length}) and a computation`, cjs.status === 0 && cjs.stdout.includes("require ok"), (cjs.stdout + cjs.stderr).trim());
    const peerLess = run(process.execPath, ["--input-type=module", "-e", 'await import("@weft/tensor/testing")'], { cwd: app });
    check("fresh project: @weft/tensor/testing without its optional peer vitest fails naming vitest", peerLess.status !== 0 && /'vitest'/.test(peerLess.stderr), peerLess.stderr.split("\n").find((l) => /vitest/.test(l)) ?? peerLess.stderr.trim().slice(0, 300));

    // A TypeScript consumer, strict, two ways: with the libraries' declarations checked
    // (skipLibCheck off; @webgpu/types then needs the DOM lib), and the common Node setup
    // (skipLibCheck on, no DOM lib) where GPU types must still not be `any`.
    const compilerOptions = { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, types: ["node"] };
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { ...compilerOptions, skipLibCheck: false, skipDefaultLibCheck: true, lib: ["ES2022", "ESNext.Disposable", "DOM"] }, include: ["*.ts", "*.cts"] }),
    );
    writeFileSync(
      join(app, "tsconfig.node.json"),
      JSON.stringify({ compilerOptions: { ...compilerOptions, skipLibCheck: true, lib: ["ES2022", "ESNext.Disposable"] }, include: ["*.ts", "*.cts"] }),
    );
    writeFileSync(
      join(app, "consumer.ts"),
      [
        'import * as weft from "@weft/weft";',
        'import type { WebGpuDevice } from "@weft/backend-webgpu";',
        "type IsAny<T> = 0 extends 1 & T ? true : false;",
        "// GPU types come with @weft/backend-webgpu (its index.d.ts keeps the @webgpu/types reference).",
        'const deviceIsTyped: IsAny<WebGpuDevice["device"]> = false;',
        'const limitsAreTyped: IsAny<WebGpuDevice["limits"]> = false;',
        "const t: weft.Tensor = weft.tensor([1, 2]);",
        "const backend: weft.BackendName = weft.device().backend as weft.BackendName;",
        "export { deviceIsTyped, limitsAreTyped, t, backend };",
      ].join("\n"),
    );
    writeFileSync(join(app, "consumer-cjs.cts"), ['import weft = require("@weft/weft");', "export const version: string = weft.VERSION;"].join("\n"));
    const tscBin = join(root, "node_modules", "typescript", "bin", "tsc");
    const [tsc, tscNode] = await Promise.all([
      runAsync(process.execPath, [tscBin, "-p", join(app, "tsconfig.json")]),
      runAsync(process.execPath, [tscBin, "-p", join(app, "tsconfig.node.json")]),
    ]);
    check("fresh project: a strict TypeScript consumer (ESM and require, skipLibCheck off, DOM lib) compiles", tsc.status === 0, (tsc.stdout + tsc.stderr).trim().slice(0, 3000));
    check("fresh project: a strict Node consumer (skipLibCheck on, no DOM lib) compiles, GPU types not any", tscNode.status === 0, (tscNode.stdout + tscNode.stderr).trim().slice(0, 3000));

    // The CLI without WebGPU: runs, picks the CPU and says how to add the optional peer.
    const doctor = run("npx", ["--no-install", "weft", "doctor"], { cwd: app });
    check(
      "fresh project: npx weft doctor without webgpu picks the CPU and names the optional peer",
      doctor.status === 0 && doctor.stdout.includes("chosen backend: cpu") && doctor.stdout.includes("npm install webgpu@"),
      (doctor.stdout + doctor.stderr).trim(),
    );

    if (withWebGpu) {
      const range = JSON.parse(readFileSync(join(root, "packages", "backend-webgpu", "package.json"), "utf8")).peerDependencies.webgpu;
      const add = run("npm", ["install", "--no-audit", "--no-fund", `webgpu@${range}`], { cwd: app });
      check(`fresh project: npm install webgpu@${range}`, add.status === 0, add.status === 0 ? "" : add.stderr.trim().slice(-2000));
      figures["node_modules with WebGPU"] = `${(folderBytes(join(app, "node_modules")) / 1024 / 1024).toFixed(1)} MB`;
      const gpuDoctor = run("npx", ["--no-install", "weft", "doctor"], { cwd: app });
      // Dawn loads and a device is created (doctor prints its features); which backend `auto`
      // then picks depends on the adapter (a software one loses to the CPU backend).
      check(
        "fresh project: with webgpu installed, npx weft doctor loads Dawn and creates a WebGPU device",
        gpuDoctor.status === 0 && /^webgpu adapter: (?!none)/m.test(gpuDoctor.stdout) && /^features: /m.test(gpuDoctor.stdout) && /^chosen backend: /m.test(gpuDoctor.stdout),
        (gpuDoctor.stdout + gpuDoctor.stderr).trim().split("\n").filter((l) => !l.startsWith("  ")).join(" | "),
      );
    }
    return { checks, figures, scratch };
  } finally {
    if (!keep) rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const keep = process.argv.includes("--keep");
  const started = Date.now();
  const { checks, figures, scratch } = await freshInstallCheck({ keep, withWebGpu: !process.argv.includes("--no-webgpu"), log: (line) => console.log(line) });
  for (const [k, v] of Object.entries(figures)) if (k !== "scratch") console.log(`  ${k}: ${v}`);
  if (keep) console.log(`  scratch folder kept: ${scratch}`);
  const failed = checks.filter((c) => !c.ok).length;
  console.log(`fresh-install: ${checks.length - failed} of ${checks.length} checks passed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  process.exit(failed > 0 ? 1 : 0);
}
