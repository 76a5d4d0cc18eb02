import { StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import { BufferTooBigError, InjectedFaultError, InvalidBindingError, LaunchError, OutOfMemoryError, ValidationError } from "../errors/server-error.js";
import { TaintedReadError } from "../errors/tainted-read-error.js";
import { DummyKernels, DummyServer, f32Bytes, reads, writes } from "../testing/dummy-server.js";
import { HostComputeServer } from "./host-compute-server.js";
import type { HostKernel } from "./host-kernel.js";

const S0 = StreamId.DEFAULT;

function taintedRead(fn: () => unknown): TaintedReadError {
  try {
    fn();
  } catch (error) {
    if (error instanceof TaintedReadError) return error;
    throw error;
  }
  throw new Error("expected the read to throw a TaintedReadError");
}

describe("HostComputeServer", () => {
  it("runs kernels over host memory and reads copies back", async () => {
    const server = new DummyServer();
    const a = server.createF32([1, 2, 3], S0);
    const b = server.createF32([10, 20, 30], S0);
    const out = server.empty(12, S0);
    server.add(a.binding(), b.binding(), out.binding(), S0);
    expect(server.readF32(out.binding(), S0)).toEqual([11, 22, 33]);
    const [bytes] = await server.read([out.binding()], S0);
    bytes![0] = 0xff;
    expect(server.readF32(out.binding(), S0), "a read hands out a copy, never a view").toEqual([11, 22, 33]);
  });

  it("a failed launch taints exactly its writes", () => {
    const server = new DummyServer();
    const input = server.createF32([1, 1], S0);
    const out = server.empty(16, S0);
    const kernel = DummyKernels.failing("boom");
    server.launch(kernel, [1, 1, 1], [reads(input.binding()), writes(out.binding(0, 8))], S0, "execute");
    const error = taintedRead(() => server.readSync([out.binding(0, 8)], S0));
    expect(error.root).toBeInstanceOf(LaunchError);
    expect(error.cause, "the cause is the root error").toBe(error.root);
    expect(error.message).toContain("boom");
    expect(server.readSync([out.binding(8, 8)], S0), "the bytes it did not write are readable").toHaveLength(1);
    expect(server.readF32(input.binding(), S0), "its reads are untouched").toEqual([1, 1]);
  });

  it("a launch reading tainted bytes is skipped; its outputs carry a failure caused by the root", () => {
    const server = new DummyServer();
    const a = server.empty(8, S0);
    const b = server.createF32([5, 5], S0);
    const out = server.createF32([7, 7], S0);
    server.injectFault({ launch: 1 });
    server.fill(a.binding(), 1, S0);
    server.add(a.binding(), b.binding(), out.binding(), S0);
    expect(server.stats().skipped).toBe(1);
    const error = taintedRead(() => server.readF32(out.binding(), S0));
    expect(error.root, "the root is the injected fault, not the skip").toBeInstanceOf(InjectedFaultError);
    expect(error.chain.map((e) => e.kind), "root first, then the skip").toEqual(["injected", "skipped"]);
    expect(error.message).toContain('kernel "dummy/add-f32" did not run');
    expect(server.readF32(b.binding(), S0), "a read of untainted bytes on the same stream succeeds").toEqual([5, 5]);
  });

  it("an in-place (read-write) launch on tainted bytes is skipped and keeps the root in the chain", () => {
    const server = new DummyServer();
    const buf = server.empty(8, S0);
    server.injectFault({ launch: 1 });
    server.fill(buf.binding(), 1, S0);
    const inPlace: HostKernel = { key: "double", run: () => undefined };
    server.launch(inPlace, [1, 1, 1], [{ binding: buf.binding(), access: "read-write" }], S0, "execute");
    const error = taintedRead(() => server.readSync([buf.binding()], S0));
    expect(error.chain.map((e) => e.kind), "the skip now claims the bytes, caused by the injected root").toEqual([
      "injected",
      "skipped",
    ]);
    expect(server.graph.size, "root kept alive as cause, skip holding the bytes").toBe(2);
  });

  it("an async read of tainted bytes rejects with the root named", async () => {
    const server = new DummyServer();
    const out = server.empty(8, S0);
    server.injectFault({ kernelKey: DummyKernels.fill(3).key });
    server.fill(out.binding(), 3, S0);
    await expect(server.read([out.binding()], S0)).rejects.toThrow(/Root cause: \[injected\]/);
  });

  it("a write releases the claim", () => {
    const server = new DummyServer();
    const out = server.empty(8, S0);
    server.injectFault({ launch: 1 });
    server.fill(out.binding(), 2, S0);
    expect(() => server.readSync([out.binding()], S0)).toThrow(TaintedReadError);
    server.write(out.binding(0, 4), f32Bytes([9]), S0);
    expect(server.readF32(out.binding(0, 4), S0), "the rewritten half is clean").toEqual([9]);
    expect(() => server.readSync([out.binding(4, 4)], S0), "the other half is still tainted").toThrow(TaintedReadError);
    server.fill(out.binding(), 4, S0);
    expect(server.readF32(out.binding(), S0), "a successful launch writing the bytes releases the rest").toEqual([4, 4]);
    expect(server.graph.size, "nothing holds the failure any more").toBe(0);
  });

  it("discard compiles only and leaves memory untouched", () => {
    const server = new DummyServer();
    const out = server.createF32([1, 2], S0);
    server.launch(DummyKernels.fill(8), [1, 1, 1], [writes(out.binding())], S0, "discard");
    expect(server.readF32(out.binding(), S0), "a discarded launch writes nothing").toEqual([1, 2]);
    expect(server.stats()).toMatchObject({ discarded: 1, launched: 0, compiled: 1 });
  });

  it("discard does not release claims either", () => {
    const server = new DummyServer();
    const out = server.empty(8, S0);
    server.injectFault({ launch: 1 });
    server.fill(out.binding(), 1, S0);
    server.launch(DummyKernels.fill(2), [1, 1, 1], [writes(out.binding())], S0, "discard");
    expect(() => server.readSync([out.binding()], S0), "nothing wrote the bytes").toThrow(TaintedReadError);
  });

  it("fault injection: the nth launch from now fails, others run", () => {
    const server = new DummyServer();
    const outs = [0, 1, 2].map(() => server.empty(4, S0));
    server.injectFault({ launch: 2 });
    outs.forEach((h, i) => server.fill(h.binding(), i, S0));
    expect(server.readF32(outs[0]!.binding(), S0)).toEqual([0]);
    expect(() => server.readSync([outs[1]!.binding()], S0), "the second launch failed").toThrow(/launch #2/);
    expect(server.readF32(outs[2]!.binding(), S0)).toEqual([2]);
  });

  it("fault injection: the nth allocation fails with OutOfMemoryError; clearFaults removes faults", () => {
    const server = new DummyServer();
    server.injectFault({ allocation: 2 });
    server.empty(4, S0);
    expect(() => server.empty(4, S0)).toThrow(OutOfMemoryError);
    server.injectFault({ allocation: 1 });
    server.injectFault({ kernelKey: "dummy/copy" });
    server.clearFaults();
    const a = server.createF32([3], S0);
    const b = server.empty(4, S0);
    server.copy(a.binding(), b.binding(), S0);
    expect(server.readF32(b.binding(), S0), "no fault is left").toEqual([3]);
  });

  it("a compile error fails the launch at execute and throws at compile", () => {
    const server = new DummyServer();
    const out = server.empty(4, S0);
    const bad = DummyKernels.invalid("no such op");
    expect(() => server.compile(bad)).toThrow(ValidationError);
    server.launch(bad, [1, 1, 1], [writes(out.binding())], S0, "execute");
    expect(() => server.readSync([out.binding()], S0)).toThrow(/no such op/);
  });

  it("compile caches the key: validate runs once", () => {
    const server = new DummyServer();
    let validations = 0;
    const kernel: HostKernel = { key: "count", validate: () => void validations++, run: () => undefined };
    server.compile(kernel);
    server.compile(kernel);
    expect(validations).toBe(1);
  });

  it("taint lands on the allocating stream: a launch on stream 1 reading stream 0's failure is skipped", () => {
    const server = new DummyServer();
    const s1 = StreamId.of(1);
    const a = server.empty(4, S0);
    server.injectFault({ launch: 1 });
    server.fill(a.binding(), 1, S0);
    const out = server.empty(4, s1);
    server.copy(a.binding(), out.binding(), s1);
    expect(server.pool.tryGet(s1)?.claims.allocations, "stream 1 claims its own output").toBe(1);
    expect(() => server.readSync([out.binding()], s1)).toThrow(/Root cause: \[injected\]/);
  });

  it("freeing tainted memory forgets its claims and prunes the failure", () => {
    const server = new DummyServer();
    const out = server.empty(4, S0);
    server.injectFault({ launch: 1 });
    server.fill(out.binding(), 1, S0);
    expect(server.graph.size).toBe(1);
    out.release();
    expect(server.graph.size, "a freed allocation holds no failure").toBe(0);
  });

  it("misuse throws synchronously and records nothing", () => {
    const server = new DummyServer();
    const h = server.empty(4, S0);
    const binding = h.binding();
    h.release();
    expect(() => server.fill(binding, 1, S0), "a binding of freed memory").toThrow(InvalidBindingError);
    expect(() => server.write(server.empty(4, S0).binding(), new Uint8Array(3), S0)).toThrow(/exactly the binding's size/);
    expect(() => server.empty(2 ** 40, S0)).toThrow(BufferTooBigError);
    expect(server.stats().failed).toBe(0);
  });

  it("a kernel calling back into the server fails its launch with the re-entrancy named", () => {
    const server = new HostComputeServer();
    const out = server.empty(4, S0);
    const reentrant: HostKernel = { key: "reenter", run: () => void server.empty(4, S0) };
    server.launch(reentrant, [1, 1, 1], [writes(out.binding())], S0, "execute");
    expect(() => server.readSync([out.binding()], S0)).toThrow(/re-entered/);
  });

  it("memoryUsage sums every stream; pins keep memory across streams until unpinned", () => {
    const server = new DummyServer({ memory: { pageSize: 1024 } });
    const a = server.empty(100, S0);
    const b = server.empty(50, StreamId.of(1));
    expect(server.memoryUsage()).toMatchObject({ bytesInUse: 150, pages: 2, liveAllocations: 2 });
    const unpin = server.pin(a.binding());
    a.release();
    expect(server.memoryUsage().liveAllocations, "stream 1's pin keeps stream 0's memory").toBe(2);
    unpin();
    b.release();
    expect(server.memoryUsage()).toMatchObject({ bytesInUse: 0, liveAllocations: 0 });
    server.memoryCleanup(true);
    expect(server.memoryUsage().bytesReserved).toBe(0);
  });

  it("a storage out-of-memory is reclaimed and retried", () => {
    const server = new DummyServer({ memory: { pageSize: 64 }, capacity: 180 });
    const a = server.empty(64, S0);
    server.empty(64, S0).release();
    const c = server.empty(100, S0);
    expect(server.storage.bytesAllocated, "the free page made room for the dedicated one").toBe(64 + 112);
    a.release();
    c.release();
  });

  it("memoryLimit: allocation beyond it is a typed, transient OutOfMemoryError after reclaim; freeing recovers", () => {
    const MiB = 1024 * 1024;
    const server = new HostComputeServer({ capacity: 64 * MiB });
    const a = server.empty(40 * MiB, S0);
    const other = StreamId.of(1);
    server.empty(8 * MiB, other).release(); // a free page on another stream: reclaimed first
    let error: unknown;
    try {
      server.empty(40 * MiB, S0);
    } catch (e) {
      error = e;
    }
    expect(error, "typed").toBeInstanceOf(OutOfMemoryError);
    expect((error as OutOfMemoryError).transient, "transient: freeing makes it work").toBe(true);
    expect((error as Error).message, "names the limit and the fix").toMatch(/memoryLimit 64 MiB.*free memory/);
    expect(server.device.stats().reclaims, "every stream's free pages were reclaimed before it").toBe(1);
    expect(server.memoryUsage().streams, "the other stream gave its page back").toBe(1);
    a.release();
    const b = server.empty(40 * MiB, S0);
    expect(server.memoryUsage().bytesInUse).toBe(40 * MiB);
    b.release();
  });

  it("a buffer the JavaScript engine refuses is the same typed OutOfMemoryError, not a RangeError", () => {
    const server = new HostComputeServer({ memory: { maxAllocation: 2 ** 53 - 1 } });
    let error: unknown;
    try {
      server.empty(2 ** 52, S0);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OutOfMemoryError);
    expect((error as OutOfMemoryError).cause).toBeInstanceOf(RangeError);
    expect(server.device.stats().reclaims, "the refusal went through the reclaim-and-retry path").toBe(1);
  });

  it("1,000 task streams map onto 32 slots: at most 32 streams hold memory, and every page goes back when idle", () => {
    const server = new DummyServer();
    for (let i = 0; i < 1000; i++) {
      const stream = StreamId.of(1000 + i);
      const a = server.createF32([i], stream);
      expect(server.readF32(a.binding(), stream)).toEqual([i]);
      a.release();
    }
    const usage = server.memoryUsage();
    expect(usage.streams, "bounded by the slots (and idle slots gave their pages back)").toBeLessThanOrEqual(32);
    expect(usage.bytesReserved, "a small page per slot at most").toBeLessThanOrEqual(32 * 64 * 1024);
    server.releaseUnused();
    expect(server.memoryUsage()).toMatchObject({ bytesReserved: 0, pages: 0, streams: 0 });
  });

  it("compiled kernel keys are bounded: least recently used forgotten first, evictions counted", () => {
    const server = new HostComputeServer({ maxCompiledKernels: 8 });
    const out = server.empty(4, S0);
    for (let i = 0; i < 100; i++) {
      server.launch({ key: `k${i}`, run: () => undefined }, [1, 1, 1], [writes(out.binding())], S0, "execute");
    }
    expect(server.stats()).toMatchObject({ compiled: 8, compilations: 100, compiledEvictions: 92, compiledCapacity: 8 });
    out.release();
  });
});
