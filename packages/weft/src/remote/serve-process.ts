/**
 * Test support: real `weft serve` processes on 127.0.0.1 (the built CLI, `dist/cli.js`), started
 * once per suite file and always stopped.
 *
 * @remarks
 * **Bounded.** Start-up waits at most `startTimeoutMs` for the "listening" line; `stop()` sends
 * SIGTERM, then SIGKILL after 5 s. Every process started here is also killed when the test process
 * exits. Servers listen on 127.0.0.1 only, on a port the OS picks (`--port 0`).
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The built CLI (`npm run build` in `packages/weft`; Nx builds it before the tests). */
export const CLI = fileURLToPath(new URL("../../dist/cli.js", import.meta.url));

/** The token the suites' servers use. */
export const SERVE_TOKEN = "weft-test-token";

/** A running `weft serve`. */
export interface ServeProcess {
  /** `ws://127.0.0.1:PORT`. */
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** Everything the server printed so far. */
  output(): string;
  /** SIGTERM, then SIGKILL after 5 s; resolves when the process exited. */
  stop(): Promise<void>;
}

/** Options of {@link startServe}. */
export interface StartServeOptions {
  readonly token?: string;
  readonly backend?: "cpu" | "webgpu" | "auto";
  /** Extra `weft serve` flags (limits). */
  readonly args?: readonly string[];
  readonly startTimeoutMs?: number;
}

const children = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});

/** Whether the CLI is built (the suites fail with a clear message when it is not). */
export function cliBuilt(): boolean {
  return existsSync(CLI);
}

/**
 * Starts `weft serve --port 0 --host 127.0.0.1` and resolves once it listens.
 * @throws Error when the CLI is not built, or the server did not listen in time (with its output).
 */
export async function startServe(options: StartServeOptions = {}): Promise<ServeProcess> {
  if (!cliBuilt()) throw new Error(`weft serve: ${CLI} is missing; build it first (cd packages/weft && npm run build)`);
  const args = [CLI, "serve", "--port", "0", "--host", "127.0.0.1", "--backend", options.backend ?? "cpu", ...(options.args ?? [])];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WEFT_TOKEN: options.token ?? SERVE_TOKEN } });
  children.add(child);
  let text = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => (text += d));
  child.stderr?.setEncoding("utf8").on("data", (d: string) => (text += d));
  const exited = new Promise<void>((resolve) => child.once("exit", () => {
    children.delete(child);
    resolve();
  }));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`weft serve did not listen within ${options.startTimeoutMs ?? 30_000} ms:\n${text}`)), options.startTimeoutMs ?? 30_000);
    const look = (): void => {
      const m = /listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(text);
      if (m === null) return;
      clearTimeout(timer);
      resolve(Number(m[1]));
    };
    child.stdout?.on("data", look);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`weft serve exited with ${String(code)} before listening:\n${text}`));
    });
  });
  return {
    url: `ws://127.0.0.1:${port}`,
    port,
    child,
    output: () => text,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
