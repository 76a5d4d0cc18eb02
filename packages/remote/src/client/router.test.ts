/**
 * The router over two in-process servers (127.0.0.1, CPU): a stream lives on one server; a tensor
 * used from a stream of the other server is moved there (counted), with its values; a move whose
 * source failed carries the failure to whatever reads the moved tensor; nothing is left anywhere.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Stream, StreamId, getStreamPolicy, setStreamPolicy } from "@weft/environment";
import { TensorComputationError } from "@weft/fusion";
import { setDevice, tensor, tidy } from "@weft/tensor";
import { TEST_TOKEN, startTestServer } from "../testing/in-process.js";
import type { RemoteServer } from "../server/remote-server.js";
import { type RemoteDevice, createRemoteDevice } from "./remote-device.js";

describe("router (two in-process servers)", () => {
  let servers: RemoteServer[];
  let device: RemoteDevice;
  let policy: ReturnType<typeof getStreamPolicy>;

  beforeAll(async () => {
    const started = await Promise.all([startTestServer(), startTestServer()]);
    servers = started.map((s) => s.server);
    device = await createRemoteDevice({ url: started.map((s) => s.url), token: TEST_TOKEN });
    setDevice(device);
    policy = getStreamPolicy();
    setStreamPolicy("per-task");
  });
  afterAll(async () => {
    setStreamPolicy(policy);
    device.close();
    await Promise.all(servers.map((s) => s.close()));
  });

  /** Two streams on different servers. */
  function streamsOnBothServers(): [StreamId, StreamId] {
    const a = StreamId.allocate();
    let b = StreamId.allocate();
    while (device.runtime.serverFor(b) === device.runtime.serverFor(a)) b = StreamId.allocate();
    return [a, b];
  }

  it("spreads streams over both servers and moves a tensor used across them, counted", async () => {
    const [a, b] = streamsOnBothServers();
    const moves = device.stats().router.moves;
    const x = Stream.run(a, () => tensor([1, 2, 3, 4]));
    const y = Stream.run(b, () => tidy(() => x.mul(10).add(1)));
    expect(device.stats().router.moves - moves, "x was moved to b's server once").toBe(1);
    expect(device.stats().router.bytesMoved).toBeGreaterThanOrEqual(16);
    Stream.run(a, () => x.dispose());
    expect(Array.from(await Stream.run(b, () => y.data()))).toEqual([11, 21, 31, 41]);
    Stream.run(b, () => y.dispose());
    await device.syncAll();
    for (const r of device.servers()) expect(r.stats.ops + r.stats.uploads, `${r.url} took part`).toBeGreaterThan(0);
    for (const m of await device.serverMemory()) expect(m.sessionTensors).toBe(0);
    expect(device.memory()).toMatchObject({ liveTensors: 0, liveHandles: 0 });
  });

  it("a tensor used from many streams of the other server crosses once (then aliased there), and its copy goes with it", async () => {
    const [a, b] = streamsOnBothServers();
    const others = [b, ...Array.from({ length: 6 }, () => StreamId.allocate()).filter((s) => device.runtime.serverFor(s) === device.runtime.serverFor(b))];
    const moves = device.stats().router.moves;
    const w = Stream.run(a, () => tensor([1, 2, 3]));
    const ys = others.map((s) => Stream.run(s, () => tidy(() => w.add(1))));
    expect(device.stats().router.moves - moves, `one move for ${others.length} streams on the other server`).toBe(1);
    for (const [i, s] of others.entries()) expect(Array.from(await Stream.run(s, () => (ys[i] as ReturnType<typeof tensor>).data()))).toEqual([2, 3, 4]);
    others.forEach((s, i) => Stream.run(s, () => (ys[i] as ReturnType<typeof tensor>).dispose()));
    Stream.run(a, () => w.dispose());
    await device.syncAll();
    for (const m of await device.serverMemory()) expect(m.sessionTensors, "the copy is dropped with its source").toBe(0);
  });

  it("a move whose source failed delivers the failure to reads of what is computed from it", async () => {
    const [a, b] = streamsOnBothServers();
    const x = Stream.run(a, () => tensor([10, 20, 30]));
    const idx = Stream.run(a, () => tensor([5], { dtype: "i32" }));
    const bad = Stream.run(a, () => x.gather(idx, 0)); // index out of range: fails on its server
    const y = Stream.run(b, () => tidy(() => bad.add(1)));
    const error = await Stream.run(b, () => y.data()).catch((e: unknown) => e);
    expect(error, "the moved tensor is poisoned with the source's failure").toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(TypeError);
    for (const t of [x, idx, bad]) Stream.run(a, () => t.dispose());
    Stream.run(b, () => y.dispose());
    await device.syncAll();
    for (const m of await device.serverMemory()) expect(m.sessionTensors, "poisoned ids are freed too").toBe(0);
    expect(device.servers().every((r) => r.alive), "a failed computation ends no session").toBe(true);
  });

  it("computation errors keep their class: a failed read rejects with TensorComputationError as locally", async () => {
    const [a] = streamsOnBothServers();
    const x = Stream.run(a, () => tensor([10, 20, 30]));
    const idx = Stream.run(a, () => tensor([7], { dtype: "i32" }));
    const bad = Stream.run(a, () => x.gather(idx, 0));
    const error = await Stream.run(a, () => bad.data()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TensorComputationError);
    expect((error as TensorComputationError).root.name, "the root is the server's error").toBe("RemoteComputationError");
    for (const t of [x, idx, bad]) Stream.run(a, () => t.dispose());
  });
});
