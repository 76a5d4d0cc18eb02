/**
 * Keeping Dawn's native warnings that a user cannot act on out of the CLI's output.
 *
 * @remarks
 * **Why a child process.** Dawn (the `webgpu` package) writes its warnings with `fprintf(stderr)`
 * from native code, below anything JavaScript can intercept in the same process. On machines
 * without a GPU it prints, on every adapter request, that Mesa's OpenGL ES limits were
 * "artificially reduced" (two lines), and — when asked for Vulkan without a Vulkan loader — that
 * Vulkan could not be loaded. Neither says anything the user can fix. So the `weft` executable
 * runs the command in a child Node process whose stderr it reads line by line, dropping exactly
 * those warnings ({@link NATIVE_NOISE}) and passing everything else through unchanged.
 * `WEFT_NATIVE_LOG=all` turns the filter off. Programs that import `weft` as a library still see
 * the lines on their stderr (documented in the README's troubleshooting notes).
 *
 * @module
 */
import { spawn } from "node:child_process";

/** The Dawn warnings the CLI drops: each matches the text after `Warning: ` of one warning. */
export const NATIVE_NOISE: readonly RegExp[] = [
  /^max(Dynamic)?\w+ artificially reduced from \d+ to \d+ to fit dynamic offset allocation limit\.$/,
  /^Couldn't load Vulkan: /,
];

/** Set in the child so it does not filter again; `WEFT_NATIVE_LOG=all` disables the filter. */
const CHILD_MARK = "WEFT_NATIVE_LOG_FILTERED";

/**
 * Drops the {@link NATIVE_NOISE} warnings from a stream of stderr text. A Dawn warning is a line
 * `Warning: <message>` followed by its location lines (`    at …`); a dropped warning takes its
 * location lines with it. Text arrives in chunks, so a partial last line waits for the next one.
 */
export class NativeLogFilter {
  #partial = "";
  /** Whether the previous complete line was a dropped warning (its `    at` lines go too). */
  #dropping = false;

  /** Returns the part of `chunk` (plus what was held back) to pass through. */
  push(chunk: string): string {
    const text = this.#partial + chunk;
    const lines = text.split("\n");
    this.#partial = lines.pop() ?? "";
    let out = "";
    for (const line of lines) if (this.#keep(line)) out += `${line}\n`;
    return out;
  }

  /** What is held back at the end of the stream. */
  end(): string {
    const rest = this.#partial;
    this.#partial = "";
    return rest !== "" && this.#keep(rest) ? rest : "";
  }

  #keep(line: string): boolean {
    if (this.#dropping && /^\s+at /.test(line)) return false;
    this.#dropping = false;
    const warning = /^Warning: (.*)$/.exec(line);
    if (warning !== null && NATIVE_NOISE.some((re) => re.test(warning[1] ?? ""))) {
      this.#dropping = true;
      return false;
    }
    return true;
  }
}

/**
 * Whether the command line may load Dawn, so that its run should go through the filter: `demo`,
 * `bench` and `doctor`, unless they asked for help, the version or `--backend cpu`, and unless
 * this is already the filtered child or the user turned the filter off.
 */
export function wantsNativeFilter(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): boolean {
  if (env[CHILD_MARK] !== undefined || env["WEFT_NATIVE_LOG"] === "all") return false;
  const command = argv[0];
  if (command !== "demo" && command !== "bench" && command !== "doctor") return false;
  if (argv.some((a) => a === "--help" || a === "-h" || a === "--version" || a === "-v")) return false;
  const backend = argv.indexOf("--backend");
  return !(backend >= 0 && argv[backend + 1] === "cpu");
}

/**
 * Runs `script argv` in a child Node process (same flags), stdin and stdout inherited (progress
 * bars still see the terminal), stderr through a {@link NativeLogFilter}. Forwards SIGINT/SIGTERM.
 * Resolves with the child's exit code (128 + signal number when a signal ended it).
 */
export function runFiltered(script: string, argv: readonly string[]): Promise<number> {
  const child = spawn(process.execPath, [...process.execArgv, script, ...argv], {
    stdio: ["inherit", "inherit", "pipe"],
    env: { ...process.env, [CHILD_MARK]: "1" },
  });
  const filter = new NativeLogFilter();
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => process.stderr.write(filter.push(chunk)));
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  const onInt = forward("SIGINT");
  const onTerm = forward("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  return new Promise((resolve) => {
    child.on("close", (code, signal) => {
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
      process.stderr.write(filter.end());
      const signals: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 2, SIGTERM: 15, SIGKILL: 9 };
      resolve(code ?? 128 + (signal === null ? 0 : (signals[signal] ?? 0)));
    });
    child.on("error", (error) => {
      process.stderr.write(`weft: could not start the command (${error.message})\n`);
      resolve(1);
    });
  });
}
