/**
 * The bench's command line.
 *
 * @module
 */
import { type BenchOptions, WORKLOADS, type WorkloadName } from "./context.js";

/** The usage line printed on `--help` and on a bad option. */
export const USAGE = `usage: npm run bench -- [--quick] [--backend vulkan|opengles|auto] [--json <file>] [--only ${WORKLOADS.join(",")}]`;

/** A bad command line: names the option and what it accepts. */
export class OptionsError extends Error {
  override readonly name = "OptionsError";
}

/**
 * Parses the command line (without `node` and the script). Returns `"help"` for `--help`.
 * @throws OptionsError naming the bad option and what it accepts.
 */
export function parseOptions(argv: readonly string[]): BenchOptions | "help" {
  let quick = false;
  let backend: BenchOptions["backend"] = "auto";
  let json: string | undefined;
  let only = new Set<WorkloadName>(WORKLOADS);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined || v.startsWith("--")) throw new OptionsError(`${arg} needs a value`);
      return v;
    };
    if (arg === "--quick") quick = true;
    else if (arg === "--backend") {
      const v = value();
      if (v !== "vulkan" && v !== "opengles" && v !== "auto") throw new OptionsError(`--backend must be vulkan, opengles or auto, got '${v}'`);
      backend = v;
    } else if (arg === "--json") json = value();
    else if (arg === "--only") {
      const names = value().split(",").map((s) => s.trim()).filter((s) => s.length > 0);
      for (const name of names) {
        if (!(WORKLOADS as readonly string[]).includes(name)) throw new OptionsError(`unknown workload '${name}' (known: ${WORKLOADS.join(", ")})`);
      }
      only = new Set(names as WorkloadName[]);
    } else if (arg === "--help" || arg === "-h") return "help";
    else throw new OptionsError(`unknown option '${arg}'`);
  }
  return { quick, backend, json, only };
}
