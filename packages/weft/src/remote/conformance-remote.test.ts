/**
 * The conformance kit through a router over TWO real `weft serve` processes (CPU backend) on
 * 127.0.0.1, against the local CPU oracle. Each case runs on its own stream, so consecutive cases
 * alternate between the two servers; every value must equal the oracle's within the kit's
 * tolerances, and the suite must leave no tensor on the client and none on either server.
 */
import { afterAll, describe, expect, it } from "vitest";
import { Stream, StreamId } from "@weft/environment";
import { describeBackend } from "@weft/tensor/testing";
import { type RemoteDevice, createRemoteDevice } from "@weft/remote";
import { createCpuDevice } from "../device/backends.js";
import { SERVE_TOKEN, type ServeProcess, startServe } from "./serve-process.js";

const servers: ServeProcess[] = [];
let device: RemoteDevice | undefined;

async function connect(): Promise<RemoteDevice> {
  servers.push(...(await Promise.all([startServe(), startServe()])));
  device = await createRemoteDevice({ url: servers.map((s) => s.url), token: SERVE_TOKEN });
  return device;
}

afterAll(async () => {
  for (const s of servers) if (s.child.exitCode !== null || s.child.signalCode !== null) console.error(`weft serve ${s.url} died:\n${s.output()}`);
  device?.close();
  await Promise.all(servers.map((s) => s.stop()));
});

describeBackend("remote (router over two weft serve processes)", connect, {
  oracle: () => createCpuDevice({ fusion: false }),
  eachCase: (run) => Stream.run(StreamId.allocate(), run),
});

describe("remote conformance: both servers did the work, and nothing is left on them", () => {
  it("each server ran cases and holds no tensor of this client afterwards", async () => {
    if (device === undefined) throw new Error("the conformance suite did not connect");
    await device.syncAll();
    const reports = device.servers();
    for (const r of reports) expect(r.stats.ops, `${r.url} received operations`).toBeGreaterThan(0);
    const memory = await device.serverMemory();
    for (const [i, m] of memory.entries()) expect(m.sessionTensors, `server ${i} holds no tensor of this session`).toBe(0);
    expect(device.memory().liveHandles).toBe(0);
  });
});
