/**
 * `describeComputeServer`: ONE suite of the {@link ComputeServer} contract that every server runs —
 * the host server, the `DummyServer`, the WebGPU server — so that for the same call (or the same
 * misuse) every server gives the same result (or the same error class).
 *
 * @module
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamId } from "@weft/environment";
import type { ComputeServer, CubeCount, KernelBinding, KernelDefinition, MemoryHandle } from "../compute-server.js";
import { InvalidBindingError, LaunchError, ServerError } from "../errors/server-error.js";
import { TaintedReadError } from "../errors/tainted-read-error.js";
import type { HostKernel } from "../host/host-kernel.js";

/** The kernels the contract launches, written in the server's own kernel form. */
export interface ContractKernels<K extends KernelDefinition> {
  /**
   * Bindings `[input (read), output (write)]`: `output[i] = input[i] + 1` over `elements` u32
   * elements; returns the kernel and the work-group count covering them.
   */
  increment(elements: number): { readonly kernel: K; readonly count: CubeCount };
  /** A kernel that does not compile (the device rejects it); launched with `[output (write)]`. */
  readonly invalid: K;
}

/** A server under test, the kernels the contract launches on it, and how to let it go. */
export interface ServerUnderTest<K extends KernelDefinition> {
  readonly server: ComputeServer<K>;
  readonly kernels: ContractKernels<K>;
  /** Releases what `create` made (a device); called once after the suite. */
  dispose(): void | Promise<void>;
}

const u32 = (values: readonly number[]): Uint8Array => new Uint8Array(Uint32Array.from(values).buffer);
const values = (bytes: Uint8Array | undefined): number[] => {
  if (bytes === undefined) throw new Error("a read returns one array per binding");
  return [...new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)];
};

/** What a promise rejected with (or `undefined`). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

/** What a call threw (or `undefined`). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

/**
 * Registers a vitest suite checking `ComputeServer`'s contract on the server `create` makes: data
 * round trips, ordering across streams, the error contract (a failed launch taints exactly its
 * writes, a launch reading tainted bytes is skipped and taints its own, reads deliver the root
 * cause, a write releases the claim), discarded launches, memory given back, and misuse — each
 * misuse throwing the same error class on every server, at the call (a read, being asynchronous,
 * rejects with it), changing nothing.
 *
 * **Runs under vitest**: call it at the top level of a `*.test.ts` file.
 */
export function describeComputeServer<K extends KernelDefinition>(name: string, create: () => ServerUnderTest<K> | Promise<ServerUnderTest<K>>): void {
  describe(`ComputeServer contract: ${name}`, () => {
    let sut: ServerUnderTest<K>;
    let server: ComputeServer<K>;
    const s = StreamId.of(0);
    const other = StreamId.of(1);

    beforeAll(async () => {
      sut = await create();
      server = sut.server;
    }, 120_000);
    afterAll(async () => {
      await sut?.dispose();
    });

    /** Launches `increment` over `input` into `output` on `stream`. */
    const increment = (input: MemoryHandle, output: MemoryHandle, elements: number, stream = s, mode: "execute" | "discard" = "execute"): void => {
      const { kernel, count } = sut.kernels.increment(elements);
      const bindings: KernelBinding[] = [
        { binding: input.binding(), access: "read" },
        { binding: output.binding(), access: "write" },
      ];
      server.launch(kernel, count, bindings, stream, mode);
    };

    it("uploads, launches and reads back on one stream", async () => {
      const a = server.create(u32([1, 2, 3, 4]), s);
      const b = server.empty(16, s);
      increment(a, b, 4);
      const [out] = await server.read([b.binding()], s);
      expect(values(out), "b = a + 1").toEqual([2, 3, 4, 5]);
      a.release();
      b.release();
    });

    it("orders work across streams: a read on one stream sees what other streams produced before it", async () => {
      const a = server.create(u32([10, 20]), s);
      const b = server.empty(8, other);
      increment(a, b, 2, other);
      const c = server.empty(8, s);
      increment(b, c, 2, s);
      const [out] = await server.read([c.binding()], StreamId.of(2));
      expect(values(out), "c = (a + 1) + 1, the producer on another stream ran first").toEqual([12, 22]);
      for (const h of [a, b, c]) h.release();
    });

    it("a launch that fails taints exactly its writes; the read of them delivers the root cause, others succeed", async () => {
      const clean = server.create(u32([7]), s);
      const out = server.empty(4, s);
      server.launch(sut.kernels.invalid, [1, 1, 1], [{ binding: out.binding(), access: "write" }], s, "execute");
      const failed: unknown = await server.read([out.binding()], s).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failed, "the read of the failed launch's output rejects").toBeInstanceOf(TaintedReadError);
      expect((failed as TaintedReadError).root, "naming the device's rejection as the root cause").toBeInstanceOf(ServerError);
      expect(values((await server.read([clean.binding()], s))[0]), "a read that shares nothing with the failure succeeds").toEqual([7]);
      expect(server.failureOf?.([out.binding()]), "failureOf answers what the read rejected with").toBeInstanceOf(TaintedReadError);
      expect(server.failureOf?.([clean.binding()]), "and nothing for clean bytes").toBeUndefined();
      // A launch reading the tainted bytes is skipped, and taints what it writes with a chained failure.
      const next = server.empty(4, s);
      increment(out, next, 1);
      const chained: unknown = await server.read([next.binding()], s).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(chained, "the skipped launch's output rejects too").toBeInstanceOf(TaintedReadError);
      expect((chained as TaintedReadError).root, "with the same root cause").toBe((failed as TaintedReadError).root);
      // Writing the bytes again releases the claim.
      server.write(out.binding(), u32([41]), s);
      expect(values((await server.read([out.binding()], s))[0]), "a write gives the bytes a writer again").toEqual([41]);
      for (const h of [clean, out, next]) h.release();
    });

    it("a discarded launch compiles and leaves memory untouched", async () => {
      const a = server.create(u32([1]), s);
      const b = server.create(u32([100]), s);
      increment(a, b, 1, s, "discard");
      expect(values((await server.read([b.binding()], s))[0]), "the discarded launch wrote nothing").toEqual([100]);
      a.release();
      b.release();
    });

    it("gives memory back: released allocations leave the live count where it was", async () => {
      await server.sync(s);
      const before = server.memoryUsage().liveAllocations;
      const handles = [server.create(u32([1, 2]), s), server.empty(64, s), server.empty(8, other)];
      expect(server.memoryUsage().liveAllocations, "three live allocations more").toBe(before + 3);
      for (const h of handles) h.release();
      await server.sync(s);
      await server.sync(other);
      expect(server.memoryUsage().liveAllocations, "all given back").toBe(before);
    });

    describe("misuse throws at the call, the same error class on every server, and changes nothing", () => {
      it("a binding of memory this server never allocated: InvalidBindingError", async () => {
        const a = server.create(u32([5]), s);
        const foreign = { ...a.binding(), stream: StreamId.of(777_777) };
        const out = server.empty(4, s);
        const { kernel, count } = sut.kernels.increment(1);
        const launch = thrown(() =>
          server.launch(kernel, count, [{ binding: foreign, access: "read" }, { binding: out.binding(), access: "write" }], s, "execute"),
        );
        expect(launch, "launch").toBeInstanceOf(InvalidBindingError);
        expect(thrown(() => server.write(foreign, u32([1]), s)), "write").toBeInstanceOf(InvalidBindingError);
        expect(await rejection(server.read([foreign], s)), "read (rejects: it is asynchronous)").toBeInstanceOf(InvalidBindingError);
        if (server.failureOf !== undefined) expect(thrown(() => server.failureOf?.([foreign])), "failureOf").toBeInstanceOf(InvalidBindingError);
        expect(values((await server.read([a.binding()], s))[0]), "state intact: the real binding still reads").toEqual([5]);
        a.release();
        out.release();
      });

      it("a binding of memory already released: InvalidBindingError", async () => {
        const a = server.create(u32([5]), s);
        const stale = a.binding();
        a.release();
        const out = server.empty(4, s);
        const { kernel, count } = sut.kernels.increment(1);
        const launch = thrown(() =>
          server.launch(kernel, count, [{ binding: stale, access: "read" }, { binding: out.binding(), access: "write" }], s, "execute"),
        );
        expect(launch, "launch").toBeInstanceOf(InvalidBindingError);
        const discarded = thrown(() =>
          server.launch(kernel, count, [{ binding: stale, access: "read" }, { binding: out.binding(), access: "write" }], s, "discard"),
        );
        expect(discarded, "a discarded launch checks its bindings too").toBeInstanceOf(InvalidBindingError);
        expect(thrown(() => server.write(stale, u32([1]), s)), "write").toBeInstanceOf(InvalidBindingError);
        expect(await rejection(server.read([stale], s)), "read (rejects: it is asynchronous)").toBeInstanceOf(InvalidBindingError);
        out.release();
      });

      it("a write whose data does not match the binding's size: InvalidBindingError", async () => {
        const a = server.create(u32([1, 2]), s);
        expect(thrown(() => server.write(a.binding(), u32([9]), s)), "4 bytes into an 8-byte binding").toBeInstanceOf(InvalidBindingError);
        expect(values((await server.read([a.binding()], s))[0]), "nothing was written").toEqual([1, 2]);
        a.release();
      });

      it("a work-group count that is not three non-negative integers: LaunchError", async () => {
        const a = server.create(u32([1]), s);
        const b = server.create(u32([3]), s);
        const { kernel } = sut.kernels.increment(1);
        const bindings: KernelBinding[] = [
          { binding: a.binding(), access: "read" },
          { binding: b.binding(), access: "write" },
        ];
        expect(thrown(() => server.launch(kernel, [-1, 1, 1], bindings, s, "execute")), "a negative count").toBeInstanceOf(LaunchError);
        expect(thrown(() => server.launch(kernel, [1.5, 1, 1], bindings, s, "execute")), "a fractional count").toBeInstanceOf(LaunchError);
        expect(values((await server.read([b.binding()], s))[0]), "nothing ran").toEqual([3]);
        a.release();
        b.release();
      });
    });
  });
}

/** The contract's kernels for host servers (`HostComputeServer`, `DummyServer`). */
export const hostContractKernels: ContractKernels<HostKernel> = {
  increment(elements: number) {
    return {
      kernel: {
        key: "contract/increment-u32",
        run(buffers) {
          const [input, output] = buffers;
          if (input === undefined || output === undefined) throw new RangeError("contract/increment-u32 binds [input, output]");
          const a = new DataView(input.buffer, input.byteOffset, input.byteLength);
          const b = new DataView(output.buffer, output.byteOffset, output.byteLength);
          for (let i = 0; i + 4 <= b.byteLength && i + 4 <= a.byteLength; i += 4) b.setUint32(i, a.getUint32(i, true) + 1, true);
        },
      },
      count: [Math.max(1, elements), 1, 1],
    };
  },
  invalid: {
    key: "contract/invalid",
    validate() {
      throw new Error("contract/invalid never compiles");
    },
    run() {
      throw new Error("internal: an invalid kernel must never run");
    },
  },
};
