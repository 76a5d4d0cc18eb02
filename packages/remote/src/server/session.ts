/**
 * One client connection on the server: its tensors, its streams, and how each batch item runs.
 *
 * @module
 */
import { StreamId } from "@weft/environment";
import type { DType, FusionClient, FusionTensor, OperationIr, ProducingOperation, TensorIr, TypedArray } from "@weft/fusion";
import { deviceBytesPerElement, mapOperation, numElements, operationInputs } from "@weft/fusion";
import type { Item, RemoteLimits, Reply, ServerMemory, WireError } from "../protocol/messages.js";
import { arrayOf, bytesOf, hostBytesPerElement, toWireError } from "../protocol/wire-data.js";
import { parseBatch, parseItem } from "./parse.js";
import { type ShapeBounds, validateOperation } from "./validate-operation.js";
import { SessionViolation, check } from "./violation.js";

/** Largest rank a client may name. */
const MAX_RANK = 16;

/** Items one batch may hold. */
const MAX_BATCH_ITEMS = 65_536;

/** A live id of the session: a server tensor, or an error standing for one (a failed move). */
type Entry =
  | { readonly kind: "tensor"; readonly tensor: FusionTensor; readonly stream: number; readonly home: StreamId; readonly shape: readonly number[]; readonly dtype: DType; readonly bytes: number }
  | { readonly kind: "poison"; readonly error: WireError; readonly stream: number | undefined; readonly shape: readonly number[]; readonly dtype: DType; readonly bytes: 0 };

/** A client stream's server stream and how many live ids it homes (the entry goes at 0). */
interface StreamEntry {
  readonly server: StreamId;
  live: number;
}

/**
 * The server side of one connection: a map from the session's ids to server tensors, a server
 * stream per client stream, and the runner of batch items.
 *
 * @remarks
 * **Isolation.** Ids are looked up in this session's map only; another session's id, a dropped id
 * or an id never minted is a `protocol` violation (the server closes this session, nobody else's).
 * Output ids must be strictly increasing, so an old id can never be brought back.
 * **Execution.** Each item runs synchronously in arrival order inside `StreamId.executes` of its
 * server stream, through the shared device's fusion engine (so a client's stream is fused
 * server-side like any local stream; a tensor used on another of the session's streams becomes a
 * shared view there). Reads and syncs answer when the device has the values.
 * **State and bounds.** `#entries` ≤ `maxTensorsPerSession`, their bytes ≤ `maxSessionBytes`;
 * `#streams` ≤ `maxStreamsPerSession`, an entry removed (and its server stream drained) when it
 * homes no live id; `#pending` ≤ `maxPendingRequests`. {@link Session.close} disposes every
 * tensor and drains every stream: nothing of a closed session stays on the device.
 */
export class Session {
  /** The session's name in logs (`s1`, `s2`, …). */
  readonly name: string;
  readonly #device: FusionClient;
  readonly #limits: RemoteLimits;
  readonly #send: (reply: Reply) => void;
  readonly #sessions: () => number;
  readonly #bounds: ShapeBounds;
  /** Live ids; added by op/upload/alias/poison items, removed by drops and at close. */
  readonly #entries = new Map<number, Entry>();
  /** Client stream → server stream; removed when it homes no live id. */
  readonly #streams = new Map<number, StreamEntry>();
  /** The largest id minted so far (ids are strictly increasing). */
  #lastId = 0;
  #bytes = 0;
  /** Reads, syncs and other requests not answered yet. */
  #pending = 0;
  #closed = false;

  constructor(name: string, device: FusionClient, limits: RemoteLimits, send: (reply: Reply) => void, sessions: () => number) {
    this.name = name;
    this.#device = device;
    this.#limits = limits;
    this.#send = send;
    this.#sessions = sessions;
    this.#bounds = { maxRank: MAX_RANK, maxElements: Math.floor(limits.maxSessionBytes / 2) };
  }

  /** Live ids of the session. */
  get tensors(): number {
    return this.#entries.size;
  }

  /** Bytes of the session's live tensors. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Client streams with a server stream. */
  get streams(): number {
    return this.#streams.size;
  }

  /**
   * Runs the items of one decoded batch, in order.
   * @throws SessionViolation when the batch or one of its items is refused (items before it ran).
   */
  run(message: unknown): void {
    check(!this.#closed, "the session is closed");
    for (const raw of parseBatch(message, MAX_BATCH_ITEMS)) this.#runItem(parseItem(raw, this.#bounds));
  }

  /** Disposes every tensor of the session and drains its streams. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const entry of this.#entries.values()) {
      if (entry.kind === "tensor") StreamId.executes(entry.home, () => entry.tensor.dispose());
    }
    this.#entries.clear();
    this.#bytes = 0;
    for (const s of this.#streams.values()) this.#drain(s.server);
    this.#streams.clear();
  }

  #runItem(item: Item | { k: "op"; s: number; op: unknown }): void {
    switch (item.k) {
      case "op":
        return this.#op(item.s, item.op);
      case "upload":
        return this.#upload(item);
      case "alias":
        return this.#alias(item.s, item.src, item.id);
      case "poison":
        this.#mint(item.id, 0);
        this.#add(item.id, { kind: "poison", error: item.error, stream: undefined, shape: item.shape, dtype: item.dtype, bytes: 0 });
        return;
      case "drop":
        return this.#drop(item.id);
      case "read":
        return this.#read(item.req, item.id);
      case "sync":
        return this.#sync(item.req, item.s);
      case "ping":
        this.#request();
        this.#answer({ t: "done", req: item.req });
        return;
      case "memory":
        this.#request();
        this.#answer({ t: "memory", req: item.req, memory: this.memory() });
        return;
      default:
        return item satisfies never;
    }
  }

  /** This session's and the server device's memory. */
  memory(): ServerMemory {
    const m = this.#device.memory();
    return {
      sessionTensors: this.#entries.size,
      sessionBytes: this.#bytes,
      sessionStreams: this.#streams.size,
      sessions: this.#sessions(),
      device: { liveTensors: m.liveTensors, liveHandles: m.liveHandles, streams: m.streams, bytesInUse: m.bytesInUse, bytesReserved: m.bytesReserved },
    };
  }

  #entry(id: number): Entry {
    const entry = this.#entries.get(id);
    check(entry !== undefined, () => `tensor id ${id} is not a live tensor of this session (never minted, already dropped, or another session's)`);
    return entry;
  }

  /** Checks a new id (fresh, increasing) and the session limits for `bytes` more. */
  #mint(id: number, bytes: number): void {
    check(id > this.#lastId, () => `tensor id ${id} is not fresh (ids must increase; the last was ${this.#lastId})`);
    if (this.#entries.size >= this.#limits.maxTensorsPerSession) {
      throw new SessionViolation("limit", `more than ${this.#limits.maxTensorsPerSession} live tensors in one session`, "maxTensorsPerSession");
    }
    if (this.#bytes + bytes > this.#limits.maxSessionBytes) {
      throw new SessionViolation("limit", `${this.#bytes + bytes} bytes of live tensors in one session, more than ${this.#limits.maxSessionBytes}`, "maxSessionBytes");
    }
    this.#lastId = id;
  }

  #stream(client: number): StreamEntry {
    let s = this.#streams.get(client);
    if (s === undefined) {
      if (this.#streams.size >= this.#limits.maxStreamsPerSession) {
        throw new SessionViolation("limit", `more than ${this.#limits.maxStreamsPerSession} live streams in one session`, "maxStreamsPerSession");
      }
      s = { server: StreamId.allocate(), live: 0 };
      this.#streams.set(client, s);
    }
    return s;
  }

  #add(id: number, entry: Entry): void {
    this.#entries.set(id, entry);
    this.#bytes += entry.bytes;
    if (entry.stream !== undefined) this.#stream(entry.stream).live++;
  }

  #op(client: number, raw: unknown): void {
    const validated = validateOperation(raw, (id) => this.#entry(id), this.#bounds);
    check(validated.kind !== "drop", "an op must have an output");
    const op: ProducingOperation = validated;
    const out = op.out;
    const bytes = numElements(out.shape) * deviceBytesPerElement(out.dtype);
    this.#mint(out.id, bytes);
    const inputs = operationInputs(op).map((t) => this.#entry(t.id));
    const poisoned = inputs.find((e) => e.kind === "poison");
    if (poisoned !== undefined && poisoned.kind === "poison") {
      this.#add(out.id, { kind: "poison", error: poisoned.error, stream: undefined, shape: out.shape, dtype: out.dtype, bytes: 0 });
      return;
    }
    const stream = this.#stream(client);
    const tensor = StreamId.executes(stream.server, () => {
      const irs = new Map<number, TensorIr>();
      for (const t of operationInputs(op)) {
        const entry = this.#entries.get(t.id);
        if (entry?.kind === "tensor" && !irs.has(t.id)) irs.set(t.id, entry.tensor.intoIr(op.kind));
      }
      const serverOut = this.#device.outputIr(out.shape, out.dtype);
      const rebuilt = mapOperation(op, (t) => (t.id === out.id && t.status === "NotInit" ? serverOut : (irs.get(t.id) ?? t)), (v) => v) as ProducingOperation;
      return this.#device.register(rebuilt);
    });
    this.#add(out.id, { kind: "tensor", tensor, stream: client, home: stream.server, shape: out.shape, dtype: out.dtype, bytes });
  }

  #upload(item: Extract<Item, { k: "upload" }>): void {
    const n = numElements(item.shape);
    check(item.bytes.byteLength === n * hostBytesPerElement(item.dtype), () => `upload ${item.id}: ${item.bytes.byteLength} bytes for ${n} ${item.dtype} elements`);
    const bytes = n * deviceBytesPerElement(item.dtype);
    this.#mint(item.id, bytes);
    const stream = this.#stream(item.s);
    const data = arrayOf(item.bytes, item.dtype);
    const tensor = StreamId.executes(stream.server, () => this.#device.upload({ data, shape: item.shape, dtype: item.dtype }));
    this.#add(item.id, { kind: "tensor", tensor, stream: item.s, home: stream.server, shape: item.shape, dtype: item.dtype, bytes });
  }

  #alias(client: number, src: number, id: number): void {
    const source = this.#entry(src);
    this.#mint(id, source.bytes);
    if (source.kind === "poison") {
      this.#add(id, { ...source });
      return;
    }
    const stream = this.#stream(client);
    const tensor = StreamId.executes(stream.server, () => source.tensor.clone());
    this.#add(id, { kind: "tensor", tensor, stream: client, home: stream.server, shape: source.shape, dtype: source.dtype, bytes: source.bytes });
  }

  #drop(id: number): void {
    const entry = this.#entry(id);
    this.#entries.delete(id);
    this.#bytes -= entry.bytes;
    if (entry.kind === "tensor") StreamId.executes(entry.home, () => entry.tensor.dispose());
    if (entry.stream === undefined) return;
    const s = this.#streams.get(entry.stream);
    if (s === undefined) return;
    s.live--;
    if (s.live > 0) return;
    // The stream homes nothing any more: run what is left of its work (dead work is elided) and
    // forget it, so a client that spawns a stream per request does not grow this map.
    this.#streams.delete(entry.stream);
    this.#drain(s.server);
  }

  #read(req: number, id: number): void {
    const entry = this.#entry(id);
    this.#request();
    if (entry.kind === "poison") {
      this.#answer({ t: "failed", req, error: entry.error });
      return;
    }
    let reading: Promise<TypedArray>;
    try {
      reading = entry.tensor.read();
    } catch (error) {
      reading = Promise.reject(error);
    }
    reading.then(
      (values) => this.#answer({ t: "data", req, bytes: bytesOf(values) }),
      (error: unknown) => this.#answer({ t: "failed", req, error: toWireError(error) }),
    );
  }

  #sync(req: number, client: number): void {
    this.#request();
    const s = this.#streams.get(client);
    const done = s === undefined ? Promise.resolve() : this.#device.sync(s.server);
    done.then(
      () => this.#answer({ t: "done", req }),
      (error: unknown) => this.#answer({ t: "failed", req, error: toWireError(error) }),
    );
  }

  #request(): void {
    if (this.#pending >= this.#limits.maxPendingRequests) {
      throw new SessionViolation("limit", `more than ${this.#limits.maxPendingRequests} unanswered requests`, "maxPendingRequests");
    }
    this.#pending++;
  }

  #answer(reply: Reply): void {
    this.#pending--;
    if (!this.#closed) this.#send(reply);
  }

  /** Runs `stream`'s pending work (errors stay on their tensors; nothing to report). */
  #drain(stream: StreamId): void {
    this.#device.sync(stream).catch(() => undefined);
  }
}
