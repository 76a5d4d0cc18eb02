/**
 * Errors delivered exactly, through the public API (docs/design.md#errors, docs/concepts.md#multistream, docs/concepts.md#streampool-streammemory-and-taint, pitfalls
 * docs/pitfalls.md#p6 and docs/pitfalls.md#p16): a fault injected into one op of a graph reaches exactly the reads of what was
 * computed from it, as a typed error naming the root cause and the chain; everything else — other
 * tensors of the graph, a drain of the stream, other streams, later work — is unaffected. Bad input
 * and use after dispose throw at the call, naming the op, and change nothing.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Stream, WeftError } from "@weft/environment";
import { InjectedFaultError } from "@weft/server";
import { DisposedTensorError } from "@weft/fusion";
import { type Device, DTypeError, ShapeError, type Tensor, setDevice, sync, tensor, tidy } from "@weft/tensor";
import { createCpuDevice } from "../device/backends.js";
import { BACKENDS, clearCpuFaults, freshStream, injectCpuFault, inspectorOf, quiescentDevice, settle, snapshot } from "./harness.js";
import { valuesOf } from "./sources.js";

/** The root cause and chain of a delivered failure, whichever layer raised it. */
interface Delivered {
  readonly root: Error;
  readonly chain: readonly string[];
}

/** Reads `t` expecting a rejection that carries a root cause and a chain. */
async function readFailure(t: Tensor): Promise<Delivered> {
  const error: unknown = await t.data().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "the read of a tensor computed from the failed op must reject").toBeInstanceOf(WeftError);
  const { root, chain } = error as Partial<Delivered>;
  expect(root, "the delivered error names its root cause").toBeInstanceOf(Error);
  expect(Array.isArray(chain) && chain.length > 0, "the delivered error names the chain it travelled").toBe(true);
  // Fusion's TensorComputationError chains op descriptions; the server's TaintedReadError chains
  // the errors of the launches (each naming its kernel). Either way, one line per link.
  const links = (chain as readonly unknown[]).map((c) => (typeof c === "string" ? c : c instanceof Error ? c.message : String(c)));
  if (process.env.WEFT_PRINT_ERRORS) console.log((error as Error).constructor.name, (error as Error).message);
  return { root: root as Error, chain: links };
}

/**
 * Every matmul launch of the CPU backend, alone or fused with the elementwise ops on its output
 * (`MatmulFuser`): a one-shot fault on the fused launch would only make its group fall back and
 * recompute the block op by op, so the tests that need a failing matmul fail every matmul launch
 * (the fallback's own included) and clear the fault when they are done with it.
 */
const CPU_MATMUL = /^matmul\|/;

describe("a fault injected into one op on the cpu backend", () => {
  let device: Device;
  let baseline = 0;

  beforeAll(() => {
    device = createCpuDevice();
  });
  beforeEach(async () => {
    device = await quiescentDevice(device, { name: "cpu", create: () => Promise.resolve(createCpuDevice()) });
    setDevice(device);
    clearCpuFaults(device);
    baseline = snapshot(device).bytesInUse;
  });
  afterAll(() => {
    clearCpuFaults(device);
  });

  it("reaches exactly the reads of what was computed from it, and nothing else", async () => {
    const s = freshStream();
    const other = freshStream();
    // Another stream's work is pending when the fault happens.
    const o = Stream.run(other, () => tidy(() => tensor([1, 2]).add(1)));
    injectCpuFault(device, { kernelMatching: CPU_MATMUL });
    const g = Stream.run(s, () => {
      const x = tensor([[1, 2], [3, 4]]);
      const w = tensor([[1, 0], [0, 1]]);
      const m = x.matmul(w); // every matmul launch fails
      const y = tidy(() => m.add(1).relu()); // computed from it
      const r = tidy(() => y.sum()); // computed from it, two links further
      const z = tidy(() => x.mul(3)); // not computed from it (its own block, after the reduce)
      return { x, w, m, y, z, r };
    });

    const atM = await Stream.run(s, () => readFailure(g.m));
    expect(atM.root, "the root cause is the injected fault itself").toBeInstanceOf(InjectedFaultError);
    expect(atM.chain[0], "the chain starts at the op that failed").toMatch(/matmul/);
    const atY = await Stream.run(s, () => readFailure(g.y));
    expect(atY.root, "a dependent read names the same root cause").toBeInstanceOf(InjectedFaultError);
    expect(atY.chain[0], "…and the op that failed first in its chain").toMatch(/matmul/);
    expect(atY.chain.length, "the chain of a dependent tensor is longer than the failed op alone").toBeGreaterThan(1);
    const atR = await Stream.run(s, () => readFailure(g.r));
    expect(atR.chain.join(" → "), "a reduction of a tainted tensor names the reduce in its chain").toMatch(/reduce|sum/);

    expect(await Stream.run(s, () => valuesOf(g.z)), "a tensor of the same graph not computed from the failure reads").toEqual([3, 6, 9, 12]);
    expect(await Stream.run(s, () => valuesOf(g.x)), "the failed op's input is intact").toEqual([1, 2, 3, 4]);
    await expect(Stream.run(s, () => sync()), "a drain of the failed stream reports nothing").resolves.toBeUndefined();
    expect(await Stream.run(other, () => valuesOf(o)), "another stream's pending work is unaffected").toEqual([2, 3]);

    // Recomputing from the same inputs and from new data works once the fault is gone.
    clearCpuFaults(device);
    const again = Stream.run(s, () => g.x.matmul(g.w));
    expect(await Stream.run(s, () => valuesOf(again)), "the same op recomputed after the fault").toEqual([1, 2, 3, 4]);
    const fresh = Stream.run(s, () => tidy(() => tensor([[2, 0], [0, 2]]).matmul(g.w).add(1)));
    expect(await Stream.run(s, () => valuesOf(fresh)), "new data through the same graph shape").toEqual([3, 1, 1, 3]);

    Stream.run(s, () => {
      for (const t of [...Object.values(g), again, fresh]) t.dispose();
    });
    Stream.run(other, () => o.dispose());
    expect(await settle(device, baseline), "a failed graph leaks nothing once disposed (its errors go with its tensors)").toEqual([]);
  });

  // The CPU fusers put `m.add(1)` and the independent `x.mul(3)` in one launch (with the matmul
  // itself: `MatmulFuser`). That launch fails; its group falls back to the block's ops, and of
  // those only the matmul (which fails again) and the launch reading `m` (skipped) fail.
  it("an independent output fused into the same launch as a tainted input still computes", async () => {
    const s = freshStream();
    injectCpuFault(device, { kernelMatching: CPU_MATMUL });
    const g = Stream.run(s, () => {
      const x = tensor([[1, 2], [3, 4]]);
      const w = tensor([[1, 0], [0, 1]]);
      const m = x.matmul(w); // every matmul launch fails
      const y = tidy(() => m.add(1)); // computed from it…
      const z = tidy(() => x.mul(3)); // …and not, in the same elementwise segment
      return { x, w, m, y, z };
    });
    try {
      await Stream.run(s, () => readFailure(g.y));
      expect(await Stream.run(s, () => valuesOf(g.z)), "z is not computed from the failed matmul").toEqual([3, 6, 9, 12]);
    } finally {
      Stream.run(s, () => {
        for (const t of Object.values(g)) t.dispose();
      });
      await device.syncAll();
    }
  });

  it("shared to another stream after it failed, delivers the same root cause there and leaves the owner's other work alone", async () => {
    const owner = freshStream();
    const peer = freshStream();
    injectCpuFault(device, { launch: 1 });
    const g = Stream.run(owner, () => {
      const x = tensor([1, 2, 3]);
      const bad = tidy(() => x.matmul(tensor([[1], [1], [1]]))); // the first launch
      const good = tidy(() => x.neg());
      return { x, bad, good };
    });
    const borrowed = Stream.run(peer, () => tidy(() => g.bad.add(1))); // shares a tensor that will fail
    const failure = await Stream.run(peer, () => readFailure(borrowed));
    expect(failure.root, "the peer's read names the owner's root cause").toBeInstanceOf(InjectedFaultError);
    expect(failure.chain[0], "…and the owner's failed op").toMatch(/matmul/);
    expect(await Stream.run(owner, () => valuesOf(g.good)), "the owner's independent tensor reads").toEqual([-1, -2, -3]);
    await expect(Stream.run(peer, () => sync()), "a drain of the peer reports nothing").resolves.toBeUndefined();
    Stream.run(peer, () => borrowed.dispose());
    Stream.run(owner, () => {
      for (const t of Object.values(g)) t.dispose();
    });
    expect(await settle(device, baseline), "nothing leaks").toEqual([]);
  });
});

describe.each(BACKENDS)("bad input on $name", (backend) => {
  let device: Device;

  beforeAll(async () => {
    device = await backend.create();
  });
  beforeEach(async () => {
    device = await quiescentDevice(device, backend);
    setDevice(device);
  });

  /** Runs `call`, expecting it to throw synchronously, and checks that no engine state moved. */
  function throwsAndChangesNothing(call: () => unknown): Error {
    const before = snapshot(device);
    const queues = [...inspectorOf(device).queueLengths()];
    let thrown: unknown;
    try {
      call();
    } catch (e) {
      thrown = e;
    }
    expect(thrown, "bad input throws at the call, synchronously").toBeInstanceOf(WeftError);
    expect(snapshot(device), "a rejected call leaves memory() unchanged").toEqual(before);
    expect([...inspectorOf(device).queueLengths()], "a rejected call registers nothing").toEqual(queues);
    return thrown as Error;
  }

  it("a shape mismatch names the op, both shapes and the fix, and changes nothing", async () => {
    const a = tensor([[1, 2, 3], [4, 5, 6]]);
    const b = tensor([1, 2, 3, 4]);
    const pending = a.mul(2); // work in flight must stay as it is
    const e = throwsAndChangesNothing(() => a.add(b));
    expect(e).toBeInstanceOf(ShapeError);
    expect(e.message, "the message names the op").toMatch(/^add/);
    expect(e.message, "the message names both shapes").toMatch(/\[2, ?3\][^]*\[4\]/);
    expect(e.message, "the message says what to do").toMatch(/reshape|broadcast|expand/i);
    const m = throwsAndChangesNothing(() => a.matmul(a));
    expect(m.message, "matmul names itself and the shapes").toMatch(/^matmul[^]*\[2, ?3\]/);
    expect(await valuesOf(pending), "pending work computes after the rejected calls").toEqual([2, 4, 6, 8, 10, 12]);
    for (const t of [a, b, pending]) t.dispose();
    expect(await settle(device, 0).then((p) => p.filter((l) => !l.startsWith("bytesInUse"))), "nothing leaks").toEqual([]);
  });

  it("a dtype mismatch names the op and the dtypes, and changes nothing", async () => {
    const flags = tensor([true, false]);
    const e = throwsAndChangesNothing(() => flags.add(flags));
    expect(e).toBeInstanceOf(DTypeError);
    expect(e.message, "the message names the op and the dtype").toMatch(/^add[^]*bool/);
    flags.dispose();
    await device.syncAll();
  });

  it("use after dispose names the op at the call and changes nothing", async () => {
    const a = tensor([1, 2, 3]);
    a.dispose();
    const e = throwsAndChangesNothing(() => a.exp());
    expect(e).toBeInstanceOf(DisposedTensorError);
    expect((e as DisposedTensorError).op, "the error names the op that used the tensor").toBe("exp");
    const c = throwsAndChangesNothing(() => a.clone());
    expect((c as DisposedTensorError).op).toBe("clone");
    await expect(a.data(), "a read after dispose rejects naming the read").rejects.toMatchObject({ op: "data" });
    const other = tensor([1, 2, 3]);
    const d = throwsAndChangesNothing(() => other.add(a));
    expect((d as DisposedTensorError).op, "a disposed operand names the op it was passed to").toBe("add");
    other.dispose();
    await device.syncAll();
    expect(snapshot(device).liveTensors, "nothing leaks").toBe(0);
  });
});
