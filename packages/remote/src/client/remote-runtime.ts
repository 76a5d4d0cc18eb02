/**
 * The client's `FusionRuntime`: handles are server ids; operations are forwarded, in order, to the
 * server each stream lives on, and fused there.
 *
 * @module
 */
import { InvariantError, type StreamId } from "@weft/environment";
import type { MemoryUsage } from "@weft/server";
import {
  type DType,
  type ExecutionContext,
  type FusionRuntime,
  type HandleContainer,
  type OperationRan,
  type OperationFuser,
  type OperationIr,
  type RuntimeCapabilities,
  type Optimization,
  type TensorData,
  type TensorIr,
  type TypedArray,
  deviceBytesPerElement,
  mapOperation,
  numElements,
  tensorIr,
} from "@weft/fusion";
import { RemoteLimitError } from "../errors/remote-errors.js";
import type { Item } from "../protocol/messages.js";
import { arrayOf, bytesOf, toWireError } from "../protocol/wire-data.js";
import type { RemoteConnection } from "./connection.js";

/**
 * A tensor on a server: the session it lives in and its id there. What the client's handle
 * container holds for every remote tensor (one entry, one server id).
 */
export interface RemoteHandle {
  /** The server (session) holding the tensor. */
  readonly connection: RemoteConnection;
  /** The tensor's id in that session. */
  readonly id: number;
  /** The client stream it lives on server-side. */
  readonly stream: number;
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** Device bytes (elements × bytes per element), for the memory report. */
  readonly bytes: number;
  /**
   * Whether the server no longer holds this id for the client: a drop was sent, or a forwarded
   * drop freed it (the overridden `freeHandle` (docs/concepts.md#fusionruntime) with `"ran"`). Set once; never cleared.
   */
  released: boolean;
  /**
   * Copies of this tensor moved to other servers (router), one per server, made on first use from
   * a stream there and aliased for every later one; dropped with this handle. At most one entry
   * per server.
   */
  replicas: Map<RemoteConnection, RemoteHandle> | undefined;
}

/** What a router did: tensors moved between servers because a stream on another server used them. */
export interface RouterStats {
  /** Tensors moved, and their bytes. */
  moves: number;
  bytesMoved: number;
}

/**
 * A `FusionRuntime` whose handles are remote ids, over one server or several (a router).
 *
 * @remarks
 * **Where work runs.** The client fuses nothing (`fusers()` is empty): every operation is handed to
 * {@link RemoteRuntime.executeOperation} in stream order and queued, with the ids of its server,
 * on the connection of the server its stream lives on; the server's own fusion engine fuses it.
 * A stream lives on one server, chosen from its id (`stream mod servers`): stateless, so nothing
 * grows with the number of streams.
 * **FusionRuntime overrides (docs/concepts.md#fusionruntime).** `aliasHandle` mints a fresh server id aliasing the same server tensor (an `alias`
 * item); when the alias is for a stream on another server, the tensor is first moved there (read
 * from its server, uploaded to the other; counted in {@link RemoteRuntime.router}) — once per
 * server: the moved copy is kept with the source handle, aliased for every later stream there,
 * and dropped with the source (so weights shared by many tasks cross once). A bare copy of the
 * handle would share one server id between the aliases, and the first consume would free it for
 * both. `executeOperation` forwards every `drop` it is handed; `freeHandle` with `"ran"` then only
 * forgets the handle (the server already freed it), and with `"not-ran"` sends the drop itself.
 * Every other release of a handle (a consuming read, a foreign drop) sends one drop, once.
 * **Bounds.** One handle per live client tensor; queued items are bounded by each connection.
 */
export class RemoteRuntime implements FusionRuntime<RemoteHandle> {
  readonly name = "remote";
  /** The servers, in the order of the `url` list. */
  readonly connections: readonly RemoteConnection[];
  /** Moves between servers. */
  readonly router: RouterStats = { moves: 0, bytesMoved: 0 };

  /** The dtypes every server stores; reads are asynchronous (a round trip). */
  readonly capabilities: RuntimeCapabilities;

  constructor(connections: readonly RemoteConnection[]) {
    if (connections.length === 0) throw new InvariantError("a remote runtime needs at least one server");
    this.connections = connections;
    const first = connections[0] as RemoteConnection;
    this.capabilities = { dtypes: first.dtypes.filter((d) => connections.every((c) => c.dtypes.includes(d))), reads: "async" };
  }

  /** The server `stream` lives on. */
  serverFor(stream: StreamId | number): RemoteConnection {
    return this.connections[Number(stream) % this.connections.length] as RemoteConnection;
  }

  /** No client-side fusion: the servers fuse. */
  fusers(): OperationFuser<Optimization<RemoteHandle>>[] {
    return [];
  }

  /** Forwards `op` to the server of `ctx.stream` (a `drop` to the server holding the tensor). */
  executeOperation(op: OperationIr, ctx: ExecutionContext<RemoteHandle>): void {
    if (op.kind === "init") return;
    if (op.kind === "drop") {
      const handle = ctx.handles.getHandleRef(op.tensor.id);
      // Forwarded; the drain's `freeHandle(…, "ran")` then forgets the handle without a second drop.
      if (handle !== undefined && !handle.released) handle.connection.enqueue({ k: "drop", id: handle.id });
      return;
    }
    const connection = this.serverFor(ctx.stream);
    connection.checkAlive();
    const out = op.out;
    const id = connection.mintId();
    const wire = mapOperation(
      op,
      (t) => {
        if (t.id === out.id) return tensorIr(id as TensorIr["id"], t.shape, t.dtype, "NotInit");
        const handle = ctx.handles.getHandle(t);
        if (handle.connection !== connection) {
          throw new InvariantError(`tensor #${t.id} lives on ${handle.connection.url}, but stream ${ctx.stream} runs on ${connection.url} (a foreign tensor must arrive through aliasHandle)`);
        }
        return tensorIr(handle.id as TensorIr["id"], t.shape, t.dtype, t.status);
      },
      (v) => v,
    );
    connection.enqueue({ k: "op", s: Number(ctx.stream), op: wire });
    ctx.handles.registerHandle(out.id, this.#handle(connection, id, Number(ctx.stream), out.shape, out.dtype));
  }

  /**
   * A fresh server id on `stream`'s server for the same value as `handle` (docs/concepts.md#fusionruntime): an `alias`
   * of `handle` on its own server, or of its copy on another (moved there once, counted).
   */
  aliasHandle(handle: RemoteHandle, stream: StreamId): RemoteHandle {
    const target = this.serverFor(stream);
    const s = Number(stream);
    const source = target === handle.connection ? handle : this.#replica(handle, target, s);
    const id = target.mintId();
    target.enqueue({ k: "alias", s, src: source.id, id });
    return this.#handle(target, id, s, handle.shape, handle.dtype);
  }

  /**
   * `handle`'s copy on `target`: moved there (read from its server, uploaded under a fresh id,
   * counted) on first use, then reused for every later alias there, and dropped with `handle`.
   * The copy's upload is a gate in `target`'s queue: nothing queued there after it is sent first.
   */
  #replica(handle: RemoteHandle, target: RemoteConnection, stream: number): RemoteHandle {
    const known = handle.replicas?.get(target);
    if (known !== undefined) return known;
    this.router.moves++;
    this.router.bytesMoved += handle.bytes;
    target.stats.movesIn++;
    target.stats.bytesMovedIn += handle.bytes;
    const id = target.mintId();
    const { shape, dtype } = handle;
    target.gate(
      handle.connection.read(handle.id).then(
        (bytes): Item => ({ k: "upload", s: stream, id, shape, dtype, bytes }),
        (error: unknown): Item => ({ k: "poison", id, shape, dtype, error: toWireError(error) }),
      ),
    );
    const replica = this.#handle(target, id, stream, shape, dtype);
    (handle.replicas ??= new Map()).set(target, replica);
    return replica;
  }

  /**
   * The override (docs/concepts.md#fusionruntime): `"ran"` means the runtime was handed the drop and forwarded it (the server
   * freed the id), so the handle is only forgotten; `"not-ran"` lets the release send the drop.
   */
  freeHandle(handles: HandleContainer<RemoteHandle>, tensor: TensorIr, ran: OperationRan): void {
    if (tensor.status !== "ReadWrite") return;
    if (ran === "ran") {
      const handle = handles.getHandleRef(tensor.id);
      if (handle !== undefined) this.#forget(handle);
    }
    handles.free(tensor);
  }

  /** Sends the drop of `handle`'s id unless the server already freed it (and drops its copies). */
  releaseHandle(handle: RemoteHandle): void {
    if (handle.released) return;
    handle.connection.enqueue({ k: "drop", id: handle.id });
    this.#forget(handle);
  }

  /** Never: nothing is written in place on the client. */
  canMut(_handle: RemoteHandle): boolean {
    return false;
  }

  /**
   * Queues the values for upload to `stream`'s server.
   * @throws RemoteLimitError when they do not fit in one frame of that server.
   * @throws RemoteSessionError when the session is over.
   */
  upload(data: TensorData, stream: StreamId): RemoteHandle {
    const connection = this.serverFor(stream);
    connection.checkAlive();
    const view = bytesOf(data.data);
    if (view.byteLength + 1024 > connection.limits.maxFrameBytes) {
      throw new RemoteLimitError(connection.url, "maxFrameBytes", `upload of ${view.byteLength} bytes ([${data.shape.join(", ")}] ${data.dtype}) does not fit in one ${connection.limits.maxFrameBytes}-byte frame`);
    }
    const id = connection.mintId();
    const s = Number(stream);
    connection.enqueue({ k: "upload", s, id, shape: [...data.shape], dtype: data.dtype, bytes: view.slice() });
    return this.#handle(connection, id, s, data.shape, data.dtype);
  }

  /** Sends what is queued, asks the server for the values, and resolves when they arrive. */
  async read(handle: RemoteHandle, tensor: TensorIr, _stream: StreamId): Promise<TypedArray> {
    const bytes = await handle.connection.read(handle.id);
    return arrayOf(bytes, tensor.dtype);
  }

  /** Sends what every server has queued, then waits until `stream`'s server ran the stream's work. */
  async sync(stream: StreamId): Promise<void> {
    for (const c of this.connections) c.flush();
    await this.serverFor(stream).sync(Number(stream));
  }

  /** Bytes of the live server tensors this client holds, over every server. */
  memoryUsage(): MemoryUsage {
    let bytes = 0;
    let live = 0;
    for (const c of this.connections) {
      bytes += c.liveBytes;
      live += c.liveTensors;
    }
    // The client holds no pages or stream slots of its own; each server reports those (`serverMemory()`).
    return { bytesInUse: bytes, bytesReserved: bytes, pages: 0, slices: 0, liveAllocations: live, streams: 0 };
  }

  #handle(connection: RemoteConnection, id: number, stream: number, shape: readonly number[], dtype: DType): RemoteHandle {
    const bytes = numElements(shape) * deviceBytesPerElement(dtype);
    connection.liveTensors++;
    connection.liveBytes += bytes;
    return { connection, id, stream, shape, dtype, bytes, released: false, replicas: undefined };
  }

  /** Marks `handle` freed on its server, and drops its copies on the others (each once). */
  #forget(handle: RemoteHandle): void {
    if (handle.released) return;
    handle.released = true;
    handle.connection.liveTensors--;
    handle.connection.liveBytes -= handle.bytes;
    const replicas = handle.replicas;
    if (replicas === undefined) return;
    handle.replicas = undefined;
    for (const replica of replicas.values()) this.releaseHandle(replica);
  }
}
