#!/usr/bin/env node
// Fails when a package name we publish is taken on npm by someone else (the entry was once called
// `weft`, which belongs to a Google Web Fonts wrapper: `changeset publish` would have published the
// layers and then failed on the entry). Asks the registry with `npm view NAME`:
//   - not found (E404)                                   → free;
//   - found, and its repository is ours (root package.json) → ours (a previous release);
//   - found, another repository (or none)                → taken: rename the package;
//   - the registry could not be reached                  → an error saying so, never a pass.
//
//   node scripts/release/npm-names.mjs
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { publicPackages, rootFacts } from "./manifests.mjs";

/** How long one `npm view` may take before the registry counts as unreachable. */
const VIEW_TIMEOUT_MS = 60_000;

/** "git+https://github.com/O/R.git", "git://github.com/O/R", "github:O/R" → "github.com/o/r". */
export function normalizeRepository(url) {
  if (typeof url !== "string") return undefined;
  const shorthand = /^(?:github:)?([\w.-]+)\/([\w.-]+)$/.exec(url);
  if (shorthand) return `github.com/${shorthand[1]}/${shorthand[2]}`.toLowerCase();
  return url
    .trim()
    .replace(/^git\+/, "")
    .replace(/^[a-z+]+:\/\//, "")
    .replace(/^git@([^:]+):/, "$1/")
    .replace(/^[^@/]+@/, "")
    .replace(/\.git$/, "")
    .replace(/\/+$/, "")
    .toLowerCase();
}

/**
 * What one `npm view NAME name version repository --json` answer means.
 * @returns {{ name: string, state: "free" | "ours" | "taken" | "unreachable", detail: string }}
 */
export function classify(name, answer, ourRepository) {
  const { status, stdout, stderr, timedOut } = answer;
  if (timedOut) return { name, state: "unreachable", detail: `npm view timed out after ${VIEW_TIMEOUT_MS / 1000} s` };
  let body;
  try {
    body = stdout.trim() === "" ? undefined : JSON.parse(stdout);
  } catch {
    body = undefined;
  }
  if (status !== 0) {
    const code = body?.error?.code ?? /npm error code (\S+)/.exec(stderr)?.[1];
    if (code === "E404") return { name, state: "free", detail: "not on npm" };
    return { name, state: "unreachable", detail: `npm view failed (${code ?? `exit ${status}`}): ${(body?.error?.summary ?? stderr).trim().split("\n")[0]}` };
  }
  if (body === undefined) return { name, state: "unreachable", detail: `npm view answered no JSON: ${stdout.slice(0, 200)}` };
  const theirs = normalizeRepository(body.repository?.url ?? body.repository ?? body["repository.url"]);
  const version = Array.isArray(body.version) ? body.version.at(-1) : body.version;
  if (theirs !== undefined && theirs === normalizeRepository(ourRepository)) return { name, state: "ours", detail: `published from our repository (latest ${version})` };
  return { name, state: "taken", detail: `taken on npm: ${body.name}@${version} from ${theirs ?? "no repository"}, not ${normalizeRepository(ourRepository)}` };
}

/** Runs `npm view` for `name`; never rejects. */
function view(name) {
  return new Promise((resolve) => {
    const child = spawn("npm", ["view", name, "name", "version", "repository", "--json"], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGTERM");
    }, VIEW_TIMEOUT_MS);
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve({ status: 1, stdout, stderr: `${stderr}${String(error)}`, timedOut });
    });
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status: status ?? 1, stdout, stderr, timedOut });
    });
  });
}

/** Asks the registry about `names` (default: every public package). */
export async function checkNames(names = publicPackages().map((p) => p.manifest.name)) {
  const { url } = rootFacts();
  return Promise.all(names.map(async (name) => classify(name, await view(name), url)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const results = await checkNames();
  for (const r of results) console.log(`${r.state.padEnd(11)} ${r.name} — ${r.detail}`);
  const taken = results.filter((r) => r.state === "taken");
  const unreachable = results.filter((r) => r.state === "unreachable");
  if (unreachable.length > 0) {
    console.error(`npm-names: could not reach the npm registry for ${unreachable.map((r) => r.name).join(", ")}; the names are NOT known to be free (check the network or the registry setting, then run again)`);
  }
  if (taken.length > 0) {
    console.error(`npm-names: ${taken.map((r) => r.name).join(", ")} ${taken.length === 1 ? "is" : "are"} taken on npm by someone else; rename before releasing (docs/RELEASING.md)`);
  }
  if (taken.length > 0 || unreachable.length > 0) process.exit(1);
  console.log(`npm-names: ${results.length} names free or ours`);
}
