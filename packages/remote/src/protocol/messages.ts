/**
 * The messages a remote client and a `weft serve` server exchange: one MessagePack-encoded message
 * per binary WebSocket frame (`codec.ts`). Tensor bytes travel as MessagePack `bin` inside those
 * binary frames, never as text.
 *
 * @remarks
 * **Session.** The client opens with {@link Hello} (protocol version and token); the server answers
 * {@link Welcome} (its limits, backend and dtypes) or closes with {@link CloseCode.Unauthorized}.
 * After that the client sends only {@link Batch} frames, the server only {@link Reply} frames.
 * **Order.** A batch's items run on the server in order, and batches in the order they arrive: the
 * client's execution order is the server's. Items are tagged with the client stream they belong to;
 * each client stream is one server stream (its own lazy queue, fused server-side).
 * **Ids.** Tensor ids are the session's own: minted by the client, strictly increasing, valid only
 * in that session. An id the session does not hold (forged, another session's, already dropped)
 * ends the session with a `protocol` failure.
 *
 * @module
 */
import type { DType, OperationIr } from "@weft/fusion";

/** The protocol version; client and server must agree exactly. */
export const PROTOCOL_VERSION = 1;

/** WebSocket close codes the server uses (4000–4999 is the application range). */
export const CloseCode = {
  /** Normal end (the client or the server closed on purpose). */
  Normal: 1000,
  /** The server is shutting down. */
  GoingAway: 1001,
  /** A frame above `maxPayload` (sent by `ws` itself). */
  TooLarge: 1009,
  /** Wrong or missing token. */
  Unauthorized: 4001,
  /** A frame that is not a valid message. */
  Protocol: 4002,
  /** A session limit was exceeded. */
  Limit: 4003,
  /** Protocol versions differ. */
  Version: 4004,
  /** No hello within the handshake timeout, or no answer to pings. */
  Timeout: 4005,
} as const;

/** The first client message. */
export interface Hello {
  readonly t: "hello";
  /** {@link PROTOCOL_VERSION} of the client. */
  readonly v: number;
  /** The shared secret `weft serve --token` was started with. */
  readonly token: string;
}

/** What one item of a batch asks the server to do (see {@link Item}). */
export type Item =
  /** Record `op` on the client stream `s` (ids are this session's; `drop` never travels as an op). */
  | { readonly k: "op"; readonly s: number; readonly op: OperationIr }
  /** A new tensor `id` on stream `s` from host bytes (row-major, the host layout of `dtype`). */
  | { readonly k: "upload"; readonly s: number; readonly id: number; readonly shape: readonly number[]; readonly dtype: DType; readonly bytes: Uint8Array }
  /** A new id on stream `s` aliasing the same value as `src` (a cross-stream alias, docs/concepts.md#fusionruntime). */
  | { readonly k: "alias"; readonly s: number; readonly src: number; readonly id: number }
  /** A new id standing for a value that could not be computed (a move whose source failed). */
  | { readonly k: "poison"; readonly id: number; readonly shape: readonly number[]; readonly dtype: DType; readonly error: WireError }
  /** The client let go of `id`: the server disposes its tensor. */
  | { readonly k: "drop"; readonly id: number }
  /** Answer with `id`'s values ({@link Reply} `data`) or its error (`failed`). */
  | { readonly k: "read"; readonly req: number; readonly id: number }
  /** Answer `done` once stream `s`'s work has run. */
  | { readonly k: "sync"; readonly req: number; readonly s: number }
  /** Answer `done` (a liveness check). */
  | { readonly k: "ping"; readonly req: number }
  /** Answer with the session's and the server's memory ({@link ServerMemory}). */
  | { readonly k: "memory"; readonly req: number };

/** Client → server after the hello: items to run in order. */
export interface Batch {
  readonly t: "batch";
  readonly items: readonly Item[];
}

/** Any client message. */
export type ClientMessage = Hello | Batch;

/** An error as it travels: enough to rebuild a typed error on the other side. */
export interface WireError {
  /** The error's `kind` (`WeftError.kind`), or `"error"` for a plain `Error`. */
  readonly kind: string;
  /** The error's class name. */
  readonly name: string;
  /** Its message (for a computation error: the root cause's message). */
  readonly message: string;
  /** For a computation error, the operations the failure travelled through, root first. */
  readonly chain?: readonly string[];
  /** For a session-ending error, its {@link RemoteFailure}-style reason. */
  readonly reason?: string;
  /** For a limit, which one. */
  readonly limit?: string;
}

/** The limits a server enforces per session (`weft serve --max-…`). */
export interface RemoteLimits {
  /** Largest frame a client may send, in bytes (an upload travels in one frame). */
  readonly maxFrameBytes: number;
  /** Live tensor ids one session may hold. */
  readonly maxTensorsPerSession: number;
  /** Bytes of live tensors one session may hold (elements × device bytes per element). */
  readonly maxSessionBytes: number;
  /** Client streams one session may have live at once. */
  readonly maxStreamsPerSession: number;
  /** Reads, syncs, pings and memory requests one session may have unanswered. */
  readonly maxPendingRequests: number;
  /** Sessions (connections) the server accepts at once. */
  readonly maxSessions: number;
}

/** The server's answer to a valid hello. */
export interface Welcome {
  readonly t: "welcome";
  readonly v: number;
  /** The session's name in the server's logs. */
  readonly session: string;
  /** The backend the server computes on (`"cpu"`, `"webgpu"`). */
  readonly backend: string;
  /** The dtypes the server's device stores. */
  readonly dtypes: readonly DType[];
  readonly limits: RemoteLimits;
}

/** One session's and the whole server's memory, as `memory` requests answer. */
export interface ServerMemory {
  /** Live tensor ids of this session. */
  readonly sessionTensors: number;
  /** Bytes of this session's live tensors. */
  readonly sessionBytes: number;
  /** Client streams of this session with a server stream. */
  readonly sessionStreams: number;
  /** Sessions open on the server. */
  readonly sessions: number;
  /** The server device's `memory()`: wrappers, handles, streams, bytes (all sessions). */
  readonly device: {
    readonly liveTensors: number;
    readonly liveHandles: number;
    readonly streams: number;
    readonly bytesInUse: number;
    readonly bytesReserved: number;
  };
}

/** Server → client after the welcome. */
export type Reply =
  | { readonly t: "data"; readonly req: number; readonly bytes: Uint8Array }
  | { readonly t: "done"; readonly req: number }
  | { readonly t: "failed"; readonly req: number; readonly error: WireError }
  | { readonly t: "memory"; readonly req: number; readonly memory: ServerMemory }
  /** The session is ending (the close follows). */
  | { readonly t: "fatal"; readonly error: WireError };

/** Any server message. */
export type ServerMessage = Welcome | Reply;

/** Default limits of `weft serve` (documented in the package README). */
export const DEFAULT_LIMITS: RemoteLimits = {
  maxFrameBytes: 64 * 1024 * 1024,
  maxTensorsPerSession: 65_536,
  maxSessionBytes: 2 * 1024 * 1024 * 1024,
  maxStreamsPerSession: 4_096,
  maxPendingRequests: 4_096,
  maxSessions: 64,
};
