/**
 * The `weft serve` server: a WebSocket endpoint (the `ws` library) in front of one device.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { AddressInfo } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";
import type { DType, FusionClient } from "@weft/fusion";
import { decodeMessage, encodeMessage } from "../protocol/codec.js";
import { CloseCode, DEFAULT_LIMITS, PROTOCOL_VERSION, type RemoteLimits, type Reply, type WireError } from "../protocol/messages.js";
import { toWireError } from "../protocol/wire-data.js";
import { parseHello } from "./parse.js";
import { Session } from "./session.js";
import { SessionViolation } from "./violation.js";

/** What the server computes on: a device's fusion engine and what it is. */
export interface ServedDevice {
  /** The device's fusion engine (a `Device`'s `fusion`). */
  readonly fusion: FusionClient;
  /** The backend's name, told to clients (`"cpu"`, `"webgpu"`). */
  readonly backend: string;
  /** The dtypes the device stores. */
  readonly dtypes: readonly DType[];
}

/** Options of {@link startServer}. */
export interface RemoteServerOptions {
  /** The device every session computes on. */
  readonly device: ServedDevice;
  /** The shared secret clients must present (non-empty). */
  readonly token: string;
  /** The port (0: any free port; read it back from {@link RemoteServer.port}). */
  readonly port: number;
  /** The interface to listen on. Default `127.0.0.1` (this machine only); see the README on exposing it. */
  readonly host?: string;
  /** Session limits (defaults: {@link DEFAULT_LIMITS}). */
  readonly limits?: Partial<RemoteLimits>;
  /** Milliseconds a new connection has to send a valid hello. Default 5 000. */
  readonly handshakeTimeoutMs?: number;
  /** Milliseconds between WebSocket pings; a session that answered none of 3 in a row is closed. Default 10 000. */
  readonly heartbeatMs?: number;
  /** Where the server logs one line per session event (default: nothing). */
  readonly log?: (line: string) => void;
}

/**
 * Pings in a row a session may leave unanswered before it is closed: a client whose event loop is
 * busy for a while (a long synchronous computation) is not mistaken for a dead one.
 */
const MISSED_PINGS = 3;

/** A bounded byte count of replies a slow client may leave unread before its session is closed. */
const MAX_BUFFERED_REPLY_BYTES = 1024 * 1024 * 1024;

/** SHA-256 of a token: equal-length digests for a constant-time comparison. */
function digest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/**
 * A running `weft serve` server.
 *
 * @remarks
 * **Sessions.** Each WebSocket connection is one {@link Session}: it must authenticate with its
 * first message (a hello carrying the token, compared in constant time) within the handshake
 * timeout, and then owns its tensors and streams until it closes. A session that breaks the
 * protocol or a limit is answered `fatal` and closed; the other sessions and the server go on.
 * **Liveness.** The server pings every session (`heartbeatMs`) and closes one that answered none
 * of the last three pings (nor sent anything); a closed session's tensors are all disposed.
 * **State and bounds.** At most `maxSessions` sessions; each bounded by its limits.
 */
export class RemoteServer {
  /** The limits every session gets. */
  readonly limits: RemoteLimits;
  readonly #wss: WebSocketServer;
  readonly #device: ServedDevice;
  readonly #token: Buffer;
  readonly #sessions = new Set<Session>();
  readonly #log: (line: string) => void;
  readonly #handshakeTimeoutMs: number;
  readonly #heartbeat: ReturnType<typeof setInterval>;
  /** Pings each socket left unanswered in a row (reset by a pong or any message); ended at {@link MISSED_PINGS}. */
  readonly #missed = new WeakMap<WebSocket, number>();
  #serial = 0;
  #closed = false;

  /** @internal Use {@link startServer}. */
  constructor(wss: WebSocketServer, options: RemoteServerOptions, limits: RemoteLimits) {
    this.#wss = wss;
    this.#device = options.device;
    this.#token = digest(options.token);
    this.limits = limits;
    this.#log = options.log ?? (() => undefined);
    this.#handshakeTimeoutMs = options.handshakeTimeoutMs ?? 5_000;
    wss.on("connection", (socket) => this.#accept(socket));
    this.#heartbeat = setInterval(() => {
      for (const socket of wss.clients) {
        const missed = this.#missed.get(socket) ?? 0;
        if (missed >= MISSED_PINGS) {
          this.#log("weft serve: a session stopped answering pings; closing it");
          socket.terminate();
          continue;
        }
        this.#missed.set(socket, missed + 1);
        socket.ping();
      }
    }, options.heartbeatMs ?? 10_000);
    this.#heartbeat.unref();
  }

  /** The port the server listens on. */
  get port(): number {
    return (this.#wss.address() as AddressInfo).port;
  }

  /** Sessions open now. */
  get sessions(): number {
    return this.#sessions.size;
  }

  /** Live tensor ids over every session. */
  get sessionTensors(): number {
    let n = 0;
    for (const s of this.#sessions) n += s.tensors;
    return n;
  }

  /** Closes every session (their tensors are disposed) and stops listening. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#heartbeat);
    for (const socket of this.#wss.clients) socket.close(CloseCode.GoingAway, "server shutting down");
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    for (const session of this.#sessions) session.close();
    this.#sessions.clear();
  }

  #accept(socket: WebSocket): void {
    this.#missed.set(socket, 0);
    socket.on("pong", () => this.#missed.set(socket, 0));
    socket.binaryType = "nodebuffer";
    let session: Session | undefined;
    /** Set once the connection is being closed: later frames are ignored. */
    let ended = false;
    const fatal = (code: number, error: WireError, why: string): void => {
      ended = true;
      this.#log(`weft serve: ${session?.name ?? "connection"} closed: ${why}`);
      if (socket.readyState === socket.OPEN) {
        socket.send(encodeMessage({ t: "fatal", error } satisfies Reply));
        socket.close(code, why.slice(0, 120));
      }
      end();
    };
    const end = (): void => {
      clearTimeout(handshake);
      if (session === undefined) return;
      session.close();
      this.#sessions.delete(session);
      session = undefined;
    };
    const handshake = setTimeout(() => {
      if (session === undefined) fatal(CloseCode.Timeout, { kind: "remote", name: "RemoteSessionError", message: "no hello within the handshake timeout", reason: "protocol" }, "handshake timeout");
    }, this.#handshakeTimeoutMs);
    handshake.unref();
    socket.on("close", end);
    socket.on("error", (error) => {
      // `ws` reports a frame over maxPayload here and closes with 1009 itself.
      this.#log(`weft serve: ${session?.name ?? "connection"}: ${error.message}`);
      end();
    });
    socket.on("message", (data, isBinary) => {
      if (this.#closed || ended) return;
      this.#missed.set(socket, 0);
      const frame = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
      let message: unknown;
      try {
        if (!isBinary) throw new SessionViolation("protocol", "text frames are not accepted (MessagePack in binary frames only)");
        try {
          message = decodeMessage(frame);
        } catch (error) {
          throw new SessionViolation("protocol", `the frame is not MessagePack: ${error instanceof Error ? error.message : String(error)}`);
        }
        if (session === undefined) {
          this.#hello(socket, message, (s) => (session = s), fatal);
          return;
        }
        session.run(message);
      } catch (error) {
        if (error instanceof SessionViolation) {
          const code = error.violation === "limit" ? CloseCode.Limit : CloseCode.Protocol;
          const wire: WireError = { kind: "remote", name: "RemoteSessionError", message: error.message, reason: error.violation, ...(error.limit === undefined ? {} : { limit: error.limit }) };
          fatal(code, wire, error.message);
          return;
        }
        // Anything else is the server's own failure on this session's input: end the session, keep serving.
        fatal(CloseCode.Protocol, { ...toWireError(error), reason: "server" }, `internal error: ${error instanceof Error ? error.message : String(error)}`);
      }
    });
  }

  #hello(socket: WebSocket, message: unknown, opened: (s: Session) => void, fatal: (code: number, error: WireError, why: string) => void): void {
    const hello = parseHello(message);
    if (hello.v !== PROTOCOL_VERSION) {
      fatal(CloseCode.Version, { kind: "remote", name: "RemoteSessionError", message: `protocol version ${hello.v}, the server speaks ${PROTOCOL_VERSION}: use the same Weft version on both sides`, reason: "version" }, "version mismatch");
      return;
    }
    if (!timingSafeEqual(digest(hello.token), this.#token)) {
      fatal(CloseCode.Unauthorized, { kind: "remote", name: "RemoteAuthError", message: hello.token === "" ? "no token" : "wrong token", reason: "auth" }, "unauthorized");
      return;
    }
    if (this.#sessions.size >= this.limits.maxSessions) {
      fatal(CloseCode.Limit, { kind: "remote", name: "RemoteSessionError", message: `the server already has ${this.limits.maxSessions} sessions`, reason: "limit", limit: "maxSessions" }, "too many sessions");
      return;
    }
    const send = (reply: Reply): void => {
      if (socket.readyState !== socket.OPEN) return;
      if (socket.bufferedAmount > MAX_BUFFERED_REPLY_BYTES) {
        socket.terminate();
        return;
      }
      socket.send(encodeMessage(reply));
    };
    const session = new Session(`s${++this.#serial}`, this.#device.fusion, this.limits, send, () => this.#sessions.size);
    this.#sessions.add(session);
    opened(session);
    this.#log(`weft serve: ${session.name} opened`);
    socket.send(encodeMessage({ t: "welcome", v: PROTOCOL_VERSION, session: session.name, backend: this.#device.backend, dtypes: [...this.#device.dtypes], limits: this.limits }));
  }
}

/**
 * Starts a server on `options.host:options.port` (default host `127.0.0.1`) and resolves once it
 * listens.
 * @throws Error when the token is empty or a limit is not a positive integer.
 */
export async function startServer(options: RemoteServerOptions): Promise<RemoteServer> {
  if (options.token.length === 0) throw new Error("weft serve: --token must not be empty (clients authenticate with it)");
  const limits: RemoteLimits = { ...DEFAULT_LIMITS, ...options.limits };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`weft serve: limit ${name} must be a positive integer, got ${String(value)}`);
  }
  const wss = new WebSocketServer({ host: options.host ?? "127.0.0.1", port: options.port, maxPayload: limits.maxFrameBytes, perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    wss.once("listening", resolve);
    wss.once("error", reject);
  });
  return new RemoteServer(wss, options, limits);
}
