/**
 * Correctness properties of the fused runtime on the software adapter that once failed on WebGPU:
 * in place across storage types, one allocation bound twice in a dispatch, and NaN semantics.
 * Each expectation is checked against the CPU oracle's definition (IEEE / JavaScript).
 */
import { StreamId } from "@weft/environment";
import { HandleContainer, type DType, type OperationIr, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
import type { KernelBinding } from "@weft/server";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import { createWebGpuRuntime } from "./create-runtime.js";
import type { WebGpuRuntime } from "./webgpu-runtime.js";
import { Launcher } from "./launcher.js";
import { ElementwiseOptimization, MatmulOptimization, ReduceOptimization, type FusedKind } from "./optimization.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;
let nextId = 10_000;
const stream = StreamId.DEFAULT;
/** The bindings of every launch since the last reset, recorded on the runtime's client. */
let launches: { label: string; bindings: readonly KernelBinding[] }[] = [];

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
  const client = runtime.client;
  const launch = client.launch.bind(client);
  client.launch = (kernel, count, bindings, uniforms) => {
    launches.push({ label: kernel.label ?? kernel.key, bindings });
    return uniforms === undefined ? launch(kernel, count, bindings) : launch(kernel, count, bindings, uniforms);
  };
});
afterEach(() => {
  launches = [];
});

function t(shape: number[], dtype: DType = "f32", status: TensorStatus = "ReadOnly"): TensorIr {
  return { id: nextId++ as TensorId, shape, dtype, status };
}
const as = (x: TensorIr, status: TensorStatus): TensorIr => ({ ...x, status });
const drop = (x: TensorIr): OperationIr => ({ kind: "drop", tensor: as(x, "ReadWrite") });

type Context = { handles: HandleContainer<WebGpuHandle>; stream: StreamId };
const newContext = (): Context => ({ handles: new HandleContainer<WebGpuHandle>((h) => runtime.releaseHandle(h)), stream });

function upload(ctx: Context, values: number[], shape: number[], dtype: DType = "f32"): TensorIr {
  const x = t(shape, dtype);
  const data = dtype === "i32" ? Int32Array.from(values) : dtype === "u32" ? Uint32Array.from(values) : dtype === "bool" ? Uint8Array.from(values) : Float32Array.from(values);
  ctx.handles.registerHandle(x.id, runtime.upload({ data, shape, dtype } as never, stream));
  return x;
}

async function read(ctx: Context, x: TensorIr): Promise<number[]> {
  return [...(await runtime.read(ctx.handles.getHandle(x), x, stream))];
}

/**
 * Runs `ops` as ONE block of the family `kind`, through that family's optimization (what a fuser
 * would have built; what is tested here is execution, not the fusers' choice).
 */
function runBlock(ctx: Context, kind: FusedKind, ops: OperationIr[]): void {
  const launcher = new Launcher(runtime.client, runtime.profile, runtime.counters);
  const block =
    kind === "elementwise"
      ? new ElementwiseOptimization(launcher, ops.length, runtime.fallbackPort)
      : kind === "reduce"
        ? new ReduceOptimization(launcher, ops.length, runtime.fallbackPort)
        : new MatmulOptimization(launcher, ops.length, runtime.fallbackPort);
  block.execute(ctx, ops);
}

/** Every launch recorded so far binds pairwise distinct allocations. */
function expectDistinctBindings(): void {
  expect(launches.length, "the block launched").toBeGreaterThan(0);
  for (const { label, bindings } of launches) {
    const keys = bindings.map((b) => `${b.binding.stream}:${b.binding.allocation}`);
    expect(new Set(keys).size, `launch '${label}' binds ${keys.join(", ")}: one allocation twice is invalid in WebGPU`).toBe(keys.length);
  }
}

function expectClose(actual: number[], expected: number[], what: string, tol = 1e-5): void {
  expect(actual.length, `${what}: element count`).toBe(expected.length);
  actual.forEach((v, i) => {
    const e = expected[i] ?? Number.NaN;
    if (Number.isNaN(e)) expect(Number.isNaN(v), `${what}[${i}]: the oracle gives NaN, got ${v}`).toBe(true);
    else if (!Number.isFinite(e)) expect(v, `${what}[${i}]`).toBe(e);
    else expect(Math.abs(v - e), `${what}[${i}]: got ${v}, oracle ${e}`).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(e)));
  });
}

describe("in place across storage types", () => {
  it("a compare consuming its f32 input writes bools to a new buffer, never through the f32 binding", async () => {
    const ctx = newContext();
    const x = upload(ctx, [1, 2, 3, 4], [4]);
    const out = t([4], "bool");
    const before = runtime.counters.inPlaceWrites;
    runBlock(ctx, "elementwise", [{ kind: "binary-scalar", op: "gt", lhs: as(x, "ReadWrite"), scalar: 2, scalarFirst: false, out }]);
    expect(await read(ctx, out), "x > 2").toEqual([0, 0, 1, 1]);
    expect(runtime.counters.inPlaceWrites - before, "u32 (bool) storage differs from f32: no in-place write").toBe(0);
  });

  it("a cast consuming its i32 input writes f32 to a new buffer", async () => {
    const ctx = newContext();
    const x = upload(ctx, [1, 2, 3, 4], [4], "i32");
    const f = t([4], "f32");
    const out = t([4], "f32");
    const before = runtime.counters.inPlaceWrites;
    runBlock(ctx, "elementwise", [
      { kind: "cast", input: as(x, "ReadWrite"), out: f },
      { kind: "binary-scalar", op: "mul", lhs: as(f, "ReadWrite"), scalar: 0.5, scalarFirst: false, out },
    ]);
    expect(await read(ctx, out), "f32(x) × 0.5").toEqual([0.5, 1, 1.5, 2]);
    expect(runtime.counters.inPlaceWrites - before, "f32 storage differs from i32: no in-place write").toBe(0);
  });

  it("the control case: a same-type consumer still writes in place", async () => {
    const ctx = newContext();
    const x = upload(ctx, [0, 1, 2, 3], [4]);
    const out = t([4]);
    const before = runtime.counters.inPlaceWrites;
    runBlock(ctx, "elementwise", [{ kind: "binary-scalar", op: "add", lhs: as(x, "ReadWrite"), scalar: 1, scalarFirst: false, out }]);
    expect(await read(ctx, out), "x + 1").toEqual([1, 2, 3, 4]);
    expect(runtime.counters.inPlaceWrites - before, "f32 over f32, sole reference: in place").toBe(1);
  });
});

describe("no dispatch binds one allocation twice", () => {
  it("a reduce block whose prologue and epilogue read the same dying tensor (logSumExp) is right", async () => {
    const ctx = newContext();
    const rows = [
      [1, 2, 3],
      [4, 5, 6],
    ];
    const x = upload(ctx, rows.flat(), [2, 3]);
    const m = t([2, 1]);
    runtime.executeOperation({ kind: "reduce", op: "max", input: x, axes: [1], keepDims: true, out: m }, ctx);
    const [d, e, s, l, out] = [t([2, 3]), t([2, 3]), t([2, 1]), t([2, 1]), t([2, 1])] as const;
    launches = [];
    runBlock(ctx, "reduce", [
      { kind: "binary", op: "sub", lhs: x, rhs: m, out: d },
      { kind: "unary", op: "exp", input: as(d, "ReadWrite"), out: e },
      { kind: "reduce", op: "sum", input: as(e, "ReadWrite"), axes: [1], keepDims: true, out: s },
      { kind: "unary", op: "log", input: as(s, "ReadWrite"), out: l },
      { kind: "binary", op: "add", lhs: as(l, "ReadWrite"), rhs: as(m, "ReadWrite"), out },
      drop(m),
    ]);
    expectDistinctBindings();
    const lse = rows.map((r) => Math.log(r.reduce((acc, v) => acc + Math.exp(v), 0)));
    expectClose(await read(ctx, out), lse, "logSumExp", 1e-5);
  });

  it("an elementwise block reading a tensor and its own transpose (a view of one allocation) is right", async () => {
    const ctx = newContext();
    const x = upload(ctx, [1, 2, 4, 5], [2, 2]);
    const xt = t([2, 2]);
    runtime.executeOperation({ kind: "permute", input: x, axes: [1, 0], out: xt }, ctx);
    const out = t([2, 2]);
    launches = [];
    runBlock(ctx, "elementwise", [{ kind: "binary", op: "add", lhs: x, rhs: xt, out }]);
    expectDistinctBindings();
    expect(await read(ctx, out), "x + xᵀ").toEqual([2, 6, 6, 10]);
  });

  it("a matmul of a tensor with its own transpose (a Gram matrix) is right", async () => {
    const ctx = newContext();
    const x = upload(ctx, [1, 2, 4, 5], [2, 2]);
    const xt = t([2, 2]);
    runtime.executeOperation({ kind: "permute", input: x, axes: [1, 0], out: xt }, ctx);
    const out = t([2, 2]);
    launches = [];
    runBlock(ctx, "matmul", [{ kind: "matmul", lhs: x, rhs: xt, out }]);
    expectDistinctBindings();
    expect(await read(ctx, out), "x · xᵀ").toEqual([5, 14, 14, 41]);
  });

  it("a gather of an i32 tensor by its own values is right", async () => {
    const ctx = newContext();
    const x = upload(ctx, [2, 0, 1], [3], "i32");
    const out = t([3], "i32");
    launches = [];
    runtime.executeOperation({ kind: "gather", input: x, indices: x, axis: 0, out }, ctx);
    expectDistinctBindings();
    expect(await read(ctx, out), "x[x]").toEqual([1, 2, 0]);
  });
});

/** IEEE 754 / C99 `pow` (NumPy's; docs/semantics.md): JavaScript's, except `pow(1, y) = 1` and `pow(-1, ±Inf) = 1`. */
const ieeePow = (x: number, y: number): number => (x === 1 || (x === -1 && !Number.isFinite(y) && !Number.isNaN(y)) ? 1 : Math.pow(x, y));

describe("NaN semantics follow the CPU oracle (IEEE 754, docs/semantics.md)", () => {
  const specials = [Number.NaN, 1, -2, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, Number.NaN, 0.5];
  const others = [0, Number.NaN, Number.NaN, 1, 2, -1, 3, Number.NaN];
  const unary: [string, (v: number) => number][] = [
    ["relu", (v) => (Number.isNaN(v) ? v : Math.max(v, 0))],
    ["exp", Math.exp],
    ["log", Math.log],
    ["sqrt", Math.sqrt],
    ["sin", Math.sin],
    ["tanh", Math.tanh],
    ["sigmoid", (v) => 1 / (1 + Math.exp(-v))],
    ["floor", Math.floor],
    ["round", (v) => (Number.isFinite(v) && Math.abs(v % 1) === 0.5 ? 2 * Math.round(v / 2) : Math.round(v))], // half to even
  ];
  for (const [op, f] of unary) {
    it(`unary ${op} of NaN is NaN, and of ±Inf what the oracle gives`, async () => {
      const ctx = newContext();
      const x = upload(ctx, specials, [8]);
      const out = t([8]);
      runtime.executeOperation({ kind: "unary", op: op as never, input: x, out }, ctx);
      expectClose(await read(ctx, out), specials.map(f), op, 1e-5);
    });
  }

  const binary: [string, (a: number, b: number) => number][] = [
    ["maximum", Math.max],
    ["minimum", Math.min],
    ["pow", ieeePow],
    ["eq", (a, b) => Number(a === b)],
    ["ne", (a, b) => Number(a !== b)],
    ["lt", (a, b) => Number(a < b)],
    ["le", (a, b) => Number(a <= b)],
    ["gt", (a, b) => Number(a > b)],
    ["ge", (a, b) => Number(a >= b)],
  ];
  for (const [op, f] of binary) {
    it(`binary ${op} with a NaN operand matches IEEE 754`, async () => {
      const ctx = newContext();
      const a = upload(ctx, specials, [8]);
      const b = upload(ctx, others, [8]);
      const compare = ["eq", "ne", "lt", "le", "gt", "ge"].includes(op);
      const out = t([8], compare ? "bool" : "f32");
      runtime.executeOperation({ kind: "binary", op: op as never, lhs: a, rhs: b, out }, ctx);
      expectClose(await read(ctx, out), specials.map((v, i) => f(v, others[i] ?? 0)), op, 1e-5);
    });
  }

  it("x == x is false and x != x is true exactly for NaN, even on one operand (no folding)", async () => {
    const ctx = newContext();
    const x = upload(ctx, specials, [8]);
    const eq = t([8], "bool");
    const ne = t([8], "bool");
    runtime.executeOperation({ kind: "binary", op: "eq", lhs: x, rhs: x, out: eq }, ctx);
    runtime.executeOperation({ kind: "binary", op: "ne", lhs: x, rhs: x, out: ne }, ctx);
    expect(await read(ctx, eq), "x == x").toEqual(specials.map((v) => Number(!Number.isNaN(v))));
    expect(await read(ctx, ne), "x != x").toEqual(specials.map((v) => Number(Number.isNaN(v))));
  });

  it("clamp keeps NaN and bounds ±Inf", async () => {
    const ctx = newContext();
    const x = upload(ctx, specials, [8]);
    const out = t([8]);
    runtime.executeOperation({ kind: "clamp", input: x, min: -1, max: 1, out }, ctx);
    expectClose(await read(ctx, out), specials.map((v) => (Number.isNaN(v) ? v : Math.min(Math.max(v, -1), 1))), "clamp");
  });
});
