/**
 * The `weft` command line: `weft demo`, `weft doctor`, `weft bench`.
 *
 * @module
 */
import { WeftError } from "@weft/environment";
import { createCpuDevice, createWebGpuDevice } from "../device/backends.js";
import { chooseDevice } from "../device/init.js";
import { runBench } from "./bench.js";
import { runDemo } from "./demo.js";
import { runDoctor } from "./doctor.js";
import type { Output } from "./progress.js";

/** A command line the CLI cannot understand. */
export class UsageError extends WeftError {
  constructor(message: string) {
    super("usage", `${message}\n${USAGE}`);
  }
}

/** The help text. */
export const USAGE = `usage: weft <command> [options]
  demo    [--backend cpu|webgpu|auto] [--requests N]   serve concurrent MLP requests, check against the CPU oracle
  doctor                                              adapter, limits, features, chosen backend and why
  bench   [--backend cpu|webgpu|auto] [--size N]      fused vs unfused 8-op elementwise chain`;

/** Parsed `--name value` options. */
export interface ParsedArgs {
  readonly command: string | undefined;
  readonly backend: "auto" | "cpu" | "webgpu";
  readonly requests: number;
  readonly size: number;
}

/** Parses argv (without `node` and the script). @throws UsageError on unknown or malformed options. */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const [command, ...rest] = argv;
  let backend: ParsedArgs["backend"] = "auto";
  let requests = 32;
  let size = 1 << 20;
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    const value = rest[i + 1];
    const positive = (name: string): number => {
      const n = Number(value);
      if (!Number.isInteger(n) || n <= 0) throw new UsageError(`weft: ${name} needs a positive integer, got ${String(value)}`);
      i++;
      return n;
    };
    switch (flag) {
      case "--backend":
        if (value !== "auto" && value !== "cpu" && value !== "webgpu") throw new UsageError(`weft: --backend must be cpu, webgpu or auto, got ${String(value)}`);
        backend = value;
        i++;
        break;
      case "--requests":
        requests = positive("--requests");
        break;
      case "--size":
        size = positive("--size");
        break;
      default:
        throw new UsageError(`weft: unknown option ${String(flag)}`);
    }
  }
  return { command, backend, requests, size };
}

/** Runs the CLI; resolves with the process exit code. */
export async function main(argv: readonly string[], out: Output, err: Output): Promise<number> {
  let args: ParsedArgs;
  try {
    args = parseArgs(argv);
  } catch (error) {
    err.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  try {
    switch (args.command) {
      case "demo": {
        const choice = await chooseDevice({ backend: args.backend });
        out.write(`weft: using ${choice.backend} (${choice.reason})\n`);
        const report = await runDemo({ device: choice.device, requests: args.requests, out });
        return report.mismatches === 0 ? 0 : 1;
      }
      case "doctor":
        await runDoctor({ out });
        return 0;
      case "bench": {
        const choice = await chooseDevice({ backend: args.backend });
        out.write(`weft: using ${choice.backend} (${choice.reason})\n`);
        const unfused = choice.backend === "cpu" ? createCpuDevice({ fusion: false }) : await createWebGpuDevice({ fusion: false });
        await runBench({ fused: choice.device, unfused, out, size: args.size });
        return 0;
      }
      case undefined:
      case "help":
      case "--help":
        out.write(`${USAGE}\n`);
        return args.command === undefined ? 2 : 0;
      default:
        err.write(`weft: unknown command ${args.command}\n${USAGE}\n`);
        return 2;
    }
  } catch (error) {
    err.write(`weft ${args.command ?? ""}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
