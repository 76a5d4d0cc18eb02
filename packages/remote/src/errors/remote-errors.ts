/**
 * The errors of the remote backend: one family, `RemoteError`, each with a stable `kind` a caller
 * can switch on, and a message that says what happened and what to do.
 *
 * @module
 */
import { WeftError } from "@weft/environment";

/**
 * Why a remote session ended or a request failed. The stable names a server sends in its `fatal`
 * message and a client's errors carry as `reason`.
 * - `auth`: the token was missing or wrong (at `init`).
 * - `version`: client and server speak different protocol versions.
 * - `protocol`: a frame that is not a valid message (malformed, a forged or stale tensor id).
 * - `frame-too-large`: a frame above the server's `maxFrameBytes`.
 * - `limit`: a session limit was exceeded (tensors, memory, streams, pending requests).
 * - `connection-lost`: the connection closed, or the server stopped answering.
 * - `server`: the server failed outside any tensor (it is shutting down, an internal error).
 */
export type RemoteFailure = "auth" | "version" | "protocol" | "frame-too-large" | "limit" | "connection-lost" | "server";

/**
 * The base of every remote error. `kind` is `"remote"`; {@link RemoteError.reason} says which
 * failure it is, {@link RemoteError.server} which server (its URL).
 */
export class RemoteError extends WeftError {
  /** Which failure (see {@link RemoteFailure}). */
  readonly reason: RemoteFailure;
  /** The server's URL, or `""` where it does not apply (a server-side error). */
  readonly server: string;

  constructor(reason: RemoteFailure, server: string, message: string, options?: ErrorOptions) {
    super("remote", message, options);
    this.reason = reason;
    this.server = server;
  }
}

/** The server refused the token (missing or wrong). Not transient: fix the token. */
export class RemoteAuthError extends RemoteError {
  constructor(server: string, detail: string) {
    super("auth", server, `remote ${server}: the server refused the token (${detail}); pass the token \`weft serve --token\` was started with: init({ backend: "remote", url, token })`);
  }
}

/**
 * A session limit was exceeded, either refused at the call on the client (an upload larger than the
 * server's frame limit) or by the server, which then closed the session.
 */
export class RemoteLimitError extends RemoteError {
  /** Which limit (`maxFrameBytes`, `maxTensorsPerSession`, `maxSessionBytes`, …). */
  readonly limit: string;

  constructor(server: string, limit: string, detail: string, options?: ErrorOptions) {
    super("limit", server, `remote ${server}: ${detail} (server limit ${limit}); raise it with \`weft serve --${kebab(limit)}\` or send less at once`, options);
    this.limit = limit;
  }
}

/**
 * The session is gone: the connection closed or stopped answering, the server rejected a frame
 * (protocol, size, version) or shut down. Every pending read and sync of the session rejects with
 * it; later operations carry it. Re-run `init` to get a new session.
 */
export class RemoteSessionError extends RemoteError {
  /** The WebSocket close code, when the connection closed (`1006`: dropped without a close frame). */
  readonly closeCode: number | undefined;
  /** For a `limit` failure, the server limit that was exceeded (`maxTensorsPerSession`, …). */
  readonly limit: string | undefined;

  constructor(reason: RemoteFailure, server: string, detail: string, closeCode?: number, limit?: string, options?: ErrorOptions) {
    super(reason, server, `remote ${server}: ${detail}${closeCode === undefined ? "" : ` (close code ${closeCode})`}; the session is over — its tensors are gone; call init() again to start a new one`, options);
    this.closeCode = closeCode;
    this.limit = limit;
  }
}

/**
 * The root cause of a failed remote computation, as the server described it: the server-side
 * error's `kind`, class name and message. A failed read rejects with a `TensorComputationError`
 * whose `root` is this error, exactly as a local failed read does.
 */
export class RemoteComputationError extends RemoteError {
  /** The server-side error's `kind` (`"computation"`, `"out-of-memory"`, `"unsupported"`, …). */
  readonly remoteKind: string;
  /** The server-side error's class name. */
  readonly remoteName: string;

  constructor(server: string, remoteKind: string, remoteName: string, message: string) {
    super("server", server, `${remoteName} on ${server}: ${message}`);
    this.remoteKind = remoteKind;
    this.remoteName = remoteName;
  }
}

/** `maxFrameBytes` → `max-frame-bytes` (the CLI flag of a limit). */
function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
