import { StreamId } from "@weft/environment";
import { type OperationIr, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
import { OperationConverter } from "@weft/fusion/internal";
import { beforeAll, describe, expect, it } from "vitest";
import { fusionContext, type FusionTestContext } from "../testing/gpu-test-support.js";
import { createWebGpuRuntime } from "./create-runtime.js";
import { MAX_LAUNCH_ENTRIES } from "./elementwise-launch-cache.js";
import type { WebGpuOptimization } from "./optimization.js";
import type { WebGpuRuntime } from "./webgpu-runtime.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;
let nextId = 1;
const stream = StreamId.DEFAULT;

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
});

type Ctx = FusionTestContext;
const newContext = (): Ctx => fusionContext(runtime, stream);
const t = (shape: readonly number[], status: TensorStatus = "ReadOnly"): TensorIr => ({ id: nextId++ as TensorId, shape, dtype: "f32", status });
const as = (x: TensorIr, status: TensorStatus): TensorIr => ({ ...x, status });

function upload(ctx: Ctx, values: number[], shape: number[]): TensorIr {
  const x = t(shape);
  ctx.handles.registerHandle(x.id, runtime.upload({ data: Float32Array.from(values), shape, dtype: "f32" }, stream));
  return x;
}

async function read(ctx: Ctx, x: TensorIr): Promise<number[]> {
  return [...(await runtime.read(ctx.handles.getHandle(x), x, stream))];
}

/** `exp(x * s) + y` as three ops with fresh ids; `y` defaults to `x`; `dies` makes it `y`'s last use. */
function chain(x: TensorIr, s: number, dies: boolean, y: TensorIr = x): { ops: OperationIr[]; out: TensorIr } {
  const a = t(x.shape);
  const b = t(x.shape);
  const out = t(x.shape);
  const ops: OperationIr[] = [
    { kind: "binary-scalar", op: "mul", lhs: as(x, "ReadOnly"), scalar: s, scalarFirst: false, out: a },
    { kind: "unary", op: "exp", input: as(a, "ReadWrite"), out: b },
    { kind: "binary", op: "add", lhs: as(b, "ReadWrite"), rhs: as(y, dies ? "ReadWrite" : "ReadOnly"), out },
  ];
  return { ops, out };
}

/** The elementwise optimization the runtime's fuser builds for `ops`. */
function optimize(ops: OperationIr[]): WebGpuOptimization {
  const [fuser] = runtime.fusers();
  if (fuser === undefined) throw new Error("the runtime offers an elementwise fuser");
  for (const op of ops) fuser.fuse(op);
  const opt = fuser.finish();
  expect(opt.len, "the whole chain fuses into one block").toBe(ops.length);
  return opt;
}

const expected = (xs: number[], s: number, ys = xs): number[] => xs.map((v, i) => Math.exp(v * s) + (ys[i] ?? 0));
function close(actual: number[], want: number[], why: string): void {
  expect(actual.length, why).toBe(want.length);
  actual.forEach((v, i) => expect(v, `${why} (element ${i})`).toBeCloseTo(want[i] ?? NaN, 4));
}

describe("elementwise launch cache", () => {
  it("a repeated execution with the same layouts reuses the kernel and stays correct", async () => {
    const ctx = newContext();
    const values = [0.5, -1, 2, 0.25, 3, -0.5, 1, 0];
    const x = upload(ctx, values, [8]);
    const opt = optimize(chain(x, 0.5, false).ops);
    runtime.resetCounters();
    for (let i = 0; i < 5; i++) {
      const { ops, out } = chain(x, 0.5, false);
      opt.execute(ctx, ops);
      close(await read(ctx, out), expected(values, 0.5), `replay ${i} computes exp(x*0.5)+x`);
      ctx.handles.removeHandle(out.id);
    }
    expect(runtime.counters.launches, "one launch per execution").toBe(5);
    expect(runtime.counters.fusedLaunches, "every replay still counts as a fused launch").toBe(5);
    expect(runtime.counters.elidedWrites, "the two intermediates are elided on every replay").toBe(10);
    expect(runtime.counters.kernelsGenerated, "at most the first execution generates a kernel").toBeLessThanOrEqual(1);
    expect(runtime.counters.pipelineCacheHits, "later executions hit the kernel cache").toBeGreaterThanOrEqual(4);
  });

  it("a new scalar replays the same kernel with its own value; a new shape is a new kernel", async () => {
    const ctx = newContext();
    const values = [0.5, -1, 2, 0.25];
    const x = upload(ctx, values, [4]);
    const opt = optimize(chain(x, 0.5, false).ops);
    runtime.resetCounters();
    for (const s of [0.5, 2, 0.5, -1, 0, Number.NaN]) {
      const { ops, out } = chain(x, s, false);
      opt.execute(ctx, ops);
      const got = await read(ctx, out);
      if (Number.isNaN(s)) expect(got.every((v) => Number.isNaN(v)), "a NaN scalar reaches the kernel as NaN").toBe(true);
      else close(got, expected(values, s), `the scalar ${s} reaches the replayed kernel as a uniform`);
    }
    expect(runtime.counters.kernelsGenerated, "six scalars, one kernel: values are uniforms, not part of the key").toBeLessThanOrEqual(1);
    const longer = [1, 2, 3, 4, 5, 6];
    const z = upload(ctx, longer, [6]);
    const { ops, out } = chain(z, 0.5, false);
    opt.execute(ctx, ops);
    close(await read(ctx, out), expected(longer, 0.5), "a new shape launches a kernel of that shape");
  });

  it("the in-place choice follows the input's current ownership, not the cached one", async () => {
    const ctx = newContext();
    const xs = [1, 2, 3, 4];
    const ys = [0.5, 0.25, -1, 2];
    const x = upload(ctx, xs, [4]);
    const y0 = upload(ctx, ys, [4]);
    const opt = optimize(chain(x, 1, true, y0).ops);
    for (let i = 0; i < 3; i++) {
      const y = upload(ctx, ys, [4]);
      runtime.resetCounters();
      const { ops, out } = chain(x, 1, true, y);
      opt.execute(ctx, ops);
      expect(runtime.counters.inPlaceWrites, "a dying sole-owner input is overwritten in place").toBe(1);
      close(await read(ctx, out), expected(xs, 1, ys), `in-place replay ${i} is correct`);
      ctx.handles.removeHandle(out.id);
    }
    // The same layouts, but another reference holds y: in place would corrupt it.
    const y = upload(ctx, ys, [4]);
    const kept = runtime.retainHandle(ctx.handles.getHandle(y));
    runtime.resetCounters();
    const { ops, out } = chain(x, 1, true, y);
    opt.execute(ctx, ops);
    expect(runtime.counters.inPlaceWrites, "a shared input is never written in place").toBe(0);
    close(await read(ctx, out), expected(xs, 1, ys), "the shared-input execution is correct");
    const keptTensor = t([4]);
    ctx.handles.registerHandle(keptTensor.id, kept);
    close(await read(ctx, keptTensor), ys, "the other reference still sees the input's values");
  });

  it("two inputs over one allocation are still bound distinctly on every execution", async () => {
    const ctx = newContext();
    const xs = [1, 2, 3, 4];
    const x = upload(ctx, xs, [4]);
    const base = upload(ctx, xs, [4]);
    const opt = optimize(chain(x, 1, false, base).ops);
    for (let i = 0; i < 3; i++) {
      const alias = t([4]);
      ctx.handles.registerHandle(alias.id, runtime.retainHandle(ctx.handles.getHandle(x)));
      const { ops, out } = chain(x, 1, false, alias);
      opt.execute(ctx, ops);
      close(await read(ctx, out), expected(xs, 1), `aliased execution ${i} reads both operands correctly`);
    }
  });

  it("a plan executed with many layouts keeps at most MAX_LAUNCH_ENTRIES of them and stays correct", async () => {
    const ctx = newContext();
    const first = upload(ctx, [1], [1]);
    const opt = optimize(chain(first, 1, false).ops);
    for (let round = 0; round < 2; round++) {
      for (let n = 1; n <= MAX_LAUNCH_ENTRIES + 3; n++) {
        const values = Array.from({ length: n }, (_, i) => i / n);
        const x = upload(ctx, values, [n]);
        const { ops, out } = chain(x, 1, false);
        opt.execute(ctx, ops);
        close(await read(ctx, out), expected(values, 1), `length ${n}, round ${round}`);
      }
    }
  });

  it("a block that writes nothing (every product dies in it) launches nothing and frees what died", async () => {
    const ctx = newContext();
    const xs = [1, 2, 3, 4];
    const x = upload(ctx, xs, [4]);
    const dying = upload(ctx, xs, [4]);
    const { ops: live, out } = chain(x, 1, false);
    const ops: OperationIr[] = [...live, { kind: "binary", op: "mul", lhs: as(out, "ReadWrite"), rhs: as(dying, "ReadWrite"), out: t([4]) }];
    const last = ops[ops.length - 1];
    if (last === undefined || last.kind === "drop") throw new Error("the block ends with the mul");
    ops.push({ kind: "drop", tensor: as(last.out, "ReadWrite") });
    const opt = optimize(ops);
    runtime.resetCounters();
    const handlesBefore = ctx.handles.size;
    opt.execute(ctx, ops);
    expect(runtime.counters.launches, "dead code: no kernel").toBe(0);
    expect(runtime.counters.elidedWrites, "all four products are elided").toBe(4);
    expect(ctx.handles.size, "the input that died in the block was freed").toBe(handlesBefore - 1);
    close(await read(ctx, x), xs, "the input that lives on is untouched");
  });
});

describe("packed one-element outputs", () => {
  /** `n` dependent `+ 1` from `x` (shape [1]), every result alive after the block. */
  function dependent(x: TensorIr, n: number): { ops: OperationIr[]; outs: TensorIr[] } {
    const outs: TensorIr[] = [];
    const ops: OperationIr[] = [];
    let prev = x;
    for (let k = 0; k < n; k++) {
      const out = t([1]);
      ops.push({ kind: "binary-scalar", op: "add", lhs: as(prev, "ReadOnly"), scalar: 1, scalarFirst: false, out });
      outs.push(out);
      prev = out;
    }
    return { ops, outs };
  }

  it("a chain of 40 live results past the device's binding limit is one kernel, and every result reads back", async () => {
    const ctx = newContext();
    const x = upload(ctx, [0.5], [1]);
    // Fusers see the engine's relative form (a size-1 dim is shape id 0): fed through its converter.
    const [fuser] = runtime.fusers();
    if (fuser === undefined) throw new Error("the runtime offers an elementwise fuser");
    const converter = new OperationConverter();
    for (const op of dependent(x, 40).ops) fuser.fuse(converter.toRelative(op).op);
    const opt = fuser.finish();
    expect(opt.len, "40 live results fit one block: the input and one pack").toBe(40);
    for (let round = 0; round < 2; round++) {
      const before = ctx.handles.size;
      runtime.resetCounters();
      const { ops, outs } = dependent(x, 40);
      opt.execute(ctx, ops);
      expect(runtime.counters.launches, `round ${round}: one launch writes all 40 results`).toBe(1);
      for (const k of [0, 1, 17, 39]) {
        const out = outs[k];
        if (out === undefined) throw new Error("40 outputs");
        expect(await read(ctx, out), `round ${round}: result ${k} at its offset in the pack`).toEqual([0.5 + k + 1]);
      }
      // The results die one by one; the pack's memory goes with the last of them.
      for (const out of outs) ctx.handles.removeHandle(out.id);
      expect(ctx.handles.size, "every result's handle is gone").toBe(before);
    }
  });
});
