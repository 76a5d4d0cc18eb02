import { ReentrancyError, StreamId } from "@weft/environment";
import { LaunchError } from "@weft/server";
import { afterEach, describe, expect, it } from "vitest";
import { getProcessMode, setProcessMode, withProcessMode } from "../mode/process-mode.js";
import { StreamModeOverride } from "../mode/stream-mode.js";
import { RecordingServer, addScalarKernel, f32Bytes, f32Values } from "../testing/recording-server.js";
import type { HostTestKernel } from "../testing/recording-server.js";
import { BatchCompileError, Client } from "./client.js";

afterEach(() => {
  setProcessMode("execute");
});

function setup() {
  const server = new RecordingServer();
  const client = new Client(server).withStream(StreamId.allocate());
  const handle = client.create(f32Bytes([1, 2, 3]));
  const rw = [{ binding: handle.binding(), access: "read-write" as const }];
  return { server, client, handle, rw };
}

describe("Client", () => {
  it("an executed launch runs on the client's stream and changes memory", async () => {
    const { server, client, handle, rw } = setup();
    client.launch(addScalarKernel(1), [1, 1, 1], rw);
    expect(server.launches, "forwarded once, as 'execute', on the bound stream").toEqual([
      { key: "add-scalar(1)", stream: client.stream(), mode: "execute" },
    ]);
    const [bytes] = await client.read([handle.binding()]);
    expect(f32Values(bytes ?? new Uint8Array()), "the kernel ran").toEqual([2, 3, 4]);
  });

  it("an unbound client launches on the calling code's current stream", () => {
    const server = new RecordingServer();
    const client = new Client(server);
    const s = StreamId.allocate();
    const h = StreamId.executes(s, () => client.create(f32Bytes([0])));
    StreamId.executes(s, () => client.launch(addScalarKernel(1), [1, 1, 1], [{ binding: h.binding(), access: "read-write" }]));
    expect(server.launches[0]?.stream, "the stream current at the launch").toBe(s);
  });

  it("under compile-and-autotune a launch compiles, is discarded, and leaves memory untouched", () => {
    const { server, client, handle, rw } = setup();
    withProcessMode("compile-and-autotune", () => client.launch(addScalarKernel(5), [1, 1, 1], rw));
    expect(server.launches.map((l) => l.mode), "forwarded as a discarded launch").toEqual(["discard"]);
    expect(server.compiled, "its pipeline was created ahead").toContain("add-scalar(5)");
    expect(f32Values(client.readSync([handle.binding()])?.[0] ?? new Uint8Array()), "memory untouched").toEqual([1, 2, 3]);
    expect(getProcessMode(), "withProcessMode restored the previous mode").toBe("execute");
  });

  it("under batch-compile discarded kernels are queued once per key and compiled at the next sync", async () => {
    const { server, client, handle, rw } = setup();
    setProcessMode("batch-compile");
    client.launch(addScalarKernel(1), [1, 1, 1], rw);
    client.launch(addScalarKernel(1), [4, 1, 1], rw);
    client.launch(addScalarKernel(2), [1, 1, 1], rw);
    expect(server.launches, "queued launches never reach the server").toEqual([]);
    expect(client.queuedKernels, "deduplicated by kernel key").toBe(2);
    await client.sync();
    expect(server.compiled, "the sync compiled the batch").toEqual(["add-scalar(1)", "add-scalar(2)"]);
    expect(client.queuedKernels, "the queue is empty after the batch").toBe(0);
    expect(f32Values(client.readSync([handle.binding()])?.[0] ?? new Uint8Array()), "memory untouched").toEqual([1, 2, 3]);
  });

  it("a discard override under the execute process mode queues the kernel; compileQueued compiles it", () => {
    const { server, client, rw } = setup();
    {
      using _o = new StreamModeOverride("discard", client);
      client.launch(addScalarKernel(3), [1, 1, 1], rw);
    }
    expect(server.launches, "discarded").toEqual([]);
    expect(client.compileQueued(), "one kernel compiled").toBe(1);
    expect(server.compiled).toEqual(["add-scalar(3)"]);
    client.launch(addScalarKernel(3), [1, 1, 1], rw);
    expect(server.launches.map((l) => l.mode), "the override is gone: the launch executes").toEqual(["execute"]);
  });

  it("a batch compile tries every kernel and names each one that failed", () => {
    const { server, client, rw } = setup();
    const broken: HostTestKernel = { key: "broken", compileError: "unknown identifier `x`", run: () => undefined };
    setProcessMode("batch-compile");
    client.launch(broken, [1, 1, 1], rw);
    client.launch(addScalarKernel(1), [1, 1, 1], rw);
    let caught: unknown;
    try {
      client.compileQueued();
    } catch (error) {
      caught = error;
    }
    expect(caught, "the failure is reported").toBeInstanceOf(BatchCompileError);
    expect((caught as BatchCompileError).failures.map((f) => f.key), "names the failing kernel").toEqual(["broken"]);
    expect(server.compiled, "the healthy kernel still compiled").toEqual(["add-scalar(1)"]);
  });

  it("a zero count launches nothing and a bad count throws naming the kernel", () => {
    const { server, client, rw } = setup();
    client.launch(addScalarKernel(1), [0, 1, 1], rw);
    expect(server.launches, "an empty dispatch is skipped").toEqual([]);
    expect(() => client.launch(addScalarKernel(1), [1.5, 1, 1], rw), "fractional counts are misuse").toThrow(LaunchError);
    expect(() => client.launch(addScalarKernel(1), [-1, 1, 1], rw)).toThrow(/add-scalar\(1\)/);
  });

  it("a read's promise holds nothing of the server while it waits (docs/pitfalls.md#p4)", async () => {
    const { server, client, handle, rw } = setup();
    server.holdReads = true;
    let settled = false;
    const pending = client.read([handle.binding()]).then((r) => {
      settled = true;
      return r;
    });
    await Promise.resolve();
    expect(settled, "the read waits").toBe(false);
    client.launch(addScalarKernel(1), [1, 1, 1], rw);
    const second = client.read([handle.binding()]);
    await client.sync();
    expect(client.memoryUsage().liveAllocations, "other calls proceed while a read waits").toBe(1);
    server.releaseReads();
    const [first] = await pending;
    const [after] = await second;
    expect(f32Values(first ?? new Uint8Array()), "the first read saw the bytes of its own point in the stream").toEqual([1, 2, 3]);
    expect(f32Values(after ?? new Uint8Array()), "the second read saw the launch").toEqual([2, 3, 4]);
  });

  it("a client call made from inside a server call throws ReentrancyError (docs/pitfalls.md#p3)", () => {
    const { server, client, handle } = setup();
    let inner: unknown;
    const reentrant: HostTestKernel = {
      key: "reentrant",
      run: () => {
        try {
          client.memoryUsage();
        } catch (error) {
          inner = error;
        }
      },
    };
    client.launch(reentrant, [1, 1, 1], [{ binding: handle.binding(), access: "read" }]);
    expect(inner, "the nested call was refused").toBeInstanceOf(ReentrancyError);
    expect(() => client.memoryUsage(), "the guard was released after the outer call").not.toThrow();
  });

  it("withProcessMode restores the previous mode after an async function settles, also on rejection", async () => {
    await expect(
      withProcessMode("compile-and-autotune", async () => {
        await Promise.resolve();
        expect(getProcessMode(), "the mode holds across awaits").toBe("compile-and-autotune");
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(getProcessMode(), "restored after the rejection").toBe("execute");
  });
});
