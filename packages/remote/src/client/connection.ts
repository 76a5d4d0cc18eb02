/**
 * One client session with one server: the handshake, the ordered outgoing batch, the pending
 * requests, liveness, and what a session's end does to them.
 *
 * @module
 */
import type { DType } from "@weft/fusion";
import { TensorComputationError } from "@weft/fusion";
import { decodeMessage, encodeMessage } from "../protocol/codec.js";
import { CloseCode, type Item, PROTOCOL_VERSION, type RemoteLimits, type ServerMemory, type WireError } from "../protocol/messages.js";
import { RemoteAuthError, RemoteComputationError, type RemoteFailure, RemoteSessionError } from "../errors/remote-errors.js";
import { SOCKET_OPEN, type SocketFactory, type SocketLike, defaultSocketFactory } from "./socket.js";

/** Options of a connection (and of `createRemoteDevice`, which passes them on). */
export interface ConnectionOptions {
  /** Opens the socket (default: the browser's `WebSocket`, `ws` in Node). */
  readonly socket?: SocketFactory;
  /** Milliseconds to connect and be welcomed. Default 10 000. */
  readonly connectTimeoutMs?: number;
  /** Milliseconds between liveness pings while a request waits. Default 1 000. */
  readonly heartbeatMs?: number;
  /**
   * Milliseconds of silence from the server, while a request waits, after which the session is
   * declared lost. Default 20 000 (a server busy with a long synchronous computation cannot answer
   * pings meanwhile). A server that dies closes the connection and is noticed at once.
   */
  readonly timeoutMs?: number;
  /** Items the outgoing batch holds before it is sent without a read or sync (the queue limit). Default 1 024. */
  readonly maxBatchItems?: number;
}

/** What one connection has done (plain counts, for `servers()` / `stats()`). */
export interface ConnectionStats {
  /** Batches (frames) sent and their bytes. */
  framesSent: number;
  bytesSent: number;
  /** Replies (frames) received and their bytes. */
  framesReceived: number;
  bytesReceived: number;
  /** Items sent by kind. */
  ops: number;
  uploads: number;
  aliases: number;
  drops: number;
  reads: number;
  syncs: number;
  /** Tensors moved in from another server (router), and their bytes. */
  movesIn: number;
  bytesMovedIn: number;
}

/** An unsettled request. */
interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  /** Liveness pings do not keep the heartbeat running. */
  readonly ping: boolean;
}

/** A place in the outgoing batch that waits for an item computed later (a tensor moving in). */
interface Gate {
  item: Item | undefined;
}

/** A rough upper bound of an item's encoded size (only used to decide when to send). */
function estimate(item: Item): number {
  return item.k === "upload" ? item.bytes.byteLength + 128 : item.k === "op" ? 384 : 32;
}

/**
 * A session with one `weft serve` server.
 *
 * @remarks
 * **Order.** Items are sent in the order they were queued, in batches: a batch leaves when a read,
 * sync or memory request needs it, when it reaches `maxBatchItems` or half the server's frame
 * limit, or when a `Gate` that held it back settles. A gate (a tensor moving in from another
 * server) holds every later item back until its upload is known, so nothing that uses the moved
 * tensor reaches this server before it.
 * **Failure.** When the session ends (the server closed it with `fatal`, the connection dropped,
 * or the server stayed silent for `timeoutMs` while a request waited), every pending request
 * rejects with one {@link RemoteSessionError}, later requests reject with it, and queued items are
 * discarded. A new session needs a new connection (`init` again).
 * **State and bounds.** `#out` ≤ `maxBatchItems` items plus gates (each gate settles);
 * `#pending` is bounded by the server's `maxPendingRequests` (the server ends a session past it).
 */
export class RemoteConnection {
  /** The server's URL. */
  readonly url: string;
  /** The server's limits, from its welcome. */
  readonly limits: RemoteLimits;
  /** The server's backend and dtypes, from its welcome. */
  readonly backend: string;
  readonly dtypes: readonly DType[];
  /** The session's name in the server's log. */
  readonly session: string;
  /** What this connection has done. */
  readonly stats: ConnectionStats = {
    framesSent: 0, bytesSent: 0, framesReceived: 0, bytesReceived: 0,
    ops: 0, uploads: 0, aliases: 0, drops: 0, reads: 0, syncs: 0, movesIn: 0, bytesMovedIn: 0,
  };
  /** Live server ids this client holds on this server, and their bytes (maintained by the runtime). */
  liveTensors = 0;
  liveBytes = 0;
  readonly #socket: SocketLike;
  readonly #out: (Item | Gate)[] = [];
  #outBytes = 0;
  readonly #pending = new Map<number, Pending>();
  #userPending = 0;
  #nextId = 0;
  #nextReq = 0;
  #failure: RemoteSessionError | undefined;
  #fatal: WireError | undefined;
  #lastHeard = Date.now();
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  readonly #heartbeatMs: number;
  readonly #timeoutMs: number;
  readonly #maxBatchItems: number;

  private constructor(url: string, socket: SocketLike, welcome: { session: string; backend: string; dtypes: readonly DType[]; limits: RemoteLimits }, options: ConnectionOptions) {
    this.url = url;
    this.#socket = socket;
    this.session = welcome.session;
    this.backend = welcome.backend;
    this.dtypes = welcome.dtypes;
    this.limits = welcome.limits;
    this.#heartbeatMs = options.heartbeatMs ?? 1_000;
    this.#timeoutMs = options.timeoutMs ?? 20_000;
    this.#maxBatchItems = options.maxBatchItems ?? 1_024;
    socket.onmessage = (event) => this.#receive(event.data);
    socket.onclose = (event) => this.#fail(this.#closeError(event.code, event.reason));
    socket.onerror = () => undefined; // the close that follows says what happened
  }

  /**
   * Connects to `url`, authenticates with `token` and resolves once welcomed.
   * @throws RemoteAuthError when the server refuses the token.
   * @throws RemoteSessionError when the server cannot be reached, speaks another protocol version, or refuses the session.
   */
  static async open(url: string, token: string, options: ConnectionOptions = {}): Promise<RemoteConnection> {
    const socket = await (options.socket ?? defaultSocketFactory)(url);
    socket.binaryType = "arraybuffer";
    const timeoutMs = options.connectTimeoutMs ?? 10_000;
    return new Promise<RemoteConnection>((resolve, reject) => {
      let fatal: WireError | undefined;
      const timer = setTimeout(() => {
        socket.close(CloseCode.Normal, "connect timeout");
        reject(new RemoteSessionError("connection-lost", url, `no welcome within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
      };
      socket.onopen = () => socket.send(encodeMessage({ t: "hello", v: PROTOCOL_VERSION, token }));
      socket.onerror = () => undefined;
      socket.onmessage = (event) => {
        let message: unknown;
        try {
          message = decodeMessage(toBytes(event.data));
        } catch {
          message = undefined;
        }
        const m = message as { t?: unknown; error?: WireError; session?: unknown; backend?: unknown; dtypes?: unknown; limits?: unknown; v?: unknown };
        if (m?.t === "fatal" && m.error !== undefined) {
          fatal = m.error;
          return;
        }
        if (m?.t !== "welcome" || typeof m.session !== "string" || typeof m.backend !== "string" || !Array.isArray(m.dtypes) || typeof m.limits !== "object" || m.limits === null) {
          done();
          socket.close(CloseCode.Protocol, "bad welcome");
          reject(new RemoteSessionError("protocol", url, "the server did not answer with a welcome (is it a `weft serve` server of the same version?)"));
          return;
        }
        done();
        resolve(new RemoteConnection(url, socket, { session: m.session, backend: m.backend, dtypes: m.dtypes as DType[], limits: m.limits as RemoteLimits }, options));
      };
      socket.onclose = (event) => {
        done();
        if (event.code === CloseCode.Unauthorized || fatal?.reason === "auth") {
          reject(new RemoteAuthError(url, fatal?.message ?? "unauthorized"));
          return;
        }
        const detail = fatal?.message ?? (event.code === 1006 ? "could not connect (is `weft serve` running there?)" : `closed before the welcome: ${event.reason || "no reason given"}`);
        reject(new RemoteSessionError((fatal?.reason as RemoteFailure | undefined) ?? "connection-lost", url, detail, event.code, fatal?.limit));
      };
    });
  }

  /** Why the session ended, or `undefined` while it is alive. */
  get failure(): RemoteSessionError | undefined {
    return this.#failure;
  }

  /** A fresh tensor id of this session (strictly increasing, as the server requires). */
  mintId(): number {
    return ++this.#nextId;
  }

  /** Throws the session's failure if it ended. */
  checkAlive(): void {
    if (this.#failure !== undefined) throw this.#failure;
  }

  /** Queues `item` (dropped silently once the session is over: its tensors are gone with it). */
  enqueue(item: Item): void {
    if (this.#failure !== undefined) return;
    this.#count(item);
    this.#out.push(item);
    this.#outBytes += estimate(item);
    if (this.#out.length >= this.#maxBatchItems || this.#outBytes >= this.limits.maxFrameBytes / 2) this.flush();
  }

  /** Queues a place for the item `later` resolves to; nothing queued after it is sent before it. */
  gate(later: Promise<Item>): void {
    if (this.#failure !== undefined) return;
    const gate: Gate = { item: undefined };
    this.#out.push(gate);
    later.then(
      (item) => {
        this.#count(item);
        gate.item = item;
        this.#outBytes += estimate(item);
        this.flush();
      },
      (error: unknown) => this.#fail(new RemoteSessionError("server", this.url, `a tensor moving in could not be prepared: ${String(error)}`)),
    );
  }

  /** Sends every queued item up to the first unsettled gate. */
  flush(): void {
    if (this.#failure !== undefined || this.#socket.readyState !== SOCKET_OPEN) return;
    let n = 0;
    while (n < this.#out.length) {
      const entry = this.#out[n] as Item | Gate;
      if ("item" in entry && entry.item === undefined) break;
      n++;
    }
    if (n === 0) return;
    const items = this.#out.splice(0, n).map((e) => ("item" in e ? (e.item as Item) : e));
    this.#outBytes = 0;
    for (const e of this.#out) this.#outBytes += "item" in e ? (e.item === undefined ? 0 : estimate(e.item)) : estimate(e);
    this.#sendItems(items);
  }

  /** The values of server tensor `id` (after everything queued before). */
  read(id: number): Promise<Uint8Array> {
    this.stats.reads++;
    return this.#request((req) => ({ k: "read", req, id })) as Promise<Uint8Array>;
  }

  /** Resolves once the server ran everything of client stream `stream` queued before. */
  async sync(stream: number): Promise<void> {
    this.stats.syncs++;
    await this.#request((req) => ({ k: "sync", req, s: stream }));
  }

  /** This session's and the server's memory, as the server sees it now. */
  memory(): Promise<ServerMemory> {
    return this.#request((req) => ({ k: "memory", req })) as Promise<ServerMemory>;
  }

  /** Ends the session (the server frees its tensors); pending requests reject. Idempotent. */
  close(): void {
    if (this.#failure === undefined) {
      this.flush();
      this.#fail(new RemoteSessionError("connection-lost", this.url, "closed by the client"));
    }
  }

  #count(item: Item): void {
    switch (item.k) {
      case "op":
        this.stats.ops++;
        return;
      case "upload":
        this.stats.uploads++;
        return;
      case "alias":
        this.stats.aliases++;
        return;
      case "drop":
        this.stats.drops++;
        return;
      default:
        return;
    }
  }

  #sendItems(items: readonly Item[]): void {
    const frame = encodeMessage({ t: "batch", items });
    if (frame.byteLength > this.limits.maxFrameBytes && items.length > 1) {
      const half = items.length >> 1;
      this.#sendItems(items.slice(0, half));
      this.#sendItems(items.slice(half));
      return;
    }
    this.stats.framesSent++;
    this.stats.bytesSent += frame.byteLength;
    this.#socket.send(frame);
  }

  #request(make: (req: number) => Item): Promise<unknown> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const req = ++this.#nextReq;
    const item = make(req);
    const ping = item.k === "ping";
    const promise = new Promise<unknown>((resolve, reject) => this.#pending.set(req, { resolve, reject, ping }));
    if (!ping) {
      if (this.#userPending === 0) this.#lastHeard = Date.now();
      this.#userPending++;
      this.#startHeartbeat();
    }
    this.#out.push(item);
    this.flush();
    return promise;
  }

  #startHeartbeat(): void {
    if (this.#heartbeat !== undefined) return;
    this.#heartbeat = setInterval(() => {
      if (this.#userPending === 0) {
        this.#stopHeartbeat();
        return;
      }
      const silent = Date.now() - this.#lastHeard;
      if (silent > this.#timeoutMs) {
        this.#fail(new RemoteSessionError("connection-lost", this.url, `the server did not answer for ${silent} ms while requests waited`));
        return;
      }
      void this.#request((req) => ({ k: "ping", req })).catch(() => undefined);
    }, this.#heartbeatMs);
    (this.#heartbeat as { unref?: () => void }).unref?.();
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat === undefined) return;
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  #receive(data: unknown): void {
    this.#lastHeard = Date.now();
    const bytes = toBytes(data);
    this.stats.framesReceived++;
    this.stats.bytesReceived += bytes.byteLength;
    let message: { t?: unknown; req?: unknown; bytes?: unknown; error?: WireError; memory?: unknown };
    try {
      message = decodeMessage(bytes) as typeof message;
    } catch {
      this.#fail(new RemoteSessionError("protocol", this.url, "the server sent a frame that is not MessagePack"));
      return;
    }
    if (message?.t === "fatal") {
      this.#fatal = message.error;
      return;
    }
    const pending = typeof message?.req === "number" ? this.#pending.get(message.req) : undefined;
    if (pending === undefined) return;
    this.#pending.delete(message.req as number);
    if (!pending.ping) this.#userPending--;
    switch (message.t) {
      case "data":
        if (message.bytes instanceof Uint8Array) pending.resolve(message.bytes);
        else pending.reject(new RemoteSessionError("protocol", this.url, "a data reply without bytes"));
        return;
      case "done":
        pending.resolve(undefined);
        return;
      case "memory":
        pending.resolve(message.memory);
        return;
      case "failed":
        pending.reject(this.#computationError(message.error));
        return;
      default:
        pending.reject(new RemoteSessionError("protocol", this.url, `an unknown reply ${JSON.stringify(message.t)}`));
    }
  }

  /**
   * A failed read's error: always a `TensorComputationError` (one class for every failed read, as
   * locally) whose `root` is the server's error and whose chain is the server's (or the read).
   */
  #computationError(error: WireError | undefined): Error {
    const root = new RemoteComputationError(this.url, error?.kind ?? "error", error?.name ?? "Error", error?.message ?? "the server gave no reason");
    const chain = error?.chain !== undefined && error.chain.length > 0 ? error.chain : [`read of a tensor on ${this.url}`];
    return new TensorComputationError(root, chain);
  }

  #closeError(code: number, reason: string): RemoteSessionError {
    const fatal = this.#fatal;
    if (fatal !== undefined) {
      const why = (fatal.reason as RemoteFailure | undefined) ?? "server";
      return new RemoteSessionError(why, this.url, `the server ended the session: ${fatal.message}`, code, fatal.limit);
    }
    if (code === CloseCode.TooLarge) return new RemoteSessionError("frame-too-large", this.url, `a frame exceeded the server's maxFrameBytes (${this.limits.maxFrameBytes})`, code, "maxFrameBytes");
    if (code === CloseCode.GoingAway) return new RemoteSessionError("server", this.url, "the server is shutting down", code);
    return new RemoteSessionError("connection-lost", this.url, `the connection closed${reason ? `: ${reason}` : ""}`, code);
  }

  #fail(error: RemoteSessionError): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    this.#stopHeartbeat();
    this.#out.length = 0;
    this.#outBytes = 0;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#userPending = 0;
    for (const p of pending) p.reject(error);
    if (this.#socket.readyState === SOCKET_OPEN) this.#socket.close(CloseCode.Normal, "session over");
  }
}

/** The bytes of a received frame (`ArrayBuffer` in browsers, `ArrayBuffer`/`Buffer` from `ws`). */
function toBytes(data: unknown): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (Array.isArray(data)) {
    const parts = data as Uint8Array[];
    const total = parts.reduce((s, p) => s + p.byteLength, 0);
    const out = new Uint8Array(total);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.byteLength;
    }
    return out;
  }
  return new Uint8Array(0);
}
