/**
 * The remote branch of `weft.init`: a device whose tensors live on `weft serve` servers.
 *
 * @module
 */
import { ValueError, checkFunction, checkInteger, checkOptions, describeValue } from "@weft/environment";
import { type ConnectionOptions, type RemoteDevice, createRemoteDevice } from "@weft/remote";

/** What `init({ backend: "remote", … })` needs. */
export interface RemoteInitOptions {
  /** One server (`ws://host:port`, `wss://…` behind a TLS proxy), or several (a router). */
  readonly url?: string | readonly string[];
  /** The token the servers were started with. */
  readonly token?: string;
  /** Connection tuning: timeouts, heartbeat, batch size, a socket factory. */
  readonly remote?: ConnectionOptions;
}

/** The keys of {@link ConnectionOptions} (`init({ remote })`), for validation. */
const CONNECTION_KEYS = ["socket", "connectTimeoutMs", "heartbeatMs", "timeoutMs", "maxBatchItems"] as const satisfies readonly (keyof ConnectionOptions)[];

/** `url` as a non-empty list of `ws://`/`wss://` URLs, or a `ValueError` naming `op` and the fix. */
function checkUrls(op: string, url: unknown): string[] {
  const urls = url === undefined ? [] : typeof url === "string" ? [url] : Array.isArray(url) ? [...(url as unknown[])] : undefined;
  if (urls === undefined || urls.length === 0 || urls.some((u) => typeof u !== "string" || !/^wss?:\/\/[^\s/]+/.test(u))) {
    throw new ValueError(op, `backend "remote" needs url: "ws://host:port" (or a list of them, or wss:// behind a TLS proxy), not ${typeof url === "string" ? JSON.stringify(url) : describeValue(url)}`);
  }
  return urls as string[];
}

/**
 * The remote options of `init` checked before anything connects: `url` one or more
 * `ws://`/`wss://` URLs, `token` a string, `remote` a {@link ConnectionOptions} (a `socket`
 * function, positive integer timeouts and batch size).
 * @throws ValueError naming `op`, the bad option and what to pass.
 */
export function checkRemoteOptions(op: string, options: { readonly url?: unknown; readonly token?: unknown; readonly remote?: unknown }): void {
  checkUrls(op, options.url);
  if (options.token !== undefined && typeof options.token !== "string") {
    throw new ValueError(op, `pass options.token as the string weft serve was started with, not ${describeValue(options.token)}`);
  }
  const remote = checkOptions(op, options.remote, CONNECTION_KEYS);
  if (remote.socket !== undefined) checkFunction(op, "options.remote.socket", remote.socket);
  for (const key of ["connectTimeoutMs", "heartbeatMs", "timeoutMs", "maxBatchItems"] as const) {
    if (remote[key] !== undefined) checkInteger(op, `options.remote.${key}`, remote[key], 1);
  }
}

/**
 * Connects to the servers of `options.url` with `options.token`.
 * @throws ValueError when `url` is missing or not `ws://`/`wss://` URLs.
 * @throws RemoteAuthError when a server refuses the token (a missing token is refused the same way).
 * @throws RemoteSessionError when a server cannot be reached.
 */
export async function connectRemote(options: RemoteInitOptions): Promise<RemoteDevice> {
  const urls = checkUrls("init", options.url);
  return createRemoteDevice({ ...options.remote, url: urls, token: options.token ?? "" });
}
