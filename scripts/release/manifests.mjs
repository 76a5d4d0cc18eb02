#!/usr/bin/env node
// The package.json rules every workspace package follows so that a release publishes what users
// can install (docs/RELEASING.md). Offline: it reads the manifests, the LICENSE files, the
// tsconfig.lib.json excludes and .changeset/config.json, and never touches the network.
//
//   node scripts/release/manifests.mjs           # check; exit 1 listing every problem
//   node scripts/release/manifests.mjs --write   # rewrite the manifests (and LICENSE copies) to the rules
//   node scripts/release/manifests.mjs --provenance   # also: the repository is the GitHub repository
//                                                      # this workflow runs in (npm provenance requires it)
//
// The rules, for every package under packages/ (private ones: only the version and internal pins):
// - one version for all (Changesets' fixed group "@weft/*"), internal dependencies pinned to it;
// - license MIT and a LICENSE file equal to the root one; repository (with directory), homepage,
//   bugs and engines derived from the root package.json;
// - every `exports` entry is { types, import, default } with default === import (Node 20.19+ then
//   loads the ESM file for `require()` too) — entries other packages' owners add are completed;
// - `files` ships dist and src (so source maps and declaration maps resolve) minus what
//   tsconfig.lib.json excludes from the build (tests, test-only helpers);
// - `bin` paths are written the way npm keeps them (no leading "./").
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The fixed group of .changeset/config.json: every workspace package versions together. */
export const FIXED_GROUP = "@weft/*";

/** Key order of a rewritten manifest; keys not named here keep their relative order after these. */
const KEY_ORDER = [
  "name", "version", "private", "description", "keywords", "license", "author", "repository", "homepage", "bugs",
  "type", "engines", "sideEffects", "exports", "imports", "main", "types", "bin", "files", "publishConfig", "scripts",
  "dependencies", "peerDependencies", "peerDependenciesMeta", "devDependencies",
];

const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));

/** Every workspace package: its folder name, path, manifest. */
export function workspacePackages() {
  const dir = join(root, "packages");
  return readdirSync(dir)
    .filter((name) => existsSync(join(dir, name, "package.json")))
    .sort()
    .map((name) => ({ dir: name, path: join(dir, name), manifest: readJson(join(dir, name, "package.json")) }));
}

/** The published (non-private) packages. */
export function publicPackages() {
  return workspacePackages().filter((p) => p.manifest.private !== true);
}

/** "git+https://github.com/o/r.git" → "https://github.com/o/r". */
export function repositoryWebUrl(url) {
  return url.replace(/^git\+/, "").replace(/\.git$/, "");
}

/** What the root manifest says every package shares. */
export function rootFacts() {
  const manifest = readJson(join(root, "package.json"));
  const url = manifest.repository?.url;
  if (typeof url !== "string") throw new Error("package.json: the root manifest needs repository.url (every package's repository is derived from it)");
  return { url, web: repositoryWebUrl(url), engines: manifest.engines, license: readFileSync(join(root, "LICENSE"), "utf8") };
}

/** The version of the fixed group: the one most packages carry (a mismatch is reported). */
function groupVersion(packages) {
  const counts = new Map();
  for (const p of packages) counts.set(p.manifest.version, (counts.get(p.manifest.version) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
}

/** The `!pattern` entries for what tsconfig.lib.json keeps out of the build (and so out of the tarball). */
function buildExcludes(pkgPath) {
  const file = join(pkgPath, "tsconfig.lib.json");
  if (!existsSync(file)) return [];
  return (readJson(file).exclude ?? []).map((pattern) => `!${pattern}`);
}

/** A complete `exports` condition object for one entry: types first, default last. */
function completeEntry(entry) {
  if (typeof entry === "string") {
    if (!entry.endsWith(".js")) return entry; // "./package.json" and other plain files
    return { types: entry.replace(/\.js$/, ".d.ts"), import: entry, default: entry };
  }
  const { types, import: esm, default: fallback, ...rest } = entry;
  const js = esm ?? fallback;
  return { types: types ?? js?.replace(/\.js$/, ".d.ts"), ...rest, import: js, default: js };
}

/** The manifest `pkg` should have; `problems` collects what cannot be fixed by rewriting. */
function expectedManifest(pkg, facts, version, problems) {
  const m = structuredClone(pkg.manifest);
  const where = `packages/${pkg.dir}/package.json`;
  if (m.name !== `@weft/${pkg.dir}`) problems.push(`${where}: name is ${m.name}, expected @weft/${pkg.dir} (the folder name in the @weft scope)`);
  m.version = version;
  for (const field of ["dependencies", "devDependencies"]) {
    for (const dep of Object.keys(m[field] ?? {})) if (dep.startsWith("@weft/")) m[field][dep] = version;
  }
  if (m.private === true) return m;
  m.license = "MIT";
  m.repository = { type: "git", url: facts.url, directory: `packages/${pkg.dir}` };
  m.homepage = `${facts.web}/tree/main/packages/${pkg.dir}#readme`;
  m.bugs = { url: `${facts.web}/issues` };
  m.type = "module";
  m.engines = { ...facts.engines };
  m.sideEffects = m.sideEffects ?? false;
  m.publishConfig = { ...(m.publishConfig ?? {}), access: "public" };
  if (m.exports === undefined) problems.push(`${where}: no exports`);
  else m.exports = Object.fromEntries(Object.entries(m.exports).map(([k, v]) => [k, completeEntry(v)]));
  if (m.bin !== undefined) m.bin = Object.fromEntries(Object.entries(m.bin).map(([k, v]) => [k, v.replace(/^\.\//, "")]));
  m.files = ["dist", "src", "!**/*.tsbuildinfo", ...buildExcludes(pkg.path)];
  return m;
}

/** Re-orders keys as {@link KEY_ORDER}. */
function ordered(manifest) {
  const out = {};
  for (const key of KEY_ORDER) if (key in manifest) out[key] = manifest[key];
  for (const key of Object.keys(manifest)) if (!(key in out)) out[key] = manifest[key];
  return out;
}

const text = (manifest) => `${JSON.stringify(manifest, null, 2)}\n`;

/**
 * Checks (or, with `write`, fixes) every manifest, the LICENSE copies and the Changesets config.
 * Returns the problems left (after writing: those a rewrite cannot fix).
 */
export function checkManifests({ write = false } = {}) {
  const problems = [];
  const facts = rootFacts();
  const packages = workspacePackages();
  const version = groupVersion(packages);
  for (const pkg of packages) {
    const want = ordered(expectedManifest(pkg, facts, version, problems));
    const file = join(pkg.path, "package.json");
    const have = readFileSync(file, "utf8");
    if (have !== text(want)) {
      if (write) writeFileSync(file, text(want));
      else problems.push(`packages/${pkg.dir}/package.json: differs from the release rules (${describeDiff(pkg.manifest, want)})`);
    }
    if (pkg.manifest.private === true) continue;
    const license = join(pkg.path, "LICENSE");
    if (!existsSync(license) || readFileSync(license, "utf8") !== facts.license) {
      if (write) writeFileSync(license, facts.license);
      else problems.push(`packages/${pkg.dir}/LICENSE: missing or not the root LICENSE`);
    }
    if (!existsSync(join(pkg.path, "README.md"))) problems.push(`packages/${pkg.dir}/README.md: missing (npm shows it as the package page)`);
  }
  const config = readJson(join(root, ".changeset", "config.json"));
  const fixed = JSON.stringify(config.fixed);
  if (fixed !== JSON.stringify([[FIXED_GROUP]])) {
    if (write) writeFileSync(join(root, ".changeset", "config.json"), text({ ...config, fixed: [[FIXED_GROUP]] }));
    else problems.push(`.changeset/config.json: fixed is ${fixed}, expected [["${FIXED_GROUP}"]] (every package versions together, so no two copies of @weft/environment can be asked for)`);
  }
  return problems;
}

/** The top-level fields that differ, for the message. */
function describeDiff(have, want) {
  const keys = new Set([...Object.keys(have), ...Object.keys(want)]);
  const differing = [...keys].filter((k) => JSON.stringify(have[k]) !== JSON.stringify(want[k]));
  return differing.length > 0 ? `fields: ${differing.join(", ")}` : "key order or formatting";
}

/**
 * npm rejects a provenance statement whose package repository is not the repository the workflow
 * ran in: compare the root repository with `GITHUB_REPOSITORY` (set by GitHub Actions).
 */
export function provenanceProblems(env = process.env) {
  const repo = env["GITHUB_REPOSITORY"];
  if (!repo) return ["--provenance: GITHUB_REPOSITORY is not set (run it in GitHub Actions)"];
  const ours = rootFacts().web.toLowerCase();
  const theirs = `https://github.com/${repo}`.toLowerCase();
  return ours === theirs ? [] : [`package.json: repository is ${ours} but this workflow runs in ${theirs}; npm provenance would reject the publish — fix the root repository, then run --write`];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const write = process.argv.includes("--write");
  const problems = checkManifests({ write });
  if (process.argv.includes("--provenance")) problems.push(...provenanceProblems());
  if (problems.length > 0) {
    console.error(problems.join("\n"));
    console.error(`manifests: ${problems.length} problem(s)${write ? "" : " — `node scripts/release/manifests.mjs --write` fixes the mechanical ones"}`);
    process.exit(1);
  }
  console.log(`manifests: ${write ? "written" : "ok"} (${workspacePackages().length} packages)`);
}
