/**
 * The float matmul cores: the JavaScript tiles and the WebAssembly SIMD kernel both give, bit for
 * bit, the oracle's definition — each output summed in f64 over `k` in index order, rounded once
 * — at sizes off every tile and block boundary, for transposed operands and broadcast batches.
 */
import { describe, expect, it } from "vitest";
import { MC, matmulF64, matmulRows, type MatmulArgs } from "./matmul-f64.js";
import { matmulWasm, matmulWasmRows, wasmSupport } from "./matmul-wasm.js";
import { THREADED_MATMUL_MIN_WORK, configureCpuThreads, cpuThreads, threadedGemm } from "./matmul-threads.js";

function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (Math.imul(a, 1664525) + 1013904223) >>> 0;
    return a / 4294967296 - 0.5;
  };
}

/** `batches` products of `m×k` by `k×n`, `A` stored transposed when `transposeA`, `B` shared by every batch. */
function problem(m: number, n: number, k: number, batches: number, transposeA: boolean, seed: number): { args: Omit<MatmulArgs, "c">; want: Float32Array } {
  const r = random(seed);
  const a = Float32Array.from({ length: batches * m * k }, r);
  const b = Float32Array.from({ length: k * n }, r);
  a[0] = Number.NaN;
  if (a.length > 5) a[5] = -0;
  const [lm, lk] = transposeA ? [1, m] : [k, 1];
  const offsets = new Float64Array(3 * batches);
  for (let q = 0; q < batches; q++) offsets.set([q * m * k, 0, q * m * n], 3 * q);
  const want = new Float32Array(batches * m * n);
  for (let q = 0; q < batches; q++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let acc = 0;
        for (let p = 0; p < k; p++) acc += (a[q * m * k + i * lm + p * lk] as number) * (b[p * n + j] as number);
        want[q * m * n + i * n + j] = acc;
      }
    }
  }
  return { args: { a, b, m, n, k, lm, lk, rk: n, rn: 1, batches, offsets, store: Math.fround }, want };
}

const SIZES: [number, number, number, number, boolean][] = [
  [1, 1, 1, 1, false],
  [3, 5, 7, 1, false],
  [MC + 5, 9, 33, 1, true],
  [8, 130, 70, 3, false],
  [4, 4, 0, 1, false],
];

function same(got: Float32Array, want: Float32Array): string | undefined {
  for (let i = 0; i < want.length; i++) if (!Object.is(got[i], want[i])) return `element ${i}: ${got[i]} vs ${want[i]}`;
  return undefined;
}

describe("float matmul cores", () => {
  it.each(SIZES)("JavaScript tiles: %i×%i×%i (batches %i, transposed A %s) equal the plain f64 loop", (m, n, k, batches, t) => {
    const { args, want } = problem(m, n, k, batches, t, m * 31 + n);
    const c = new Float32Array(batches * m * n);
    matmulF64({ ...args, c });
    expect(same(c, want)).toBeUndefined();
  });

  it.each(SIZES)("unpacked rows: %i×%i×%i (batches %i, transposed A %s) equal the plain f64 loop", (m, n, k, batches, t) => {
    const { args, want } = problem(m, n, k, batches, t, m * 31 + n);
    const c = new Float32Array(batches * m * n);
    matmulRows({ ...args, c });
    expect(same(c, want)).toBeUndefined();
  });

  it.each(SIZES)("WebAssembly SIMD, unpacked rows: %i×%i×%i (batches %i, transposed A %s) equal the plain f64 loop", (m, n, k, batches, t) => {
    const { args, want } = problem(m, n, k, batches, t, m * 31 + n);
    const c = new Float32Array(batches * m * n);
    expect(matmulWasmRows({ ...args, c })).toBe(true);
    expect(same(c, want)).toBeUndefined();
  });

  it.each(SIZES)("WebAssembly SIMD: %i×%i×%i (batches %i, transposed A %s) equal the plain f64 loop", (m, n, k, batches, t) => {
    expect(wasmSupport().available, "Node 20 has WebAssembly SIMD").toBe(true);
    const { args, want } = problem(m, n, k, batches, t, m * 31 + n);
    const c = new Float32Array(batches * m * n);
    expect(matmulWasm({ ...args, c })).toBe(true);
    expect(same(c, want)).toBeUndefined();
  });
});

describe("the WebAssembly SIMD matmul across threads", () => {
  // Past the threshold, off every tile, block and chunk boundary; a transposed A and batches.
  const LARGE: [number, number, number, number, boolean][] = [
    [MC * 2 + 7, 131, 257, 1, false],
    [97, 64, 700, 2, true],
    [MC * 5 + 3, 9, 4096, 1, false],
  ];

  it.each(LARGE)("%i×%i×%i (batches %i, transposed A %s): 3 threads give the single-thread bits", (m, n, k, batches, t) => {
    expect(m * n * k, "the product is past the threshold").toBeGreaterThanOrEqual(THREADED_MATMUL_MIN_WORK);
    const { args } = problem(m, n, k, batches, t, m * 7 + k);
    const single = new Float32Array(batches * m * n);
    const threaded = new Float32Array(batches * m * n);
    try {
      configureCpuThreads(1);
      expect(matmulWasm({ ...args, c: single })).toBe(true);
      configureCpuThreads(3);
      expect(cpuThreads()).toBe(3);
      expect(threadedGemm()?.workers.length, "two workers and the main thread").toBe(2);
      expect(matmulWasm({ ...args, c: threaded })).toBe(true);
      expect(matmulWasm({ ...args, c: threaded }), "a second product on the same workers").toBe(true);
    } finally {
      configureCpuThreads("auto");
    }
    expect(same(threaded, single)).toBeUndefined();
    expect(Number.isNaN(single[0]), "the NaN in A reaches its row").toBe(true);
  });

  it("is off on a machine of 2 cores or fewer unless WEFT_CPU_THREADS asks (the CI machine keeps one thread)", async () => {
    const os = await import("node:os");
    configureCpuThreads("auto");
    const asked = process.env.WEFT_CPU_THREADS;
    if (asked === undefined || asked === "") expect(cpuThreads()).toBe(os.availableParallelism() <= 2 ? 1 : Math.min(os.availableParallelism(), 8));
  });
});
