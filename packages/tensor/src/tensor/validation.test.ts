/**
 * Validation and recording properties of the user API, against a real fusion device that keeps
 * every registered operation pending and executes nothing (see `Recorder`). Values
 * are checked in `weft`'s conformance run; here we check that bad calls throw typed errors at the
 * call and register nothing, and that ops emit the IR the fusers expect.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { StreamId } from "@weft/environment";
import { FusionDevice, type DType, type OperationIr } from "@weft/fusion";
import { NeverReadyFuser, TestRuntime, type TestHandle } from "@weft/fusion/testing";
import { Device, setDevice } from "../device/device.js";
import { AxisError, DTypeError, DeviceMismatchError, NoDeviceError, ShapeError, SyncReadError } from "../errors/tensor-errors.js";
import { arange, ones, rand, tensor, zeros } from "../ops/creation.js";
import { concat, gather, pad, slice, stack } from "../ops/layout.js";
import { cast, clamp, where } from "../ops/elementwise.js";
import { cumsum } from "../ops/scan.js";
import { scatter } from "../ops/scatter.js";
import { sort } from "../ops/sort.js";
import { broadcastPair, broadcastShapes } from "../shape/shape.js";
import { DTYPES, isDType, promoteTypes } from "../dtype/dtype.js";
import { setOpObserver } from "./observer.js";
import type { Tensor } from "./tensor.js";

/**
 * A real `FusionDevice` whose only fuser never becomes ready, so every operation stays pending in
 * the current stream's queue (nothing executes); what the API recorded is read back from there.
 * Its runtime reports asynchronous reads only, like WebGPU.
 */
class Recorder {
  readonly fusion = new FusionDevice<TestHandle>(
    new TestRuntime({ fusers: () => [new NeverReadyFuser()], capabilities: { dtypes: ["f32", "i32", "u32", "bool"], reads: "async" } }),
    { queueLimit: 1_000_000 },
  );
  #mark = 0;

  /** Every operation recorded on the current stream so far (pending, since nothing runs). */
  #all(): OperationIr[] {
    return this.fusion.streams.pending(StreamId.current());
  }

  /** The operations other than `drop` recorded since the last {@link Recorder.reset}. */
  ops(): OperationIr[] {
    return this.#all().slice(this.#mark).filter((o) => o.kind !== "drop");
  }

  /** Recorded operations of any kind (a rejected call must leave this unchanged). */
  count(): number {
    return this.#all().length;
  }

  /** `drop`s registered so far: pending ones, and those run at once on an empty segment. */
  drops(): number {
    const pending = this.#all().filter((o) => o.kind === "drop").length;
    return pending + this.fusion.inspector.executedBlocks.filter((b) => b.name === "drop").length;
  }

  /** Forgets what was recorded so far, for {@link Recorder.ops} and {@link Recorder.kinds}. */
  reset(): void {
    this.#mark = this.#all().length;
  }

  /** `kind:op` of each operation since the last reset. */
  kinds(): string[] {
    return this.ops().map((o) => ("op" in o ? `${o.kind}:${o.op}` : o.kind));
  }
}

let rec: Recorder;
let device: Device;
beforeEach(() => {
  rec = new Recorder();
  device = new Device(rec.fusion, { backend: "recording" });
  setDevice(device);
});

/** Asserts `fn` throws `type` with a message containing every fragment, and registered nothing. */
function rejects(fn: () => unknown, type: abstract new (...args: never[]) => Error, ...fragments: string[]): void {
  const before = rec.count();
  const drops = rec.drops();
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught, "the call must throw at the call").toBeInstanceOf(type);
  for (const f of fragments) expect((caught as Error).message, `the message names ${f}`).toContain(f);
  expect(rec.count(), "a rejected call must register nothing (validate before recording)").toBe(before);
  expect(rec.drops(), "a rejected call must dispose nothing").toBe(drops);
}

describe("validation at the call", () => {
  it("add of unbroadcastable shapes names the op, the shapes, the dimension and the fix", () => {
    const a = zeros([2, 3]);
    const b = zeros([4]);
    rejects(() => a.add(b), ShapeError, "add:", "[2,3] and [4]", "dimension 1: 3 vs 4", "reshape or expand");
  });

  it("a ragged nested array is rejected before anything is uploaded", () => {
    rejects(() => tensor([[1, 2], [3]]), ShapeError, "tensor:", "ragged");
  });

  it("bad axes, repeated axes and squeezing a non-1 axis are rejected", () => {
    const x = zeros([2, 3]);
    rejects(() => x.sum(2), AxisError, "sum:", "axis 2", "[2,3]");
    rejects(() => x.sum([1, -1]), AxisError, "repeated");
    rejects(() => x.squeeze(0), ShapeError, "squeeze:", "size 2");
    rejects(() => x.permute([0, 0]), AxisError, "permute:");
  });

  it("dtype misuse names the fix", () => {
    const f = zeros([3]);
    const b = zeros([3], { dtype: "bool" });
    rejects(() => f.and(f), DTypeError, "and:", "bool");
    rejects(() => b.add(b), DTypeError, "add:", "cast");
    rejects(() => f.where(1, 0), DTypeError, "where:", "bool");
    rejects(() => tensor([1.5], { dtype: "i32" }), DTypeError, "tensor:", "1.5");
    rejects(() => zeros([2], { dtype: "f16" }), Error, "f16");
  });

  it("matmul checks inner and batch dimensions", () => {
    const [a, b, c, d] = [zeros([2, 3]), zeros([4, 5]), zeros([2, 2, 3]), zeros([3, 3, 4])];
    rejects(() => a.matmul(b), ShapeError, "matmul:", "inner dimensions 3 vs 4");
    rejects(() => c.matmul(d), ShapeError, "batch");
  });

  it("reshape, expand, concat and stack check their shapes", () => {
    const x = zeros([2, 3]);
    rejects(() => x.reshape([4, 2]), ShapeError, "reshape:", "6 elements");
    rejects(() => x.reshape([-1, -1]), ShapeError, "more than one -1");
    rejects(() => x.expand([4, 3]), ShapeError, "expand:", "dimension 0: 2 vs 4");
    const [wide, tall] = [zeros([2, 4]), zeros([3, 2])];
    rejects(() => concat([x, wide], 0), ShapeError, "concat:");
    rejects(() => stack([x, tall]), ShapeError, "stack:");
  });

  it("use after dispose throws naming the op and registers nothing", () => {
    const x = zeros([2]);
    const y = zeros([2]);
    x.dispose();
    rejects(() => y.add(x), Error, "add:");
    rejects(() => x.exp(), Error, "exp:");
  });

  it("operands from two devices are refused", () => {
    const other = new Device(new Recorder().fusion, { backend: "other" });
    const a = zeros([2]);
    const b = zeros([2], { device: other });
    rejects(() => a.add(b), DeviceMismatchError, "add:", "recording", "other");
  });

  it("dataSync on an asynchronous device says to await data()", () => {
    expect(() => zeros([1]).dataSync()).toThrow(SyncReadError);
  });

  it("without a device, creation says to call init", () => {
    setDevice(undefined);
    expect(() => zeros([1])).toThrow(NoDeviceError);
  });
});

describe("what ops record", () => {
  it("softmax is composed of reduce and elementwise ops the fusers can fuse, and frees its intermediates", () => {
    const x = zeros([4, 8]);
    rec.reset();
    const drops = rec.drops();
    const y = x.softmax();
    expect(rec.kinds(), "max, subtract, exp, sum, divide").toEqual(["reduce:max", "binary:sub", "unary:exp", "reduce:sum", "binary:div"]);
    expect(rec.drops() - drops, "the four intermediates are disposed so their last uses consume them").toBe(4);
    expect(y.shape).toEqual([4, 8]);
  });

  it("mixed dtypes cast to the promoted dtype first (i32 + f32 → f32)", () => {
    const i = zeros([3], { dtype: "i32" });
    const f = zeros([3]);
    rec.reset();
    const r = i.add(f);
    expect(rec.kinds()).toEqual(["cast", "binary:add"]);
    expect(r.dtype).toBe("f32");
  });

  it("weak scalars keep the tensor's dtype unless they are not integers", () => {
    expect(zeros([2], { dtype: "i32" }).mul(2).dtype, "an integer scalar is weak").toBe("i32");
    expect(zeros([2], { dtype: "i32" }).mul(2.5).dtype, "a fractional scalar promotes to f32").toBe("f32");
    expect(zeros([2], { dtype: "i32" }).div(2).dtype, "div computes in f32").toBe("f32");
    expect(zeros([2], { dtype: "i32" }).exp().dtype, "float unary ops compute in f32").toBe("f32");
    expect(zeros([2]).lt(1).dtype, "compares produce bool").toBe("bool");
  });

  it("matmul of equal-rank operands borrows the operands themselves (no reshape, no clone); other ranks reshape, then drop the views", () => {
    const a = zeros([2, 3]);
    const b = zeros([3, 4]);
    rec.reset();
    const drops = rec.drops();
    const seen: Tensor[] = [];
    const previous = setOpObserver({ input: (t) => void seen.push(t), recorded: () => undefined });
    let p: Tensor;
    try {
      p = a.matmul(b);
    } finally {
      setOpObserver(previous);
    }
    expect(seen[0] === a && seen[1] === b, "the op borrowed a and b, not temporary references to them").toBe(true);
    expect(rec.kinds(), "one matmul").toEqual(["matmul"]);
    const op = rec.ops()[0] as Extract<OperationIr, { kind: "matmul" }>;
    expect([op.lhs.shape, op.rhs.shape, op.out.shape]).toEqual([[2, 3], [3, 4], [2, 4]]);
    expect(rec.drops(), "no temporary to drop").toBe(drops);
    expect([a.disposed, b.disposed, p.shape], "the operands stay the caller's").toEqual([false, false, [2, 4]]);
    const same = a.matmul(zeros([3, 3]).add(1)).matmul(zeros([3, 2]));
    expect(same.shape, "chained and reused operands still work").toEqual([2, 2]);
    const batched = zeros([5, 2, 3]);
    rec.reset();
    const before = rec.drops();
    expect(batched.matmul(b).shape, "a rank difference broadcasts").toEqual([5, 2, 4]);
    expect(rec.kinds(), "the lower-rank operand is reshaped first").toEqual(["reshape", "matmul"]);
    expect(rec.drops() - before, "and its view dropped after the product").toBe(1);
  });

  it("matmul of 1-D operands follows NumPy shapes", () => {
    expect(zeros([3]).matmul(zeros([3, 4])).shape).toEqual([4]);
    expect(zeros([2, 5, 3]).matmul(zeros([3])).shape).toEqual([2, 5]);
    expect(zeros([3]).matmul(zeros([3])).shape).toEqual([]);
    expect(zeros([2, 1, 3, 4]).matmul(zeros([5, 4, 6])).shape).toEqual([2, 5, 3, 6]);
  });

  it("slice resolves negative indices and steps, and an integer index removes the dim", () => {
    const x = zeros([10, 9]);
    rec.reset();
    const y = x.slice([[1, -1, 2], -2]);
    const sl = rec.ops().find((o) => o.kind === "slice");
    expect(sl?.kind === "slice" ? sl.ranges : undefined).toEqual([{ start: 1, end: 9, step: 2 }, { start: 7, end: 8, step: 1 }]);
    expect(y.shape).toEqual([4]);
  });

  it("rand without a seed takes successive seeds; with one, the given seed", () => {
    rec.reset();
    rand([2]);
    rand([2]);
    rand([2], { seed: 42 });
    const seeds = rec.ops().map((o) => (o.kind === "random" ? o.seed : -1));
    expect(seeds[1], "the global counter advances").toBe((seeds[0] ?? 0) + 1);
    expect(seeds[2]).toBe(42);
  });

  it("every op of every kind is recorded as class instances, its tensors too, never as object literals (docs/performance.md#allocation-sites)", () => {
    const x = tensor([[3, 1], [2, 4]]);
    const i = tensor([[1, 0], [0, 1]], { dtype: "i32" });
    const made = [
      zeros([2, 2]), arange(0, 4), rand([2]), x.exp(), x.add(x), x.add(1), clamp(x, 0, 2), cast(x, "i32"),
      where(x.gt(2), x, x.neg()), x.sum(1), x.matmul(x), x.reshape([4]), x.permute([1, 0]), x.expand([3, 2, 2]),
      slice(x, [[0, 1]]), concat([x, x], 0), gather(x, i, 1), pad(x, [[1, 0], [0, 1]]), sort(x, 1), cumsum(x, 0),
      scatter(x, i, x, 1),
    ];
    for (const t of made) t.dispose();
    const ops = rec.fusion.streams.pending(StreamId.current());
    const kinds = new Set(ops.map((o) => o.kind));
    for (const k of ["init", "full", "arange", "random", "unary", "binary", "binary-scalar", "clamp", "cast", "where", "reduce", "matmul", "reshape", "permute", "expand", "slice", "concat", "gather", "pad", "sort", "scan", "scatter", "drop"]) {
      expect(kinds.has(k as OperationIr["kind"]), `the program records a ${k}`).toBe(true);
    }
    const literal = (v: unknown): boolean => Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null;
    for (const op of ops) {
      expect(literal(op), `${op.kind} is an object literal`).toBe(false);
      for (const [field, value] of Object.entries(op)) {
        const tensors = Array.isArray(value) ? value : [value];
        for (const t of tensors) if (typeof t === "object" && t !== null && "status" in t) expect(literal(t), `${op.kind}.${field} is a TensorIr literal`).toBe(false);
      }
      if (op.kind === "slice") for (const r of op.ranges) expect(literal(r), "a slice range is an object literal").toBe(false);
    }
  });

  it("arange computes its length like NumPy", () => {
    expect(arange(10).shape).toEqual([10]);
    expect(arange(1, 0, -0.25).shape).toEqual([4]);
    expect(ones([0, 3]).sum(1).shape).toEqual([0]);
  });
});

describe("shape and dtype rules", () => {
  it("broadcastShapes aligns from the right", () => {
    expect(broadcastShapes("t", [3, 1, 5], [4, 1])).toEqual([3, 4, 5]);
    expect(broadcastShapes("t", [], [2])).toEqual([2]);
  });

  it("broadcastPair (the binary ops' path) answers and fails exactly as broadcastShapes", () => {
    const sizes = [0, 1, 2, 3];
    let seed = 7;
    const next = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const shape = (): number[] => Array.from({ length: next(4) }, () => sizes[next(sizes.length)]!);
    for (let i = 0; i < 2000; i++) {
      const a = shape();
      const b = shape();
      let expected: number[] | Error;
      try {
        expected = broadcastShapes("add", a, b);
      } catch (error) {
        expected = error as Error;
      }
      if (expected instanceof Error) {
        expect(() => broadcastPair("add", a, b), `${JSON.stringify(a)} with ${JSON.stringify(b)}`).toThrow(expected.message);
      } else expect(broadcastPair("add", a, b), `${JSON.stringify(a)} with ${JSON.stringify(b)}`).toEqual(expected);
    }
  });

  it("the promotion table is a lattice bool < u32 < i32 < f32", () => {
    const order: DType[] = ["bool", "u32", "i32", "f32"];
    for (const [i, a] of order.entries()) {
      for (const [j, b] of order.entries()) {
        expect(promoteTypes(a, b), `${a} with ${b}`).toBe(order[Math.max(i, j)]);
      }
    }
  });

  it("isDType names exactly DTYPES (its switch spells them again: a new dtype must be added to both)", () => {
    for (const d of DTYPES) expect(isDType(d), d).toBe(true);
    for (const v of ["F32", "f64", "int32", "", "toString", "__proto__", 0, undefined, null, ["f32"], { f32: true }]) expect(isDType(v), String(v)).toBe(false);
  });
});
