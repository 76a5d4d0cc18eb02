import { StreamId } from "@weft/environment";
import { type OperationIr, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import { fusionContext, type FusionTestContext } from "../testing/gpu-test-support.js";
import { MATMUL_CONFIGS, configName, type MatmulConfig } from "../kernels/matmul.js";
import { createWebGpuRuntime } from "./create-runtime.js";
import { Launcher } from "./launcher.js";
import { MAX_MATMUL_LAUNCH_ENTRIES } from "./matmul-launch-cache.js";
import { MatmulOptimization } from "./optimization.js";
import { chooseMatmulConfig, type MatmulChooser } from "./run-matmul.js";
import type { WebGpuRuntime } from "./webgpu-runtime.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;
let nextId = 1;
const stream = StreamId.DEFAULT;

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
});

type Ctx = FusionTestContext;
const t = (shape: readonly number[], status: TensorStatus = "ReadOnly"): TensorIr => ({ id: nextId++ as TensorId, shape, dtype: "f32", status });
const as = (x: TensorIr, status: TensorStatus): TensorIr => ({ ...x, status });

/** Seeded values in [-1, 1). */
function values(n: number, seed: number): number[] {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

function upload(ctx: Ctx, data: number[], shape: number[]): TensorIr {
  const x = t(shape);
  ctx.handles.registerHandle(x.id, runtime.upload({ data: Float32Array.from(data), shape, dtype: "f32" }, stream));
  return x;
}

async function read(ctx: Ctx, x: TensorIr): Promise<number[]> {
  return [...(await runtime.read(ctx.handles.getHandle(x), x, stream))];
}

/** `relu(a · b + bias) * s` with fresh ids (a: [m, k], b: [k, n] dense, bias: [n]). */
function block(a: TensorIr, b: TensorIr, bias: TensorIr, s: number, m: number, n: number): { ops: OperationIr[]; out: TensorIr } {
  const prod = t([m, n]);
  const biased = t([m, n]);
  const act = t([m, n]);
  const out = t([m, n]);
  const ops: OperationIr[] = [
    { kind: "matmul", lhs: a, rhs: b, out: prod },
    { kind: "binary", op: "add", lhs: as(prod, "ReadWrite"), rhs: bias, out: biased },
    { kind: "unary", op: "relu", input: as(biased, "ReadWrite"), out: act },
    { kind: "binary-scalar", op: "mul", lhs: as(act, "ReadWrite"), scalar: s, scalarFirst: false, out },
  ];
  return { ops, out };
}

/** The float64 reference of {@link block}. */
function reference(a: number[], b: number[], bias: number[], s: number, m: number, k: number, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let acc = 0;
      for (let p = 0; p < k; p++) acc += (a[i * k + p] ?? 0) * (b[p * n + j] ?? 0);
      out.push(Math.max(0, acc + (bias[j] ?? 0)) * s);
    }
  }
  return out;
}

function close(actual: number[], want: number[], why: string): void {
  expect(actual.length, why).toBe(want.length);
  actual.forEach((v, i) => expect(Math.abs(v - (want[i] ?? NaN)), `${why} (element ${i}: ${v} vs ${want[i]})`).toBeLessThan(1e-4 * (1 + Math.abs(want[i] ?? 0))));
}

/** A chooser that counts its calls and answers `config` under `generation` (both changeable). */
function countingChooser(config: MatmulConfig): MatmulChooser & { calls: number; config: MatmulConfig; generation: number } {
  const chooser = {
    calls: 0,
    config,
    generation: 0,
    choose: () => {
      chooser.calls++;
      return { config: chooser.config };
    },
  };
  return chooser;
}

const newOptimization = (len: number, chooser?: MatmulChooser): MatmulOptimization =>
  new MatmulOptimization(new Launcher(runtime.client, runtime.profile, runtime.counters), len, runtime.fallbackPort, chooser);

describe("matmul launch cache", () => {
  it("replays a block with the same layouts: one choice, a new scalar each time, the counters of the full path, no handle left", async () => {
    const ctx = fusionContext(runtime, stream);
    const [m, k, n] = [8, 64, 128];
    const [av, bv, biasv] = [values(m * k, 1), values(k * n, 2), values(n, 3)];
    const [a, b, bias] = [upload(ctx, av, [m, k]), upload(ctx, bv, [k, n]), upload(ctx, biasv, [n])];
    const chooser = countingChooser(chooseMatmulConfig(m, n, runtime.profile));
    const opt = newOptimization(4, chooser);
    runtime.resetCounters();
    for (let i = 0; i < 6; i++) {
      const s = 0.5 + i;
      const { ops, out } = block(a, b, bias, s, m, n);
      opt.execute(ctx, ops);
      close(await read(ctx, out), reference(av, bv, biasv, s, m, k, n), `execution ${i} (scalar ${s})`);
      ctx.handles.removeHandle(out.id);
    }
    expect(chooser.calls, "the chooser is asked once; the five replays reuse its answer").toBe(1);
    expect(runtime.counters.launches, "one launch per execution").toBe(6);
    expect(runtime.counters.fusedLaunches, "every replay counts as a fused launch").toBe(6);
    expect(runtime.counters.elidedWrites, "three intermediates elided on every execution").toBe(18);
    for (const x of [a, b, bias]) ctx.handles.removeHandle(x.id);
    expect(ctx.handles.size, "no handle left once the inputs are gone").toBe(0);
  });

  it("a new chooser generation asks again and launches the new choice", async () => {
    const ctx = fusionContext(runtime, stream);
    const [m, k, n] = [64, 32, 64];
    const [av, bv, biasv] = [values(m * k, 4), values(k * n, 5), values(n, 6)];
    const [a, b, bias] = [upload(ctx, av, [m, k]), upload(ctx, bv, [k, n]), upload(ctx, biasv, [n])];
    const first = chooseMatmulConfig(m, n, runtime.profile);
    const other = MATMUL_CONFIGS.find((c) => configName(c) !== configName(first) && c.kind === first.kind) ?? MATMUL_CONFIGS[0];
    expect(other, "a second configuration exists").toBeDefined();
    const chooser = countingChooser(first);
    const opt = newOptimization(4, chooser);
    const keys: string[] = [];
    const launch = runtime.client.launch.bind(runtime.client);
    runtime.client.launch = (kernel, ...rest) => {
      keys.push(kernel.key.split("(")[0] ?? kernel.key);
      launch(kernel, ...rest);
    };
    try {
      const once = async (s: number): Promise<void> => {
        const { ops, out } = block(a, b, bias, s, m, n);
        opt.execute(ctx, ops);
        close(await read(ctx, out), reference(av, bv, biasv, s, m, k, n), `scalar ${s}`);
        ctx.handles.removeHandle(out.id);
      };
      await once(1);
      await once(2);
      expect(chooser.calls, "the second execution replays").toBe(1);
      chooser.config = other as MatmulConfig;
      chooser.generation++;
      await once(3);
      await once(4);
      expect(chooser.calls, "the new generation asks once more, then replays").toBe(2);
      expect(keys.map((key) => key.split(":")[1]), "the launches follow the choice").toEqual([configName(first), configName(first), configName(other as MatmulConfig), configName(other as MatmulConfig)]);
    } finally {
      runtime.client.launch = launch;
    }
    for (const x of [a, b, bias]) ctx.handles.removeHandle(x.id);
    expect(ctx.handles.size).toBe(0);
  });

  it("new operand layouts (a transposed view) are a new entry, each correct; x · xᵀ over one allocation is never remembered", async () => {
    const ctx = fusionContext(runtime, stream);
    const n = 16;
    const xv = values(n * n, 7);
    const biasv = values(n, 8);
    const x = upload(ctx, xv, [n, n]);
    const bias = upload(ctx, biasv, [n]);
    const y = upload(ctx, values(n * n, 9), [n, n]);
    const yv = values(n * n, 9);
    const chooser = countingChooser(chooseMatmulConfig(n, n, runtime.profile));
    const opt = newOptimization(4, chooser);
    for (let i = 0; i < 2; i++) {
      const { ops, out } = block(x, y, bias, 2, n, n);
      opt.execute(ctx, ops);
      close(await read(ctx, out), reference(xv, yv, biasv, 2, n, n, n), `x · y, execution ${i}`);
      ctx.handles.removeHandle(out.id);
    }
    expect(chooser.calls).toBe(1);
    // x · x: both operands over one allocation (copied apart on every execution, never replayed).
    const xx = reference(xv, xv, biasv, 3, n, n, n);
    for (let i = 0; i < 2; i++) {
      const { ops, out } = block(x, x, bias, 3, n, n);
      opt.execute(ctx, ops);
      close(await read(ctx, out), xx, `x · x, execution ${i}`);
      ctx.handles.removeHandle(out.id);
    }
    expect(chooser.calls, "x · x takes the full path both times").toBe(3);
    for (const h of [x, y, bias]) ctx.handles.removeHandle(h.id);
    expect(ctx.handles.size).toBe(0);
  });

  it("holds at most MAX_MATMUL_LAUNCH_ENTRIES layouts and stays correct past them", async () => {
    const ctx = fusionContext(runtime, stream);
    const k = 8;
    const chooser = countingChooser(MATMUL_CONFIGS[0] as MatmulConfig);
    const opt = newOptimization(4, chooser);
    for (let r = 0; r < 2; r++) {
      for (let m = 1; m <= MAX_MATMUL_LAUNCH_ENTRIES + 3; m++) {
        const n = 4;
        const [av, bv, biasv] = [values(m * k, m), values(k * n, m + 50), values(n, m + 90)];
        const [a, b, bias] = [upload(ctx, av, [m, k]), upload(ctx, bv, [k, n]), upload(ctx, biasv, [n])];
        const { ops, out } = block(a, b, bias, 1.5, m, n);
        opt.execute(ctx, ops);
        close(await read(ctx, out), reference(av, bv, biasv, 1.5, m, k, n), `m = ${m}, round ${r}`);
        for (const x of [out, a, b, bias]) ctx.handles.removeHandle(x.id);
      }
    }
    expect(chooser.calls, "the oldest layouts were dropped, so the second round asks again for every shape").toBe(2 * (MAX_MATMUL_LAUNCH_ENTRIES + 3));
    expect(ctx.handles.size).toBe(0);
  });
});
