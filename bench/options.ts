/**
 * The bench's command line.
 *
 * @module
 */
import { type BenchOptions, PEERS, type PeerName, type Placement, WORKLOADS } from "./context.js";
import { CPU_WORKLOADS } from "./cpu/cpu-context.js";

/** The usage line printed on `--help` and on a bad option. */
export const USAGE = `usage: npm run bench -- [--quick] [--backend vulkan|opengles|auto|cpu] [--json <file>] [--only <names>] [--runs <n>] [--isolate] [--peers <names>]
  GPU workloads: ${WORKLOADS.join(",")}
  --runs <n>: n whole runs; every target reports its median and its spread between runs
  --isolate: each library (${PEERS.join(",")}) in its own process, one after the other, figures merged
  --peers <names>: create only these libraries in this process (what --isolate passes its children; the CPU section knows weft and tfjs)
  CPU workloads (--backend cpu: Weft's CPU backend vs TF.js CPU and WebAssembly): ${CPU_WORKLOADS.join(",")}`;

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
  let names: string[] | undefined;
  let runs = 1;
  let placement: Placement = "shared";
  let peers: PeerName[] = [...PEERS];
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
      if (v !== "vulkan" && v !== "opengles" && v !== "auto" && v !== "cpu") throw new OptionsError(`--backend must be vulkan, opengles, auto or cpu, got '${v}'`);
      backend = v;
    } else if (arg === "--json") json = value();
    else if (arg === "--only") {
      names = value().split(",").map((s) => s.trim()).filter((s) => s.length > 0);
    } else if (arg === "--runs") {
      const v = value();
      runs = Number(v);
      if (!Number.isInteger(runs) || runs < 1 || runs > 20) throw new OptionsError(`--runs must be a whole number from 1 to 20, got '${v}'`);
    } else if (arg === "--isolate") placement = "isolated";
    else if (arg === "--peers") {
      const list = value().split(",").map((s) => s.trim()).filter((s) => s.length > 0);
      for (const p of list) if (!(PEERS as readonly string[]).includes(p)) throw new OptionsError(`unknown library '${p}' in --peers (known: ${PEERS.join(", ")})`);
      peers = list as PeerName[];
    } else if (arg === "--help" || arg === "-h") return "help";
    else throw new OptionsError(`unknown option '${arg}'`);
  }
  // The CPU section has its own workloads; `--only` names those of the chosen section.
  const known: readonly string[] = backend === "cpu" ? CPU_WORKLOADS : WORKLOADS;
  for (const name of names ?? []) {
    if (!known.includes(name)) throw new OptionsError(`unknown workload '${name}' (known${backend === "cpu" ? " with --backend cpu" : ""}: ${known.join(", ")})`);
  }
  if (placement === "isolated" && backend === "cpu") throw new OptionsError("--isolate is for the GPU section (the CPU section runs its libraries in one process)");
  return { quick, backend, json, only: new Set(names ?? known), peers: new Set(peers), runs, placement };
}
