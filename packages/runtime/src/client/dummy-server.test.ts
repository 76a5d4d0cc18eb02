/**
 * The runtime against `@weft/server/testing`'s `DummyServer` (a full `HostComputeServer` with
 * memory management and byte-range taint): the behaviours of docs/concepts.md#streammode-overrides end to end on a real server.
 */
import { StreamId } from "@weft/environment";
import type { HostKernel, MemoryHandle } from "@weft/server";
import { DummyKernels, DummyServer, f32Bytes, fromF32Bytes, reads, writes } from "@weft/server/testing";
import { afterEach, describe, expect, it } from "vitest";
import { setProcessMode, withProcessMode } from "../mode/process-mode.js";
import { STREAM_MODES } from "../mode/stream-mode.js";
import { AutotuneKey } from "../tune/autotune-key.js";
import { TunableSet } from "../tune/tunable.js";
import { TuneCache } from "../tune/tune-cache.js";
import { MemoryTuneStore } from "../tune/tune-store.js";
import { Tuner } from "../tune/tuner.js";
import { Client } from "./client.js";

afterEach(() => {
  setProcessMode("execute");
  expect(STREAM_MODES.size, "overrides are disposed").toBe(0);
});

async function values(client: Client<HostKernel>, handle: MemoryHandle): Promise<number[]> {
  const [bytes] = await client.read([handle.binding()]);
  return Array.from(fromF32Bytes(bytes ?? new Uint8Array()));
}

describe("Client over DummyServer", () => {
  it("a discarded launch leaves memory untouched while autotune's measurement still executes under compile-and-autotune", async () => {
    const server = new DummyServer();
    const client = new Client<HostKernel>(server).withStream(StreamId.allocate());
    const a = client.create(f32Bytes([1, 2]));
    const b = client.create(f32Bytes([10, 20]));
    const out = client.create(f32Bytes([0, 0]));
    const set = new TunableSet<{ a: MemoryHandle; b: MemoryHandle }, MemoryHandle, number[], HostKernel>({
      name: "dummy-add",
      candidates: [
        {
          name: "add",
          run: (inputs, c) => {
            const o = c.empty(8);
            c.launch(DummyKernels.addF32, [1, 1, 1], [reads(inputs.a.binding()), reads(inputs.b.binding()), writes(o.binding())]);
            return o;
          },
        },
        {
          name: "device-failure",
          run: (inputs, c) => {
            const o = c.empty(8);
            c.launch(DummyKernels.failing("lost the race"), [1, 1, 1], [reads(inputs.a.binding()), writes(o.binding())]);
            return o;
          },
        },
        {
          name: "fill-wrong",
          run: (_inputs, c) => {
            const o = c.empty(8);
            c.launch(DummyKernels.fill(7), [1, 1, 1], [writes(o.binding())]);
            return o;
          },
        },
      ],
      key: () => AutotuneKey.of({ shapes: [[2], [2]], dtypes: ["f32", "f32"] }),
      validation: {
        read: async (o, c) => values(c, o),
        equal: (x, y) => x.every((v, i) => v === y[i]),
      },
      releaseOutput: (o) => o.release(),
    });
    const tuner = new Tuner(client, { cache: new TuneCache({ adapter: "dummy", store: new MemoryTuneStore() }), warmups: 0, samples: 1 });
    const record = await withProcessMode("compile-and-autotune", async () => {
      client.launch(DummyKernels.addF32, [1, 1, 1], [reads(a.binding()), reads(b.binding()), writes(out.binding())]);
      return tuner.tune(set, { a, b });
    });
    expect(await values(client, out), "the discarded launch wrote nothing").toEqual([0, 0]);
    expect(record.fastest, "the measurement executed: only the correct candidate validated").toBe("add");
    const rejected = Object.fromEntries(record.candidates.map((c) => [c.name, c.rejected ?? "ok"]));
    expect(rejected["device-failure"], "a device-side failure taints its output; reading it rejects the candidate").toMatch(/failed/);
    expect(rejected["fill-wrong"], "a wrong result is rejected").toMatch(/wrong result/);
    client.launch(DummyKernels.addF32, [1, 1, 1], [reads(a.binding()), reads(b.binding()), writes(out.binding())]);
    expect(await values(client, out), "back under 'execute', the launch runs").toEqual([11, 22]);
  });
});
