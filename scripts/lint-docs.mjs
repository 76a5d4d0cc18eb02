#!/usr/bin/env node
// Every exported declaration in a package's shipped sources carries a doc comment (STYLE.md §2.1):
// the line before `export class|interface|type|function|const|enum|abstract class` must close a
// `/** … */` block (an overload signature shares the comment of the first one). Re-exports (`export { … } from`, `export type { … } from`, `export *`) are exempt.
//
//   node scripts/lint-docs.mjs [package]
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, dirname, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
function* files(dir) {
  for (const entry of readdirSync(dir)) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) yield* files(p);
    else if (entry.endsWith(".ts") && !entry.endsWith(".test.ts") && !entry.endsWith(".d.ts")) yield p;
  }
}
const only = process.argv[2];
const problems = [];
for (const pkg of readdirSync(join(root, "packages"))) {
  if (only && only !== pkg) continue;
  for (const file of files(join(root, "packages", pkg, "src"))) {
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
if (problems.length > 0) {
  console.error(problems.join("\n"));
  console.error(`lint-docs: ${problems.length} exported declaration(s) without a doc comment`);
  process.exit(1);
}
console.log(`lint-docs: ${only ?? "all packages"} ok`);
