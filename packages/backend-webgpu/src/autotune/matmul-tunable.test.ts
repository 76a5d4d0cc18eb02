/**
 * Matmul autotune on the real adapter: every candidate is measured and validated against the
 * simple reference kernel, wrong or failing candidates are never chosen however fast they look,
 * results are cached, and the runtime uses the cached winner (the heuristic before it is known).
 */
import { StreamId } from "@weft/environment";
import { HandleContainer, type TensorId, type TensorIr } from "@weft/fusion";
import { MemoryTuneStore, TuneCache, Tuner, withProcessMode, type Client, type TuneProgress } from "@weft/runtime";
import type { ComputeServer, CubeCount, KernelBinding, LaunchMode } from "@weft/server";
import { beforeAll, describe, expect, it } from "vitest";
import { ExprGraph } from "../codegen/wgsl/expr.js";
import { requestWebGpuDevice } from "../device/request-device.js";
import { createWebGpuRuntime } from "../fusion/create-runtime.js";
import { chooseMatmulConfig } from "../fusion/run-matmul.js";
import type { WebGpuRuntime } from "../fusion/webgpu-runtime.js";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import type { WgslKernel } from "../kernel.js";
import type { DeviceProfile } from "../codegen/wgsl/types.js";
import { configFits, configName, configTile, MATMUL_CONFIGS, matmulKernel, matmulKey, type MatmulSpec } from "../kernels/matmul.js";
import { WebGpuServer } from "../server/webgpu-server.js";
import {
  MATMUL_TUNABLE,
  matmulCandidate,
  matmulTunableSet,
  matmulTuneKey,
  prepareMatmulInputs,
  readMatmulOutput,
  matmulValuesClose,
  skipMatmulCandidate,
  SMALL_PRODUCT_TILE_ROWS,
  type MatmulTunable,
  type MatmulTuneInputs,
  type MatmulTuneOutput,
} from "./matmul-tunable.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

/** A `WebGpuServer` that remembers the key of every kernel launched for execution. */
class RecordingServer extends WebGpuServer {
  readonly executed: string[] = [];
  override launch(kernel: WgslKernel, count: CubeCount, bindings: readonly KernelBinding[], stream: StreamId, mode: LaunchMode, uniforms?: Uint8Array): void {
    if (mode === "execute") this.executed.push(kernel.key);
    super.launch(kernel, count, bindings, stream, mode, uniforms);
  }
}

const N = 128;
const SHAPE = [N, N];
let device: GPUDevice;

beforeAll(async () => {
  device = (await requestWebGpuDevice()).device;
});

/** A runtime on `server` with an in-memory tune cache (persisted results never leak between runs). */
async function tunedRuntime(server: ComputeServer<WgslKernel>, onProgress?: (p: TuneProgress) => void): Promise<WebGpuRuntime> {
  return createWebGpuRuntime({
    device,
    server,
    adapter: { description: "test adapter", vendor: "", backend: "opengles", software: true },
    autotune: { store: new MemoryTuneStore(), warmups: 0, samples: 1, minWork: 1, ...(onProgress ? { onProgress } : {}) },
  });
}

/** `lhs · rhs` on the CPU, from the operands' bytes. */
async function cpuProduct(client: Client<WgslKernel>, inputs: MatmulTuneInputs): Promise<number[]> {
  const [a, b] = await client.read([inputs.lhs.memory.binding(), inputs.rhs.memory.binding()]);
  const av = new Float32Array((a ?? new Uint8Array(0)).slice().buffer);
  const bv = new Float32Array((b ?? new Uint8Array(0)).slice().buffer);
  const out: number[] = [];
  for (let m = 0; m < N; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < N; k++) s += (av[m * N + k] ?? 0) * (bv[k * N + n] ?? 0);
      out.push(s);
    }
  }
  return out;
}

function expectClose(values: ArrayLike<number>, expected: readonly number[], why: string): void {
  const actual = Array.from(values);
  expect(actual.length, `${why}: element count`).toBe(expected.length);
  const worst = actual.reduce((w, v, i) => Math.max(w, Math.abs(v - (expected[i] ?? NaN)) / Math.max(1, Math.abs(expected[i] ?? 0))), 0);
  expect(worst, `${why}: largest relative error`).toBeLessThanOrEqual(1e-4);
}

describe("matmulValuesClose", () => {
  it("accepts the tolerance |a − b| ≤ 1e-3 · max(1, |a|) and refuses NaN, Inf mismatches and length differences", () => {
    const f = (...v: number[]) => Float32Array.from(v);
    expect(matmulValuesClose(f(1, 1000, 0), f(1.0009, 1000.9, 0.0009))).toBe(true);
    expect(matmulValuesClose(f(1000), f(1001.5)), "relative error over 1e-3").toBe(false);
    expect(matmulValuesClose(f(0), f(0.002)), "absolute error over 1e-3 near zero").toBe(false);
    expect(matmulValuesClose(f(1), f(Number.NaN)), "a NaN where the reference has a number").toBe(false);
    expect(matmulValuesClose(f(Number.NaN), f(Number.NaN)), "NaN never compares close (the reference's values are finite)").toBe(false);
    expect(matmulValuesClose(f(Infinity), f(1)), "an Inf mismatch").toBe(false);
    expect(matmulValuesClose(f(-Infinity, 2), f(-Infinity, 2)), "equal infinities match").toBe(true);
    expect(matmulValuesClose(f(1, 2), f(1)), "a length difference").toBe(false);
    expect(matmulValuesClose(Int32Array.from([3, -4]), Int32Array.from([3, -4])), "integers compare exactly within the tolerance").toBe(true);
  });
});

describe("matmul autotune", () => {
  it("a product of few rows skips the tiles taller than 32 rows and twice its rows: never run, recorded as skipped, the winner among the rest", async () => {
    const progress: TuneProgress[] = [];
    const runtime = await tunedRuntime(new WebGpuServer(device), (p) => progress.push(p));
    const tuner = runtime.tuner;
    if (tuner === undefined) throw new Error("autotune is on");
    const set = runtime.matmulTunableSet();
    const rowsOf = (name: string): number => {
      const config = MATMUL_CONFIGS.find((c) => configName(c) === name);
      if (config === undefined) throw new Error(`${name} is a config`);
      return configTile(config)[0];
    };
    const inputs = prepareMatmulInputs(runtime.client, [8, 64], [64, 128], [8, 128], "f32");
    const record = await tuner.tune(set, inputs);
    const skipped = record.candidates.filter((c) => c.skipped !== undefined);
    const measured = record.candidates.filter((c) => c.skipped === undefined);
    expect(skipped.map((c) => rowsOf(c.name)).every((rows) => rows > SMALL_PRODUCT_TILE_ROWS), "only tiles taller than 32 rows are skipped").toBe(true);
    expect(measured.map((c) => rowsOf(c.name)).every((rows) => rows <= SMALL_PRODUCT_TILE_ROWS), "every tile of at most 32 rows is measured").toBe(true);
    expect(skipped.length, "the tall tiles of this adapter's candidates").toBe(set.candidates.filter((c) => rowsOf(c.name) > SMALL_PRODUCT_TILE_ROWS).length);
    expect(skipped.length, "some are skipped").toBeGreaterThan(0);
    for (const c of skipped) expect(c.skipped, c.name).toMatch(/-row tile would compute mostly padding for a product of 8 rows/);
    for (const c of measured) expect(c.bestMs, `${c.name} ran, validated and was timed (${c.rejected ?? ""})`).toBeTypeOf("number");
    expect(progress.filter((p) => p.kind === "candidate").length, "a progress step per measured candidate only").toBe(measured.length);
    expect(rowsOf(record.fastest), "the winner is a measured one").toBeLessThanOrEqual(SMALL_PRODUCT_TILE_ROWS);
    inputs.lhs.memory.release();
    inputs.rhs.memory.release();
  });

  it("skipMatmulCandidate: a tile is skipped only when taller than 32 rows and than twice the product's rows; test candidates without a config never", () => {
    // Candidates only asked about, never run: any profile does.
    const candidates = MATMUL_CONFIGS.map((config) => matmulCandidate(config, {} as DeviceProfile, (_key, build) => build()));
    const byRows = new Map<number, string[]>();
    for (const c of candidates) {
      const rows = configTile(c.config)[0];
      byRows.set(rows, [...(byRows.get(rows) ?? []), c.name]);
      expect(skipMatmulCandidate(c, 1) !== undefined, `${c.name} (${rows} rows) for 1 row`).toBe(rows > 32);
      expect(skipMatmulCandidate(c, 16) !== undefined, `${c.name} (${rows} rows) for 16 rows`).toBe(rows > 32);
      expect(skipMatmulCandidate(c, 32) !== undefined, `${c.name} (${rows} rows) for 32 rows`).toBe(rows > 64);
      expect(skipMatmulCandidate(c, 64), `${c.name} (${rows} rows) for 64 rows: nothing skipped`).toBeUndefined();
    }
    expect([...byRows.keys()].some((r) => r > 32), "the list has tall tiles to skip").toBe(true);
    const injected: MatmulTunable = {
      name: "injected",
      run: () => {
        throw new Error("never run");
      },
    };
    expect(skipMatmulCandidate(injected, 1), "a candidate without a config").toBeUndefined();
  });

  it("the tuner measures every fitting candidate on a 128×128×128 matmul, caches the winner, and the winner is right", async () => {
    const progress: TuneProgress[] = [];
    const runtime = await tunedRuntime(new WebGpuServer(device), (p) => progress.push(p));
    const tuner = runtime.tuner;
    if (tuner === undefined) throw new Error("autotune is on");
    const set = runtime.matmulTunableSet();
    const fitting = MATMUL_CONFIGS.filter((c) => set.candidate(configName(c)) !== undefined);
    expect(set.reference.name, "the simple kernel is the reference").toBe(configName(MATMUL_CONFIGS[0] ?? { kind: "simple", wx: 8, wy: 8 }));
    expect(fitting, "every config that fits this adapter is a candidate").toEqual(MATMUL_CONFIGS.filter((c) => configFits(c, runtime.profile)));

    const inputs = prepareMatmulInputs(runtime.client, SHAPE, SHAPE, SHAPE, "f32");
    const record = await tuner.tune(set, inputs);
    expect(record.candidates.map((c) => c.name).sort(), "one entry per candidate").toEqual(set.candidates.map((c) => c.name).sort());
    for (const c of record.candidates) expect(c.bestMs, `${c.name} ran, validated and was timed (${c.rejected ?? ""})`).toBeTypeOf("number");
    expect(progress.filter((p) => p.kind === "candidate").length, "a progress step per candidate").toBe(set.candidates.length);
    const key = matmulTuneKey(SHAPE, SHAPE, "f32");
    expect(tuner.cache.get(MATMUL_TUNABLE, key), "the result is cached under the anchored key").toEqual(record);
    expect(tuner.cache.adapter, "results are recorded for the adapter's description and backend").toBe("test adapter (opengles)");
    expect(matmulTuneKey([100, 120], [120, 90], "f32"), "nearby shapes share the anchored key").toBe(key);

    const winner = set.candidate(record.fastest);
    if (winner === undefined) throw new Error("the winner is a candidate");
    const out = await winner.run(inputs, runtime.client);
    const values = await readMatmulOutput(out, runtime.client);
    expect(values, "outputs are read as one typed array (no heap number per element: the tuner reads whole outputs while it times)").toBeInstanceOf(Float32Array);
    expectClose(values, await cpuProduct(runtime.client, inputs), `the winner ${record.fastest} equals the CPU`);
    out.memory.release();
    inputs.lhs.memory.release();
    inputs.rhs.memory.release();
  });

  it("never picks a wrong or failing candidate, however fast it looks", async () => {
    const runtime = await tunedRuntime(new WebGpuServer(device));
    const profile = runtime.profile;
    const plan = (key: string, build: () => ReturnType<typeof matmulKernel>) => build();
    const [simple, tiled] = [MATMUL_CONFIGS[0], MATMUL_CONFIGS[1]];
    if (simple === undefined || tiled === undefined) throw new Error("two configs exist");
    /** Advanced by each candidate's run: the fake clock makes the bad candidates look fastest. */
    let clock = 0;
    const costs = (candidate: MatmulTunable, cost: number): MatmulTunable => ({
      name: candidate.name,
      run: (inputs, client) => {
        clock += cost;
        return candidate.run(inputs, client);
      },
    });
    /** Computes 2·(lhs·rhs): runs fine, wrong values. */
    const doubled: MatmulTunable = {
      name: "wrong-doubled",
      run: (inputs: MatmulTuneInputs, client: Client<WgslKernel>): MatmulTuneOutput => {
        const graph = new ExprGraph();
        const res = graph.add({ kind: "value", name: "res", dtype: "f32" });
        const two = graph.add({ kind: "const", value: 2, dtype: "f32" });
        const node = graph.add({ kind: "binary", op: "mul", lhs: res, rhs: two, dtype: "f32" });
        const spec: MatmulSpec = {
          lhs: inputs.lhs.layout, rhs: inputs.rhs.layout, dtype: "f32", outShape: inputs.outShape, config: simple,
          epilogue: { graph, inputs: [], outputs: [{ node, dtype: "f32" }] }, label: "wrong",
        };
        const launch = matmulKernel(spec, profile, matmulKey(spec, profile));
        const out = client.empty(N * N * 4);
        client.launch(launch.kernel, launch.count, [
          { binding: inputs.lhs.memory.binding(), access: "read" },
          { binding: inputs.rhs.memory.binding(), access: "read" },
          { binding: out.binding(), access: "write" },
        ]);
        return { memory: out, shape: inputs.outShape, dtype: "f32" };
      },
    };
    /** Launches WGSL the device rejects: its output is tainted and its readback rejects. */
    const broken: MatmulTunable = {
      name: "failing-invalid-wgsl",
      run: (inputs, client) => {
        const out = client.empty(N * N * 4);
        client.launch({ key: "autotune-test-broken", source: "@compute @workgroup_size(1) fn main() { let x: u32 = -1.5; }", label: "broken" }, [1, 1, 1], [
          { binding: inputs.lhs.memory.binding(), access: "read" },
          { binding: out.binding(), access: "write" },
        ]);
        return { memory: out, shape: inputs.outShape, dtype: "f32" };
      },
    };
    const throwing: MatmulTunable = {
      name: "failing-throws",
      run: () => {
        throw new Error("this candidate cannot launch");
      },
    };
    const candidates = [
      costs(matmulCandidate(simple, profile, plan), 50),
      costs(doubled, 0),
      costs(broken, 0),
      costs(throwing, 0),
      costs(matmulCandidate(tiled, profile, plan), 10),
    ];
    const set = matmulTunableSet({ profile, plan, candidates });
    const progress: TuneProgress[] = [];
    const tuner = new Tuner(runtime.client, {
      cache: new TuneCache({ adapter: "test", store: new MemoryTuneStore() }),
      warmups: 0,
      samples: 1,
      now: () => clock,
      onProgress: (p) => progress.push(p),
    });
    const inputs = prepareMatmulInputs(runtime.client, SHAPE, SHAPE, SHAPE, "f32");
    const record = await tuner.tune(set, inputs);
    const outcome = (name: string) => record.candidates.find((c) => c.name === name);
    expect(outcome("wrong-doubled")?.rejected, "a wrong result is rejected by validation").toMatch(/wrong result/);
    expect(outcome("failing-invalid-wgsl")?.rejected, "a tainted output's readback rejects").toMatch(/failed/);
    expect(outcome("failing-throws")?.rejected, "a throwing candidate is rejected").toMatch(/cannot launch/);
    expect(record.fastest, "the fastest valid candidate wins, not the fast wrong ones").toBe(configName(tiled));
    expect(tuner.cache.get(MATMUL_TUNABLE, matmulTuneKey(SHAPE, SHAPE, "f32"))?.fastest, "and is cached").toBe(configName(tiled));
    inputs.lhs.memory.release();
    inputs.rhs.memory.release();
  });

  it("the runtime uses the heuristic while tuning runs in the background, then the cached winner; results equal the CPU", async () => {
    const server = new RecordingServer(device);
    const runtime = await tunedRuntime(server);
    const stream = StreamId.DEFAULT;
    const ctx = { handles: new HandleContainer<WebGpuHandle>((h) => runtime.releaseHandle(h)), stream };
    const inputs = prepareMatmulInputs(runtime.client, SHAPE, SHAPE, SHAPE, "f32");
    const want = await cpuProduct(runtime.client, inputs);
    let id = 1;
    const t = (): TensorIr => ({ id: id++ as TensorId, shape: SHAPE, dtype: "f32", status: "ReadOnly" });
    const [a, b] = [t(), t()];
    ctx.handles.registerHandle(a.id, { memory: inputs.lhs.memory, shape: SHAPE, strides: [N, 1], offset: 0, dtype: "f32" });
    ctx.handles.registerHandle(b.id, { memory: inputs.rhs.memory, shape: SHAPE, strides: [N, 1], offset: 0, dtype: "f32" });
    const matmulOnce = async (): Promise<{ key: string; values: number[] }> => {
      const out = t();
      server.executed.length = 0;
      runtime.executeOperation({ kind: "matmul", lhs: a, rhs: b, out }, ctx);
      const key = server.executed.find((k) => k.startsWith("matmul:")) ?? "";
      return { key, values: [...(await runtime.read(ctx.handles.getHandle(out), out, stream))] };
    };

    const heuristic = configName(chooseMatmulConfig(N, N, runtime.profile));
    const first = await matmulOnce();
    expect(first.key.startsWith(`matmul:${heuristic}:`), "before tuning finishes the heuristic's pick runs").toBe(true);
    expectClose(first.values, want, "the heuristic's result");
    await runtime.autotuneIdle();
    const record = runtime.tuner?.cache.get(MATMUL_TUNABLE, matmulTuneKey(SHAPE, SHAPE, "f32"));
    expect(record, "the background tuning stored a result").toBeDefined();
    const second = await matmulOnce();
    expect(second.key.startsWith(`matmul:${record?.fastest ?? "?"}:`), "afterwards the cached winner runs").toBe(true);
    expectClose(second.values, want, "the winner's result");
  });

  it("under compile-and-autotune the matmul launch is discarded but its tuning still measures", async () => {
    const server = new RecordingServer(device);
    const runtime = await tunedRuntime(server);
    const stream = StreamId.DEFAULT;
    const ctx = { handles: new HandleContainer<WebGpuHandle>((h) => runtime.releaseHandle(h)), stream };
    const inputs = prepareMatmulInputs(runtime.client, [32, 128], [128, 32], [32, 32], "f32");
    const a: TensorIr = { id: 1 as TensorId, shape: [32, 128], dtype: "f32", status: "ReadOnly" };
    const b: TensorIr = { id: 2 as TensorId, shape: [128, 32], dtype: "f32", status: "ReadOnly" };
    ctx.handles.registerHandle(a.id, { memory: inputs.lhs.memory, shape: a.shape, strides: [128, 1], offset: 0, dtype: "f32" });
    ctx.handles.registerHandle(b.id, { memory: inputs.rhs.memory, shape: b.shape, strides: [32, 1], offset: 0, dtype: "f32" });
    const before = server.stats();
    await withProcessMode("compile-and-autotune", async () => {
      runtime.executeOperation({ kind: "matmul", lhs: a, rhs: b, out: { id: 3 as TensorId, shape: [32, 32], dtype: "f32", status: "ReadOnly" } }, ctx);
      expect(server.executed.filter((k) => k.startsWith("matmul:")).length, "the caller's launch was discarded").toBe(0);
      await runtime.autotuneIdle();
    });
    expect(server.stats().dispatches - before.dispatches, "the measurement's own launches executed (its override)").toBeGreaterThan(0);
    expect(runtime.tuner?.cache.get(MATMUL_TUNABLE, matmulTuneKey([32, 128], [128, 32], "f32")), "warmup leaves a tuned result").toBeDefined();
  });
});
