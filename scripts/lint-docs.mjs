#!/usr/bin/env node
// The doc lint (docs/style.md#docs). Two checks:
//
// 1. Every exported declaration in a package's shipped sources carries a doc comment: the line
//    before `export class|interface|type|function|const|enum|abstract class` must close a
//    `/** … */` block (an overload signature shares the comment of the first one). Re-exports
//    (`export { … } from`, `export type { … } from`, `export *`) are exempt.
// 2. Every reference resolves inside the repository. In every source, test, script, README and
//    doc: a Markdown link `[…](path#anchor)`, a `docs/….md#anchor` or `packages/….md` path, and a
//    bare `NAME.md` must name a file (and anchor) that exists in the repo; a path into `../shared`
//    (outside a clone), a `§` section number, and the old citation styles (a seed number,
//    a bare pitfall number) are refused — cite `docs/concepts.md#…` or `docs/pitfalls.md#p14` instead.
//
//   node scripts/lint-docs.mjs [package]      (a package name limits both checks to that package)
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const only = process.argv[2];
const problems = [];

// ── 1. doc comments on exported declarations ─────────────────────────────────────────────────
function* walk(dir, keep) {
  for (const entry of readdirSync(dir)) {
    if (SKIP_DIRS.has(entry) || SKIP_FILES.has(entry)) continue;
    const p = join(dir, entry);
    if (GENERATED.has(relative(root, p))) continue;
    if (statSync(p).isDirectory()) yield* walk(p, keep);
    else if (keep(entry)) yield p;
  }
}
/** Generated, git-ignored output (the TypeDoc site of `npm run docs`): not the repository's text. */
const GENERATED = new Set([join("docs", "api")]);
const SKIP_DIRS = new Set(["node_modules", "dist", ".git", ".device", ".nx", "coverage", "results"]);
/** Git-ignored reports the test run writes (vitest's JSON): they quote test names, not citations. */
const SKIP_FILES = new Set(["test-results.json"]);
const shipped = (entry) => entry.endsWith(".ts") && !entry.endsWith(".test.ts") && !entry.endsWith(".d.ts");
for (const pkg of readdirSync(join(root, "packages"))) {
  if (only && only !== pkg) continue;
  for (const file of walk(join(root, "packages", pkg, "src"), shipped)) {
    const lines = readFileSync(file, "utf8").split("\n");
    lines.forEach((line, i) => {
      if (!/^export\s+(default\s+)?(declare\s+)?(abstract\s+class|class|interface|type|function|async\s+function|const|let|enum)\s+[A-Za-z_$]/.test(line)) return;
      let j = i - 1;
      while (j >= 0 && (lines[j].trim() === "" || lines[j].trim().startsWith("//") || lines[j].trim().startsWith("@"))) j--;
      // An overload signature shares the doc comment of the first signature above it.
      const fn = /^export\s+(?:async\s+)?function\s+([A-Za-z_$][\w$]*)/.exec(line);
      if (fn && j >= 0 && new RegExp(`^export\\s+(?:async\\s+)?function\\s+${fn[1].replace(/\$/g, "\\$")}\\b`).test(lines[j])) return;
      if (j < 0 || !lines[j].trim().endsWith("*/")) {
        problems.push(`${relative(root, file)}:${i + 1}: exported declaration without a doc comment: ${line.trim().slice(0, 80)}`);
      }
    });
  }
}

// ── 2. references resolve inside the repository ─────────────────────────────────────────────
const TEXT = /\.(ts|mts|mjs|js|md|json|ya?ml|sh)$/;
const textFile = (entry) => TEXT.test(entry) && entry !== "package-lock.json" && !entry.endsWith(".d.ts");
// With a package argument only that package's files are scanned (its Nx lint target); without one,
// the whole repository (`npm run lint`, `npm test`).
const scanned = [...walk(only ? join(root, "packages", only) : root, (entry) => textFile(entry) || entry === "run")];

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, "")
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}
const anchorCache = new Map();
/** The anchors of a Markdown file: explicit `<a id|name="…">` and heading slugs (deduplicated like GitHub). */
function anchorsOf(file) {
  let anchors = anchorCache.get(file);
  if (anchors !== undefined) return anchors;
  anchors = new Set();
  const seen = new Map();
  let fenced = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
    const h = /^#{1,6}\s+(.*)$/.exec(line);
    if (h) {
      const base = slug(h[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
  }
  anchorCache.set(file, anchors);
  return anchors;
}

/** Whether `target` (a path, maybe with `#anchor`) resolves from `fromDir`, else from the repo root. */
function check(file, lineNo, target, fromDir) {
  const [path, anchor] = target.split("#");
  const candidates = path === "" ? [file] : [resolve(fromDir, path), resolve(root, path)];
  const hit = candidates.find((c) => c.startsWith(root) && existsSync(c));
  const where = `${relative(root, file)}:${lineNo}`;
  if (hit === undefined) {
    problems.push(`${where}: reference to '${target}', which is not a file in the repository`);
    return;
  }
  if (anchor !== undefined && anchor !== "" && hit.endsWith(".md") && !anchorsOf(hit).has(anchor)) {
    problems.push(`${where}: reference to '${target}': ${relative(root, hit)} has no anchor '#${anchor}'`);
  }
}

/** Bare `NAME.md` files a text may name without a path: a file of that name in one of these places. */
function bareResolves(file, name) {
  const dirs = [dirname(file), root, join(root, "docs")];
  const pkg = /packages\/[^/]+/.exec(relative(root, file));
  if (pkg) dirs.push(join(root, pkg[0]));
  return dirs.some((d) => existsSync(join(d, name)));
}

const REFUSED = [
  [/\.\.\/shared\b|\/work\/shared\b/, "a path outside the repository ('../shared'); cite docs/… instead"],
  [/§/, "a '§' section number; cite a docs/….md#anchor instead"],
  [/\bseeds?[\s-]+`?0\d\d/i, "an external seed document; cite docs/concepts.md#… instead"],
  [/\bP(1[0-7]|[1-9])\b/, "a bare pitfall number; cite docs/pitfalls.md#pN instead"],
];

for (const file of scanned) {
  const rel = relative(root, file);
  if (rel === join("scripts", "lint-docs.mjs")) continue;
  const isMarkdown = file.endsWith(".md");
  const lines = readFileSync(file, "utf8").split("\n");
  let fenced = false;
  lines.forEach((line, i) => {
    const lineNo = i + 1;
    if (isMarkdown && /^\s*```/.test(line)) fenced = !fenced;
    // Pitfall headings ("### P14 — …") are where the numbers are defined.
    const own = rel === join("docs", "pitfalls.md") && /^#{1,6}\s+P\d/.test(line);
    for (const [pattern, why] of REFUSED) {
      if (own && pattern.source.startsWith("\\bP")) continue;
      const stripped = line.replace(/pitfalls\.md#p\d+/g, "").replace(/\[P\d+\]\([^)]*#p\d+\)/g, "").replace(/https?:\/\/\S+/g, "");
      if (pattern.test(stripped)) problems.push(`${rel}:${lineNo}: ${why}: ${line.trim().slice(0, 100)}`);
    }
    if (isMarkdown && !fenced) {
      for (const m of line.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
        const target = m[1];
        if (/^[a-z]+:/.test(target)) continue; // http:, https:, mailto:
        check(file, lineNo, target, dirname(file));
      }
    }
    const withoutUrls = line.replace(/https?:\/\/\S+/g, "");
    // In code, a name inside a string literal is data (a file a test writes), not a reference.
    const prose = isMarkdown ? withoutUrls : withoutUrls.replace(/"[^"]*"|'[^']*'/g, '""');
    for (const m of prose.matchAll(/(?<![\w.{}/-])((?:[\w.-]+\/)*[\w.-]+\.md)(#[\w-]+)?(?![\w-])/g)) {
      const [, path, anchor] = m;
      if (path.includes("/")) {
        if (!/^(docs|packages|bench|scripts)\//.test(path) && !existsSync(resolve(dirname(file), path))) {
          problems.push(`${rel}:${lineNo}: reference to '${path}', which is not a file in the repository`);
          continue;
        }
        check(file, lineNo, `${path}${anchor ?? ""}`, dirname(file));
      } else if (!bareResolves(file, path)) {
        problems.push(`${rel}:${lineNo}: reference to '${path}', which is not a file in the repository (cite docs/… instead)`);
      } else if (anchor !== undefined) {
        const dirs = [dirname(file), root, join(root, "docs")];
        const hit = dirs.map((d) => join(d, path)).find((p) => existsSync(p));
        if (hit !== undefined && !anchorsOf(hit).has(anchor.slice(1))) {
          problems.push(`${rel}:${lineNo}: reference to '${path}${anchor}': no such anchor`);
        }
      }
    }
  });
}

if (problems.length > 0) {
  console.error(problems.join("\n"));
  console.error(`lint-docs: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`lint-docs: ${only ?? "all packages"} ok; every reference resolves`);

