/**
 * A user `Device` that computes on `weft serve` servers: `createRemoteDevice({ url, token })`.
 *
 * @module
 */
import { ValueError, checkFunction, checkInteger, checkOptions, describeValue } from "@weft/environment";
import { FusionDevice } from "@weft/fusion";
import { Device, type MemoryReport, type StatsReport } from "@weft/tensor";
import type { ServerMemory } from "../protocol/messages.js";
import { type ConnectionOptions, type ConnectionStats, RemoteConnection } from "./connection.js";
import { RemoteRuntime, type RouterStats } from "./remote-runtime.js";

/** The keys of {@link ConnectionOptions}, for validation. */
export const CONNECTION_KEYS = ["socket", "connectTimeoutMs", "heartbeatMs", "timeoutMs", "maxBatchItems"] as const satisfies readonly (keyof ConnectionOptions)[];

/**
 * The values of connection options checked: `socket` a function, timeouts and the batch size
 * positive integers. `prefix` is how the caller's options name them (`"options.remote."` for `init`).
 * @throws ValueError naming `op`, the bad option and what to pass.
 */
export function checkConnectionOptions(op: string, options: Partial<Record<(typeof CONNECTION_KEYS)[number], unknown>>, prefix: string): void {
  if (options.socket !== undefined) checkFunction(op, `${prefix}socket`, options.socket);
  for (const key of ["connectTimeoutMs", "heartbeatMs", "timeoutMs", "maxBatchItems"] as const) {
    if (options[key] !== undefined) checkInteger(op, `${prefix}${key}`, options[key], 1);
  }
}

/**
 * {@link RemoteDeviceOptions} checked before anything connects: known keys only, `url` one or
 * more `ws://`/`wss://` URLs, `token` a string, the connection options as
 * {@link checkConnectionOptions} wants them. Returns the URLs as a list.
 * @throws ValueError naming `op`, the bad option and what to pass.
 */
export function checkRemoteDeviceOptions(op: string, options: unknown): string[] {
  const opts = checkOptions(op, options, ["url", "token", ...CONNECTION_KEYS]);
  const url = opts.url;
  const urls = typeof url === "string" ? [url] : Array.isArray(url) ? [...(url as unknown[])] : [];
  if (urls.length === 0 || urls.some((u) => typeof u !== "string" || !/^wss?:\/\/[^\s/]+/.test(u))) {
    throw new ValueError(op, `pass url as "ws://host:port" (or a list of them, or wss:// behind a TLS proxy), not ${typeof url === "string" ? JSON.stringify(url) : describeValue(url)}`);
  }
  if (opts.token !== undefined && typeof opts.token !== "string") {
    throw new ValueError(op, `pass token as the string weft serve was started with, not ${describeValue(opts.token)}`);
  }
  checkConnectionOptions(op, opts, "options.");
  return urls as string[];
}

/** Options of {@link createRemoteDevice}. */
export interface RemoteDeviceOptions extends ConnectionOptions {
  /** One server (`ws://host:port`), or several: client streams are spread over them (a router). */
  readonly url: string | readonly string[];
  /** The token the servers were started with (`weft serve --token`). */
  readonly token: string;
}

/** One server as the client sees it: its session, what the client holds there, what was sent. */
export interface RemoteServerReport {
  readonly url: string;
  /** The server's backend (`"cpu"`, `"webgpu"`). */
  readonly backend: string;
  /** Whether the session is alive (`false` once it ended: see `failure`). */
  readonly alive: boolean;
  /** Why the session ended, if it did. */
  readonly failure: string | undefined;
  /** Server tensors this client holds there, and their bytes. */
  readonly liveTensors: number;
  readonly bytesInUse: number;
  /** Frames, bytes and items sent and received, and tensors moved in. */
  readonly stats: Readonly<ConnectionStats>;
}

/** `memory()` of a remote device: the client's report plus one entry per server. */
export interface RemoteMemoryReport extends MemoryReport {
  readonly servers: readonly RemoteServerReport[];
}

/**
 * `stats()` of a remote device: the client's own report (what it recorded and forwarded; the
 * kernels run on the servers) plus, per server, its counters, and the router's moves.
 */
export interface RemoteStats extends StatsReport {
  readonly servers: readonly RemoteServerReport[];
  readonly router: Readonly<RouterStats>;
}

/**
 * A `Device` whose tensors live on one or several `weft serve` servers.
 *
 * @remarks
 * **What runs where.** The client records lazily like any device (`FusionDevice`), forwards every
 * operation in order to the server its stream lives on, and reads values back over the network;
 * the servers fuse and execute. `dataSync()` is not available (reads are asynchronous).
 * **Reports.** {@link RemoteDevice.memory} is synchronous and adds a client-side entry per server;
 * {@link RemoteDevice.serverMemory} asks each server (a round trip) for what it holds.
 * **Invariant.** The connections never change; once a session ends, its tensors fail with its
 * {@link RemoteSessionError} and a new device (`init` again) is needed.
 */
export class RemoteDevice extends Device {
  /** The runtime (connections, router). */
  readonly runtime: RemoteRuntime;

  constructor(runtime: RemoteRuntime) {
    if (!(runtime instanceof RemoteRuntime)) {
      throw new ValueError("new RemoteDevice", `pass a RemoteRuntime, not ${describeValue(runtime)}; call createRemoteDevice({ url, token }) to connect`);
    }
    const first = runtime.connections[0] as RemoteConnection;
    const where = runtime.connections.length === 1 ? first.url : `${runtime.connections.length} servers`;
    // No client-side exploration: every operation is forwarded as it is recorded; servers fuse.
    super(new FusionDevice(runtime, { maxExplorations: 0 }), { label: `remote (${first.backend} @ ${where})` });
    this.runtime = runtime;
  }

  /** One report per server, client-side (no round trip). */
  servers(): RemoteServerReport[] {
    return this.runtime.connections.map((c) => ({
      url: c.url,
      backend: c.backend,
      alive: c.failure === undefined,
      failure: c.failure?.message,
      liveTensors: c.liveTensors,
      bytesInUse: c.liveBytes,
      stats: { ...c.stats },
    }));
  }

  /** The client's memory report plus one entry per server. */
  override memory(): RemoteMemoryReport {
    return { ...super.memory(), servers: this.servers() };
  }

  /** The client's report, per-server counters and the router's moves. */
  override stats(): RemoteStats {
    return { ...super.stats(), servers: this.servers(), router: { ...this.runtime.router } };
  }

  /** What each server holds for this client and in total (one round trip per server, in `url` order). */
  serverMemory(): Promise<ServerMemory[]> {
    for (const c of this.runtime.connections) c.flush();
    return Promise.all(this.runtime.connections.map((c) => c.memory()));
  }

  /** Ends every session (the servers free this client's tensors). */
  close(): void {
    for (const c of this.runtime.connections) c.close();
  }
}

/**
 * Connects to every server in `options.url`, authenticates, and returns a device that computes
 * there. The device's dtypes are those every server stores.
 * @throws RemoteAuthError when a server refuses the token (the other sessions are closed).
 * @throws RemoteSessionError when a server cannot be reached or refuses the session.
 */
export async function createRemoteDevice(options: RemoteDeviceOptions): Promise<RemoteDevice> {
  const urls = checkRemoteDeviceOptions("createRemoteDevice", options);
  const opened = await Promise.allSettled(urls.map((url) => RemoteConnection.open(url, options.token, options)));
  const connections = opened.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  const failed = opened.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed !== undefined) {
    for (const c of connections) c.close();
    throw failed.reason;
  }
  return new RemoteDevice(new RemoteRuntime(connections));
}
