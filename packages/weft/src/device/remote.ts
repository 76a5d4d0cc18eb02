/**
 * The remote branch of `weft.init`: a device whose tensors live on `weft serve` servers.
 *
 * @module
 */
import { checkOptions } from "@weft/environment";
import { CONNECTION_KEYS, type ConnectionOptions, type RemoteDevice, checkConnectionOptions, checkRemoteDeviceOptions, createRemoteDevice } from "@weft/remote";

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
 * The remote options of `init` checked before anything connects (`checkRemoteDeviceOptions` of
 * `@weft/remote`): `url`, `token`, and `remote` as connection options. Returns the URLs as a list.
 * @throws ValueError naming `op`, the bad option and what to pass.
 */
export function checkRemoteOptions(op: string, options: { readonly url?: unknown; readonly token?: unknown; readonly remote?: unknown }): string[] {
  checkConnectionOptions(op, checkOptions(op, options.remote, CONNECTION_KEYS), "options.remote.");
  return checkRemoteDeviceOptions(op, { url: options.url, token: options.token });
}

/**
 * Connects to the servers of `options.url` with `options.token`.
 * @throws ValueError when `url` is missing or not `ws://`/`wss://` URLs.
 * @throws RemoteAuthError when a server refuses the token (a missing token is refused the same way).
 * @throws RemoteSessionError when a server cannot be reached.
 */
export async function connectRemote(options: RemoteInitOptions): Promise<RemoteDevice> {
  const urls = checkRemoteOptions("init", options);
  return createRemoteDevice({ ...options.remote, url: urls, token: options.token ?? "" });
}
