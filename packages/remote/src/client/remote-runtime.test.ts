/**
 * The remote runtime against an in-process server on 127.0.0.1 (CPU backend): values, ordering,
 * cleanup on both sides, and the two FusionRuntime overrides of docs/concepts.md#fusionruntime. Each override has a test that fails when it
 * is replaced by the seed's default — shown by running the same scenario on a runtime that does
 * exactly that and expecting the failure.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Stream, StreamId, getStreamPolicy, setStreamPolicy } from "@weft/environment";
import { type HandleContainer, type OperationRan, TensorComputationError, type TensorIr } from "@weft/fusion";
import { type Tensor, setDevice, tensor, tidy } from "@weft/tensor";
import { TEST_TOKEN, startTestServer } from "../testing/in-process.js";
import type { RemoteServer } from "../server/remote-server.js";
import { RemoteSessionError } from "../errors/remote-errors.js";
import { RemoteConnection } from "./connection.js";
import { RemoteDevice, createRemoteDevice } from "./remote-device.js";
import { type RemoteHandle, RemoteRuntime } from "./remote-runtime.js";

/** The default (docs/concepts.md#fusionruntime) `aliasHandle` for a remote handle: a bare copy of the same server id. */
class BareCloneRuntime extends RemoteRuntime {
  override aliasHandle(handle: RemoteHandle): RemoteHandle {
    return { ...handle };
  }
}

/** The default (docs/concepts.md#fusionruntime) `freeHandle`: removes the entry, so the release sends a second drop. */
class DefaultFreeRuntime extends RemoteRuntime {
  override freeHandle(handles: HandleContainer<RemoteHandle>, tensor: TensorIr, _ran: OperationRan): void {
    handles.free(tensor);
  }
}

async function device(url: string, make: (c: RemoteConnection[]) => RemoteRuntime = (c) => new RemoteRuntime(c)): Promise<RemoteDevice> {
  const connection = await RemoteConnection.open(url, TEST_TOKEN, { heartbeatMs: 200, timeoutMs: 5_000 });
  return new RemoteDevice(make([connection]));
}

describe("remote runtime (in-process server)", () => {
  let server: RemoteServer;
  let url: string;
  let serverDevice: Awaited<ReturnType<typeof startTestServer>>["device"];
  let policy: ReturnType<typeof getStreamPolicy>;

  beforeAll(async () => {
    ({ server, url, device: serverDevice } = await startTestServer());
    policy = getStreamPolicy();
    setStreamPolicy("per-task");
  });
  afterAll(async () => {
    setStreamPolicy(policy);
    await server.close();
  });

  async function expectClean(d: RemoteDevice, why: string): Promise<void> {
    await d.syncAll();
    expect(d.memory(), `${why}: the client holds nothing`).toMatchObject({ liveTensors: 0, liveHandles: 0, streams: 0 });
    const [m] = await d.serverMemory();
    expect(m?.sessionTensors, `${why}: the server holds nothing for this session`).toBe(0);
    expect(m?.sessionBytes).toBe(0);
  }

  it("computes a fused chain on the server and reads it back", async () => {
    const d = await createRemoteDevice({ url, token: TEST_TOKEN });
    setDevice(d);
    const x = tensor([1, 2, 3, 4], { shape: [2, 2] });
    serverDevice.fusion.inspector?.clearLog();
    const y = tidy(() => x.add(1).mul(2).sum(1));
    expect(Array.from(await y.data())).toEqual([10, 18]);
    const blocks = serverDevice.fusion.inspector?.executedBlocks ?? [];
    expect(blocks.some((b) => b.fused && b.kinds.includes("binary-scalar")), "the chain ran fused on the server").toBe(true);
    expect(d.fusion.inspector?.executedBlocks.some((b) => b.fused), "the client fuses nothing").toBe(false);
    const b = tensor([true, false]);
    const nb = b.not();
    expect(Array.from(await nb.data())).toEqual([0, 1]);
    for (const t of [x, y, b, nb]) t.dispose();
    await expectClean(d, "a chain");
    d.close();
  });

  it("aliasHandle mints a fresh server id: consuming one alias leaves the other readable", async () => {
    const d = await device(url);
    setDevice(d);
    const owner = StreamId.allocate();
    const peer = StreamId.allocate();
    const x = Stream.run(owner, () => tensor([1, 2, 3]));
    await Stream.run(owner, () => x.data());
    const mine = Stream.run(peer, () => x.clone()); // a cross-stream alias: aliasHandle
    Stream.run(owner, () => x.dispose()); // the owner's id is dropped on the server
    expect(Array.from(await Stream.run(peer, () => mine.data())), "the alias still reads the shared values").toEqual([1, 2, 3]);
    Stream.run(peer, () => mine.dispose());
    await expectClean(d, "alias");
    d.close();
  });

  it("…and the same scenario fails with a bare clone of the handle (what the override prevents)", async () => {
    const d = await device(url, (c) => new BareCloneRuntime(c));
    setDevice(d);
    const owner = StreamId.allocate();
    const peer = StreamId.allocate();
    const x = Stream.run(owner, () => tensor([1, 2, 3]));
    await Stream.run(owner, () => x.data());
    const mine = Stream.run(peer, () => x.clone());
    Stream.run(owner, () => x.dispose());
    // A failed read is a TensorComputationError (issue 9) rooted in the session's error.
    const error = await Stream.run(peer, () => mine.data()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TensorComputationError);
    expect((error as TensorComputationError).root, "the server freed the one shared id: the alias is gone").toBeInstanceOf(RemoteSessionError);
    d.close();
  });

  it("freeHandle sends no second drop for a drop the runtime forwarded (each server id dropped once)", async () => {
    const d = await device(url);
    setDevice(d);
    const kept: Tensor[] = [];
    for (let i = 0; i < 20; i++) {
      const x = tensor([i, i + 1]);
      const y = x.mul(2);
      x.dispose(); // a drop handed to the runtime, forwarded
      kept.push(y);
    }
    const last = kept[kept.length - 1] as Tensor;
    expect(Array.from(await last.data())).toEqual([38, 40]);
    const connection = d.runtime.connections[0] as RemoteConnection;
    expect(connection.stats.drops, "one drop per disposed input").toBe(20);
    for (const t of kept) t.dispose();
    await expectClean(d, "drops");
    expect(connection.stats.drops, "and one per output: every id exactly once").toBe(40);
    d.close();
  });

  it("…and with the default freeHandle the release drops the id a second time, which the server refuses", async () => {
    const d = await device(url, (c) => new DefaultFreeRuntime(c));
    setDevice(d);
    const x = tensor([1, 2]);
    const y = x.mul(2);
    x.dispose();
    await expect(y.data(), "a double drop names an id the session no longer holds").rejects.toThrow(/not a live tensor of this session/);
    d.close();
  });

  it("a tensor disposed before any read never reaches the server as a live id (no leak)", async () => {
    const d = await device(url);
    setDevice(d);
    for (let i = 0; i < 50; i++) {
      const x = tensor([i]);
      x.add(1).dispose();
      x.dispose();
    }
    await expectClean(d, "drops of never-read tensors");
    d.close();
  });
});
