/**
 * `HostComputeServer.failureOf`: the synchronous taint query fused callers ask before binding
 * several computations into one launch. The property throughout: it answers exactly what a read of
 * the same bytes issued now would reject with (or `undefined` when that read would succeed), and it
 * changes nothing — no claim, no failure, no counter moves.
 */
import { StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import { InjectedFaultError, InvalidBindingError, LaunchError } from "../errors/server-error.js";
import { TaintedReadError } from "../errors/tainted-read-error.js";
import { DummyKernels, DummyServer, f32Bytes, reads, writes } from "../testing/dummy-server.js";

const S0 = StreamId.DEFAULT;
const S1 = StreamId.of(1);

/** What a read of `bindings` throws now (or `undefined` when it succeeds). */
function readThrows(server: DummyServer, bindings: Parameters<DummyServer["readSync"]>[0]): unknown {
  try {
    server.readSync(bindings, S0);
    return undefined;
  } catch (error) {
    return error;
  }
}

/** Everything a query must leave alone. */
function state(server: DummyServer): unknown {
  return { stats: server.stats(), failures: server.graph.size, memory: server.memoryUsage() };
}

describe("HostComputeServer.failureOf", () => {
  it("clean bytes answer undefined, and a read of them succeeds", () => {
    const server = new DummyServer();
    const a = server.createF32([1, 2], S0);
    const out = server.empty(8, S0);
    server.copy(a.binding(), out.binding(), S0);
    expect(server.failureOf([a.binding(), out.binding()]), "nothing failed: every byte is clean").toBeUndefined();
    expect(readThrows(server, [a.binding(), out.binding()]), "…which is what a read finds too").toBeUndefined();
  });

  it("tainted bytes answer the exact error a read would reject with, and nothing changes", () => {
    const server = new DummyServer();
    const a = server.empty(8, S0);
    const b = server.createF32([5, 5], S0);
    const out = server.empty(8, S0);
    server.injectFault({ launch: 1 });
    server.fill(a.binding(), 1, S0); // fails: taints a
    server.add(a.binding(), b.binding(), out.binding(), S0); // skipped: taints out

    const before = state(server);
    const error = server.failureOf([b.binding(), out.binding()]);
    expect(state(server), "a query records nothing, prunes nothing and moves no memory").toEqual(before);
    expect(error, "out is claimed by the skipped launch's failure").toBeInstanceOf(TaintedReadError);
    const tainted = error as TaintedReadError;
    expect(tainted.root, "the root is the injected fault, not the skip").toBeInstanceOf(InjectedFaultError);
    expect(tainted.chain.map((e) => e.kind), "root first, then the skip that claims out").toEqual(["injected", "skipped"]);
    expect(tainted.needed, "it names the first tainted binding (b is clean)").toEqual(out.binding());

    const thrown = readThrows(server, [b.binding(), out.binding()]);
    expect(thrown, "a read of the same bytes rejects").toBeInstanceOf(TaintedReadError);
    expect((thrown as TaintedReadError).message, "…with the same message the query handed back").toBe(tainted.message);
    expect((thrown as TaintedReadError).failure, "…naming the same failure").toBe(tainted.failure);
    expect(server.failureOf([a.binding()])?.chain.map((e) => e.kind), "the failed launch's own output: the root alone").toEqual([
      "injected",
    ]);
  });

  it("a sub-range is tainted exactly when a claim overlaps it", () => {
    const server = new DummyServer();
    const input = server.createF32([1, 1], S0);
    const out = server.empty(16, S0);
    server.launch(DummyKernels.failing("half"), [1, 1, 1], [reads(input.binding()), writes(out.binding(0, 8))], S0, "execute");

    expect(server.failureOf([out.binding(8, 8)]), "bytes 8..16 were not written by the failed launch").toBeUndefined();
    expect(readThrows(server, [out.binding(8, 8)]), "…and read fine").toBeUndefined();
    const overlapping = server.failureOf([out.binding(4, 8)]);
    expect(overlapping, "bytes 4..12 overlap the claim on 0..8").toBeInstanceOf(TaintedReadError);
    expect((overlapping as TaintedReadError).root, "the root is the kernel's own failure").toBeInstanceOf(LaunchError);
    expect(server.failureOf([out.binding()]), "the whole allocation holds claimed bytes").toBeInstanceOf(TaintedReadError);
    expect(server.failureOf([out.binding(0, 0)]), "an empty range holds no byte, so nothing claims it").toBeUndefined();
    expect(server.failureOf([input.binding()]), "the failed launch's reads are untouched").toBeUndefined();
  });

  it("a host write releases the claim on exactly the bytes it writes", () => {
    const server = new DummyServer();
    const out = server.empty(16, S0);
    server.injectFault({ launch: 1 });
    server.fill(out.binding(), 2, S0);
    expect(server.failureOf([out.binding()]), "the failed fill claims all 16 bytes").toBeInstanceOf(TaintedReadError);

    server.write(out.binding(0, 8), f32Bytes([3, 4]), S0);
    expect(server.failureOf([out.binding(0, 8)]), "the written half has a writer again").toBeUndefined();
    expect(server.failureOf([out.binding(8, 8)]), "the other half is still claimed").toBeInstanceOf(TaintedReadError);
    server.write(out.binding(8, 8), f32Bytes([5, 6]), S0);
    expect(server.failureOf([out.binding()]), "every byte written again: clean").toBeUndefined();
    expect(server.graph.size, "no byte holds the failure any more, so the graph pruned it").toBe(0);
  });

  it("a launch that runs releases the claim on its writes", () => {
    const server = new DummyServer();
    const out = server.empty(8, S0);
    server.injectFault({ launch: 1 });
    server.fill(out.binding(), 1, S0);
    expect(server.failureOf([out.binding()]), "the failed fill claims out").toBeInstanceOf(TaintedReadError);
    server.fill(out.binding(), 7, S0);
    expect(server.failureOf([out.binding()]), "a successful fill rewrote every byte").toBeUndefined();
    expect(server.readF32(out.binding(), S0), "and the bytes are the new ones").toEqual([7, 7]);
  });

  it("answers for memory of any stream, whatever stream asks", () => {
    const server = new DummyServer();
    const mine = server.empty(8, S1);
    server.injectFault({ launch: 1 });
    server.fill(mine.binding(), 1, S1);
    expect(server.failureOf([mine.binding()]), "stream 1's memory answers for its bytes").toBeInstanceOf(TaintedReadError);
  });

  it("a binding of memory that is not live is misuse, named like a read's", () => {
    const server = new DummyServer();
    const gone = server.empty(8, S0);
    const binding = gone.binding();
    gone.release();
    expect(() => server.failureOf([binding]), "freed memory has no bytes to ask about").toThrow(InvalidBindingError);
    const live = server.empty(8, S0);
    expect(() => server.failureOf([live.binding(4, 8)]), "bytes past the allocation's end").toThrow(/outside allocation/);
  });
});

describe("HostComputeServer.hasClaims", () => {
  it("is false exactly while no failure is live: then failureOf and pendingOf answer clean for every binding", () => {
    const server = new DummyServer();
    const out = server.empty(16, S0);
    expect(server.hasClaims(), "a fresh server claims nothing").toBe(false);
    server.injectFault({ launch: 1 });
    server.fill(out.binding(), 2, S0);
    expect(server.hasClaims(), "the failed fill claims out").toBe(true);
    server.write(out.binding(0, 8), f32Bytes([3, 4]), S0);
    expect(server.hasClaims(), "half of out is still claimed").toBe(true);
    server.write(out.binding(8, 8), f32Bytes([5, 6]), S0);
    expect(server.failureOf([out.binding()]), "every byte written again").toBeUndefined();
    expect(server.hasClaims(), "the pruned failure claims nothing: false again").toBe(false);
  });

  it("freeing the only claimed memory ends the claim", () => {
    const server = new DummyServer();
    const out = server.empty(8, S0);
    server.injectFault({ launch: 1 });
    server.fill(out.binding(), 1, S0);
    expect(server.hasClaims()).toBe(true);
    out.release();
    expect(server.hasClaims(), "no byte holds the failure any more").toBe(false);
  });
});

describe("KernelBinding.writes: a launch that writes part of a binding", () => {
  it("a skipped launch taints only the bytes it declares written, not the rest of the allocation", () => {
    const server = new DummyServer();
    const src = server.empty(4, S0);
    const pack = server.createF32([1, 2, 3, 4], S0);
    server.injectFault({ launch: 1 });
    server.fill(src.binding(), 9, S0); // fails: taints src
    // Reads src (tainted): skipped, and taints what it declares written: bytes 4..8 of the pack.
    server.launch(DummyKernels.fill(5), [1, 1, 1], [reads(src.binding()), { ...writes(pack.binding()), writes: pack.binding(4, 4) }], S0, "execute");
    expect(server.failureOf([pack.binding(4, 4)]), "the declared bytes carry the failure").toBeInstanceOf(TaintedReadError);
    expect(server.failureOf([pack.binding(0, 4)]), "the other elements of the allocation stay clean").toBeUndefined();
    expect(server.failureOf([pack.binding(8, 8)])).toBeUndefined();
  });
});

