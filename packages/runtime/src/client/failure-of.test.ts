/**
 * `Client.failureOf`: the synchronous taint query forwarded to the server. The property: the client
 * answers exactly what a read of the same bytes through it would reject with (`undefined` when the
 * read succeeds), on whatever stream it is bound to, and a server that tracks no taint answers
 * `undefined`.
 */
import { ReentrancyError, StreamId } from "@weft/environment";
import { InjectedFaultError, TaintedReadError, type ComputeServer, type HostKernel } from "@weft/server";
import { DummyKernels, DummyServer, f32Bytes, reads, writes } from "@weft/server/testing";
import { afterEach, describe, expect, it } from "vitest";
import { setProcessMode, withProcessMode } from "../mode/process-mode.js";
import { RecordingServer, addScalarKernel, f32Bytes as recordingBytes, type HostTestKernel } from "../testing/recording-server.js";
import { Client } from "./client.js";

afterEach(() => {
  setProcessMode("execute");
});

/** What a read of `bindings` through `client` rejects with (`undefined` when it resolves). */
async function readRejects(client: Client<HostKernel>, bindings: Parameters<Client["read"]>[0]): Promise<unknown> {
  return client.read(bindings).then(
    () => undefined,
    (error: unknown) => error,
  );
}

function setup() {
  const server = new DummyServer();
  const client = new Client<HostKernel>(server).withStream(StreamId.allocate());
  return { server, client };
}

describe("Client.failureOf", () => {
  it("untainted bytes answer undefined, like a read that succeeds", async () => {
    const { client } = setup();
    const a = client.create(f32Bytes([1, 2]));
    const out = client.empty(8);
    client.launch(DummyKernels.copy, [1, 1, 1], [reads(a.binding()), writes(out.binding())]);
    expect(client.failureOf([a.binding(), out.binding()]), "the copy ran: nothing is claimed").toBeUndefined();
    expect(await readRejects(client, [out.binding()]), "…and the read succeeds").toBeUndefined();
  });

  it("tainted bytes answer the error the read rejects with, naming the root cause", async () => {
    const { server, client } = setup();
    const a = client.empty(8);
    const out = client.empty(8);
    server.injectFault({ launch: 1 });
    client.launch(DummyKernels.fill(1), [1, 1, 1], [writes(a.binding())]);
    client.launch(DummyKernels.copy, [1, 1, 1], [reads(a.binding()), writes(out.binding())]);
    const error = client.failureOf([out.binding()]);
    expect(error, "out is claimed by the copy skipped for reading the failed fill").toBeInstanceOf(TaintedReadError);
    expect((error as TaintedReadError).root, "the root is the injected fault").toBeInstanceOf(InjectedFaultError);
    const rejected = await readRejects(client, [out.binding()]);
    expect((rejected as Error | undefined)?.message, "the read rejects with the same error").toBe((error as Error).message);
  });

  it("a sub-range is tainted only when a claim overlaps it", () => {
    const { client } = setup();
    const input = client.create(f32Bytes([1, 1]));
    const out = client.empty(16);
    client.launch(DummyKernels.failing("half"), [1, 1, 1], [reads(input.binding()), writes(out.binding(8, 8))]);
    expect(client.failureOf([out.binding(0, 8)]), "bytes 0..8 were not to be written").toBeUndefined();
    expect(client.failureOf([out.binding(4, 8)]), "bytes 4..12 overlap the claim on 8..16").toBeInstanceOf(TaintedReadError);
    expect(client.failureOf([out.binding(8, 4)]), "bytes 8..12 lie inside the claim").toBeInstanceOf(TaintedReadError);
  });

  it("a write through the client releases the claim on the bytes it writes", () => {
    const { server, client } = setup();
    const out = client.empty(8);
    server.injectFault({ launch: 1 });
    client.launch(DummyKernels.fill(3), [1, 1, 1], [writes(out.binding())]);
    expect(client.failureOf([out.binding()]), "the failed fill claims out").toBeInstanceOf(TaintedReadError);
    client.write(out.binding(), f32Bytes([4, 5]));
    expect(client.failureOf([out.binding()]), "the write gave every byte a writer again").toBeUndefined();
  });

  it("a discarded launch neither taints nor releases: the query sees memory as it was", () => {
    const { server, client } = setup();
    const clean = client.empty(8);
    const tainted = client.empty(8);
    server.injectFault({ kernelKey: DummyKernels.fill(9).key });
    client.launch(DummyKernels.fill(9), [1, 1, 1], [writes(tainted.binding())]);
    server.clearFaults();
    withProcessMode("compile-and-autotune", () => {
      client.launch(DummyKernels.failing("discarded"), [1, 1, 1], [writes(clean.binding())]);
      client.launch(DummyKernels.fill(2), [1, 1, 1], [writes(tainted.binding())]);
    });
    expect(client.failureOf([clean.binding()]), "a discarded failing kernel never ran: nothing claimed").toBeUndefined();
    expect(client.failureOf([tainted.binding()]), "a discarded fill wrote nothing: the claim stays").toBeInstanceOf(
      TaintedReadError,
    );
  });

  it("answers the same on every stream, since each binding names the memory that answers for it", () => {
    const { server, client } = setup();
    const out = client.empty(8);
    server.injectFault({ launch: 1 });
    client.launch(DummyKernels.fill(1), [1, 1, 1], [writes(out.binding())]);
    const elsewhere = client.withStream(StreamId.allocate());
    expect(elsewhere.failureOf([out.binding()]), "another stream's client sees the claim").toBeInstanceOf(TaintedReadError);
    const unbound = new Client<HostKernel>(server);
    expect(unbound.failureOf([out.binding()]), "an unbound client of the same server too").toBeInstanceOf(TaintedReadError);
  });

  it("a server that tracks no taint answers undefined", () => {
    const server = new RecordingServer();
    const client = new Client(server).withStream(StreamId.allocate());
    const handle = client.create(recordingBytes([1]));
    client.launch(addScalarKernel(1), [1, 1, 1], [{ binding: handle.binding(), access: "read-write" }]);
    const asServer: ComputeServer<HostTestKernel> = server;
    expect(asServer.failureOf, "the recording server has no taint query").toBeUndefined();
    expect(client.failureOf([handle.binding()]), "without the query every byte counts as clean").toBeUndefined();
  });

  it("asked from inside a server call it throws ReentrancyError, like every client call (docs/pitfalls.md#p3)", () => {
    const { client } = setup();
    const out = client.empty(8);
    let inner: unknown;
    const reentrant: HostKernel = {
      key: "reentrant-failure-of",
      run: () => {
        try {
          client.failureOf([out.binding()]);
        } catch (error) {
          inner = error;
        }
      },
    };
    client.launch(reentrant, [1, 1, 1], [writes(out.binding())]);
    expect(inner, "the nested query was refused").toBeInstanceOf(ReentrancyError);
    expect(client.failureOf([out.binding()]), "the guard was released; the kernel ran, so out is clean").toBeUndefined();
  });
});
