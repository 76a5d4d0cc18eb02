/**
 * The `weft` command line: `weft demo`, `weft doctor`, `weft bench`, and `--help`/`--version`.
 *
 * @remarks
 * **One table.** {@link COMMANDS} lists every command with its options and help text; `weft
 * --help`, `weft <command> --help` and the usage printed on a bad command line all come from it,
 * so a new command is one entry (plus its case in {@link main}'s switch).
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { WeftError } from "@weft/environment";
import { createCpuDevice, createWebGpuDevice } from "../device/backends.js";
import { chooseDevice } from "../device/init.js";
import { runBench } from "./bench.js";
import { runDemo } from "./demo.js";
import { runDoctor } from "./doctor.js";
import { runSoak } from "./soak.js";
import { DEFAULT_STEPS, DEFAULT_TRAIN_SVG, runTrainDemo } from "./train.js";
import type { Output } from "./progress.js";
import { SERVE_HELP, ServeUsageError, parseServeArgs, runServe } from "./serve.js";

/** The commands of the CLI. */
export type CommandName = "demo" | "doctor" | "bench" | "serve" | "soak";

/** What `--help` says about one command. */
interface CommandHelp {
  /** The options, as on the usage line. */
  readonly synopsis: string;
  /** One line: what the command does. */
  readonly summary: string;
  /** One line per option (`--name VALUE   what it does`), printed by `weft <command> --help`. */
  readonly options: readonly string[];
}

/** Every command and its help (see the module remarks). */
export const COMMANDS: Readonly<Record<CommandName, CommandHelp>> = {
  demo: {
    synopsis: "[--backend cpu|webgpu|auto] [--requests N] [--train [--steps N] [--svg FILE | --no-svg]]",
    summary: "serve concurrent MLP requests on their own streams, checked against the CPU oracle; --train: train an MLP with grad and Adam",
    options: [
      "--backend cpu|webgpu|auto   the device (default auto: WebGPU on a hardware adapter, else the CPU)",
      "--requests N                concurrent requests (default 32)",
      "--train                     train an MLP on three spirals instead (valueAndGrad + Adam), to 95% held-out accuracy",
      `--steps N                   training steps (default ${DEFAULT_STEPS})`,
      `--svg FILE                  where --train writes its loss curve (default ${DEFAULT_TRAIN_SVG})`,
      "--no-svg                    write no chart",
    ],
  },
  doctor: {
    synopsis: "",
    summary: "the WebGPU adapter, its limits and features, and which backend init() picks and why",
    options: [],
  },
  bench: {
    synopsis: "[--backend cpu|webgpu|auto] [--size N] [--runs N] [--svg FILE | --no-svg]",
    summary: "an 8-op elementwise chain fused vs unfused: times, spread between runs, an SVG chart",
    options: [
      "--backend cpu|webgpu|auto   the device (default auto)",
      "--size N                    elements per tensor (default 1048576)",
      "--runs N                    timed runs per variant, for the spread (default 5)",
      "--svg FILE                  where the chart goes (default weft-bench.svg)",
      "--no-svg                    write no chart",
    ],
  },
  serve: SERVE_HELP,
  soak: {
    synopsis: "[--backend cpu|webgpu|auto] [--ops N]",
    summary: "a long serving run (new shapes, scalars, seeds and tasks) checking that memory and caches stay flat",
    options: [
      "--backend cpu|webgpu|auto   the device (default auto)",
      "--ops N                     operations to record (default 1000000)",
    ],
  },
};

function isCommand(name: string | undefined): name is CommandName {
  return name !== undefined && Object.hasOwn(COMMANDS, name);
}

/** The help text: every command on one line each, then how to get more. */
export const USAGE = [
  "usage: weft <command> [options]",
  "",
  "commands:",
  ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(8)} ${c.summary}`),
  "",
  "  weft <command> --help   the options of one command",
  "  weft --version          the installed version",
].join("\n");

/** The help of one command: its usage line, what it does, its options. */
export function commandUsage(name: CommandName): string {
  const c = COMMANDS[name];
  const lines = [`usage: weft ${name} ${c.synopsis}`.trimEnd(), "", c.summary];
  if (c.options.length > 0) lines.push("", "options:", ...c.options.map((o) => `  ${o}`));
  return lines.join("\n");
}

/** A command line the CLI cannot understand. */
export class UsageError extends WeftError {
  constructor(message: string, command?: CommandName) {
    super("usage", `${message}\n${command === undefined ? USAGE : commandUsage(command)}`);
  }
}

/** Parsed `--name value` options. */
export interface ParsedArgs {
  readonly command: string | undefined;
  /** What was asked besides running the command: its help, or the version. */
  readonly request: "run" | "help" | "version";
  readonly backend: "auto" | "cpu" | "webgpu";
  readonly requests: number;
  readonly size: number;
  readonly runs: number;
  /** Where `bench` (or `demo --train`) writes its chart; `undefined` for none (`--no-svg`). */
  readonly svg: string | undefined;
  /** Operations `soak` records. */
  readonly ops: number;
  /** `demo --train`: train instead of serving. */
  readonly train: boolean;
  /** Training steps of `demo --train`. */
  readonly steps: number;
}

/** The default chart file of `weft bench`. */
export const DEFAULT_SVG = "weft-bench.svg";

/**
 * Parses argv (without `node` and the script). `--help`/`-h` anywhere asks for the help of the
 * command (or of the CLI); `--version`/`-v` for the version.
 * @throws UsageError on unknown or malformed options, naming the command's own options.
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const first = argv[0];
  const global = first === undefined || first.startsWith("-");
  const command = global ? undefined : first;
  const rest = global ? argv : argv.slice(1);
  const known = isCommand(command) ? command : undefined;
  let request: ParsedArgs["request"] = "run";
  let backend: ParsedArgs["backend"] = "auto";
  let requests = 32;
  let size = 1 << 20;
  let runs = 5;
  let svg: string | undefined = DEFAULT_SVG;
  let ops = 1_000_000;
  let svgGiven = false;
  let train = false;
  let steps = DEFAULT_STEPS;
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    const value = rest[i + 1];
    const positive = (name: string): number => {
      const n = Number(value);
      if (!Number.isInteger(n) || n <= 0) throw new UsageError(`weft: ${name} needs a positive integer, got ${String(value)}`, known);
      i++;
      return n;
    };
    switch (flag) {
      case "--help":
      case "-h":
        request = "help";
        break;
      case "--version":
      case "-v":
        request = request === "help" ? "help" : "version";
        break;
      case "--backend":
        if (value !== "auto" && value !== "cpu" && value !== "webgpu") throw new UsageError(`weft: --backend must be cpu, webgpu or auto, got ${String(value)}`, known);
        backend = value;
        i++;
        break;
      case "--requests":
        requests = positive("--requests");
        break;
      case "--size":
        size = positive("--size");
        break;
      case "--runs":
        runs = positive("--runs");
        break;
      case "--svg":
        if (value === undefined || value.startsWith("-")) throw new UsageError(`weft: --svg needs a file name, got ${String(value)}`, known);
        svg = value;
        svgGiven = true;
        i++;
        break;
      case "--no-svg":
        svg = undefined;
        svgGiven = true;
        break;
      case "--train":
        train = true;
        break;
      case "--steps":
        steps = positive("--steps");
        break;
      case "--ops":
        ops = positive("--ops");
        break;
      default:
        throw new UsageError(`weft: unknown option ${String(flag)}`, known);
    }
  }
  if (train && !svgGiven) svg = DEFAULT_TRAIN_SVG;
  return { command, request, backend, requests, size, runs, svg, ops, train, steps };
}

/** The version of this package, read from its `package.json` (the one source of the version). */
export function version(): string {
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown };
  return typeof manifest.version === "string" ? manifest.version : "unknown";
}

/** Runs the CLI; resolves with the process exit code. */
export async function main(argv: readonly string[], out: Output, err: Output): Promise<number> {
  if (argv[0] === "serve" && !argv.includes("--help")) return serve(argv.slice(1), out, err);
  if (argv[0] === "help") {
    const topic = argv[1];
    out.write(`${isCommand(topic) ? commandUsage(topic) : USAGE}\n`);
    return 0;
  }
  let args: ParsedArgs;
  try {
    args = parseArgs(argv);
  } catch (error) {
    err.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  if (args.request === "version") {
    out.write(`${version()}\n`);
    return 0;
  }
  if (args.command !== undefined && !isCommand(args.command)) {
    err.write(`weft: unknown command ${args.command}\n${USAGE}\n`);
    return 2;
  }
  if (args.request === "help" || args.command === undefined) {
    out.write(`${args.command === undefined ? USAGE : commandUsage(args.command)}\n`);
    return args.request === "help" ? 0 : 2;
  }
  try {
    switch (args.command) {
      case "demo": {
        const choice = await chooseDevice({ backend: args.backend });
        out.write(`weft: using ${choice.backend} (${choice.reason})\n`);
        if (args.train) {
          const trained = await runTrainDemo({ device: choice.device, out, steps: args.steps, svg: args.svg });
          return trained.passed ? 0 : 1;
        }
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
        await runBench({ fused: choice.device, unfused, out, size: args.size, runs: args.runs, svg: args.svg });
        return 0;
      }
      case "serve":
        return await serve(argv.slice(1), out, err);
      case "soak": {
        const choice = await chooseDevice({ backend: args.backend });
        out.write(`weft: using ${choice.backend} (${choice.reason})\n`);
        const report = await runSoak({ device: choice.device, ops: args.ops, out });
        return report.problems.length === 0 ? 0 : 1;
      }
      default:
        return args.command satisfies never;
    }
  } catch (error) {
    err.write(`weft ${args.command}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

/** `weft serve …`: its own options (see `serve.ts`); runs until SIGINT/SIGTERM. */
async function serve(argv: readonly string[], out: Output, err: Output): Promise<number> {
  try {
    await runServe({ args: parseServeArgs(argv, process.env), out });
    return 0;
  } catch (error) {
    err.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return error instanceof ServeUsageError ? 2 : 1;
  }
}
