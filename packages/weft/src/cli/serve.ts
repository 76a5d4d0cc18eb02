/**
 * `weft serve`: a device on this machine, served to remote clients over WebSocket
 * (`init({ backend: "remote", url, token })`).
 *
 * @module
 */
import { DEFAULT_LIMITS, type RemoteLimits } from "@weft/remote";
import { type RemoteServer, startServer } from "@weft/remote/server";
import { chooseDevice } from "../device/init.js";
import type { Output } from "./progress.js";

/** What `weft serve --help` prints (the CLI's command table entry). */
export const SERVE_HELP = {
  synopsis: "--port P --token T [--backend cpu|webgpu|auto] [--host H] [--max-… N]",
  summary: "serve this machine's device to remote clients: init({ backend: \"remote\", url, token })",
  options: [
    "--port P                    the port (0: any free port, printed on the listening line)",
    "--token T                   the shared secret clients must present (or the WEFT_TOKEN variable)",
    "--backend cpu|webgpu|auto   the device served (default auto)",
    "--host H                    the interface (default 127.0.0.1; put a TLS proxy in front to expose it)",
    "--max-frame-bytes N         largest frame a client may send (default 64 MiB)",
    "--max-tensors-per-session N live tensors per session (default 65536)",
    "--max-session-bytes N       bytes of live tensors per session (default 2 GiB)",
    "--max-streams-per-session N live streams per session (default 4096)",
    "--max-pending-requests N    unanswered reads/syncs per session (default 4096)",
    "--max-sessions N            sessions at once (default 64)",
  ],
} as const;

/** Parsed `weft serve` options. */
export interface ServeArgs {
  readonly port: number;
  readonly token: string;
  readonly host: string;
  readonly backend: "auto" | "cpu" | "webgpu";
  readonly limits: Partial<RemoteLimits>;
}

/** A `weft serve` command line that cannot run. */
export class ServeUsageError extends Error {
  constructor(message: string) {
    super(`${message}\nusage: weft serve ${SERVE_HELP.synopsis}\n  ${SERVE_HELP.options.join("\n  ")}`);
    this.name = "ServeUsageError";
  }
}

/** The limit flags, `--max-frame-bytes` → `maxFrameBytes`. */
const LIMIT_FLAGS = Object.fromEntries(
  (Object.keys(DEFAULT_LIMITS) as (keyof RemoteLimits)[]).map((name) => [`--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, name]),
) as Record<string, keyof RemoteLimits>;

/**
 * Parses `weft serve` options; `env.WEFT_TOKEN` stands in for `--token` (keeps the token out of
 * process listings).
 * @throws ServeUsageError on a missing port or token, or a malformed option.
 */
export function parseServeArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): ServeArgs {
  let port: number | undefined;
  let token = env["WEFT_TOKEN"];
  let host = "127.0.0.1";
  let backend: ServeArgs["backend"] = "auto";
  const limits: Partial<Record<keyof RemoteLimits, number>> = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] as string;
    const value = argv[i + 1];
    if (value === undefined) throw new ServeUsageError(`weft serve: ${flag} needs a value`);
    i++;
    const integer = (min: number): number => {
      const n = Number(value);
      if (!Number.isSafeInteger(n) || n < min) throw new ServeUsageError(`weft serve: ${flag} needs an integer ≥ ${min}, got ${value}`);
      return n;
    };
    const limit = LIMIT_FLAGS[flag];
    if (limit !== undefined) {
      limits[limit] = integer(1);
      continue;
    }
    switch (flag) {
      case "--port":
        port = integer(0);
        if (port > 65_535) throw new ServeUsageError(`weft serve: --port must be at most 65535, got ${value}`);
        break;
      case "--token":
        token = value;
        break;
      case "--host":
        host = value;
        break;
      case "--backend":
        if (value !== "auto" && value !== "cpu" && value !== "webgpu") throw new ServeUsageError(`weft serve: --backend must be cpu, webgpu or auto, got ${value}`);
        backend = value;
        break;
      default:
        throw new ServeUsageError(`weft serve: unknown option ${flag}`);
    }
  }
  if (port === undefined) throw new ServeUsageError("weft serve: --port is required (0 picks a free port)");
  if (token === undefined || token.length === 0) throw new ServeUsageError("weft serve: --token (or WEFT_TOKEN) is required: clients must present it");
  return { port, token, host, backend, limits };
}

/** Options of {@link runServe}. */
export interface RunServeOptions {
  readonly args: ServeArgs;
  readonly out: Output;
  /** Resolves when the server should stop (default: SIGINT or SIGTERM). */
  readonly until?: Promise<unknown>;
}

/**
 * Chooses the device, starts the server, prints `weft serve: listening on ws://HOST:PORT …`, and
 * resolves once `until` settles and the server has closed (every session's tensors disposed).
 */
export async function runServe(options: RunServeOptions): Promise<void> {
  const { args, out } = options;
  // A restarted server starts with the plans its predecessor explored (keyed by version and adapter).
  const choice = await chooseDevice({ backend: args.backend, planCache: true });
  let server: RemoteServer;
  server = await startServer({
    device: { fusion: choice.device.fusion, backend: choice.backend, dtypes: choice.device.dtypes },
    token: args.token,
    port: args.port,
    host: args.host,
    limits: args.limits,
    log: (line) => out.write(`${line}\n`),
  });
  out.write(`weft serve: listening on ws://${args.host}:${server.port} (backend ${choice.backend}: ${choice.reason}); clients need the token\n`);
  await (options.until ?? signalled());
  await server.close();
  out.write("weft serve: stopped\n");
}

/** Resolves on the first SIGINT or SIGTERM. */
function signalled(): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
