/**
 * The remote branch of `weft.init`: a device whose tensors live on `weft serve` servers.
 *
 * @module
 */
import { WeftError } from "@weft/environment";
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

/**
 * Connects to the servers of `options.url` with `options.token`.
 * @throws WeftError (kind `"options"`) when `url` is missing or not `ws://`/`wss://` URLs.
 * @throws RemoteAuthError when a server refuses the token (a missing token is refused the same way).
 * @throws RemoteSessionError when a server cannot be reached.
 */
export async function connectRemote(options: RemoteInitOptions): Promise<RemoteDevice> {
  const urls = options.url === undefined ? [] : typeof options.url === "string" ? [options.url] : [...options.url];
  if (urls.length === 0 || urls.some((u) => typeof u !== "string" || !/^wss?:\/\/[^\s/]+/.test(u))) {
    throw new WeftError("options", `init: backend "remote" needs url: "ws://host:port" (or a list of them, or wss:// behind a TLS proxy), got ${JSON.stringify(options.url)}`);
  }
  return createRemoteDevice({ ...options.remote, url: urls, token: options.token ?? "" });
}
