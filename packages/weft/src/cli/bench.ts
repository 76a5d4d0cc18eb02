/**
 * `weft bench`: a small built-in benchmark — the same 8-op elementwise chain run fused and unfused
 * on one backend, reported as times and their ratio. The full suite is `npm run bench`.
 *
 * @module
 */
import { type Device, type Tensor, rand, tidy } from "@weft/tensor";
import type { Output } from "./progress.js";

/** Options of {@link runBench}. */
export interface BenchOptions {
  readonly fused: Device;
  readonly unfused: Device;
  readonly out: Output;
  /** Elements per tensor (default 2^20). */
  readonly size?: number;
  /** Timed iterations per device (default 10). */
  readonly iterations?: number;
}

/** What {@link runBench} measured. */
export interface BenchReport {
  readonly fusedMs: number;
  readonly unfusedMs: number;
  /** `unfusedMs / fusedMs`. */
  readonly speedup: number;
}

function chain(x: Tensor, y: Tensor): Tensor {
  return tidy(() => x.mul(1.5).add(y).exp().sub(0.25).mul(y).tanh().add(1).sqrt());
}

async function time(device: Device, size: number, iterations: number): Promise<number> {
  const x = rand([size], { device, seed: 1 });
  const y = rand([size], { device, seed: 2 });
  try {
    const warm = chain(x, y);
    await warm.data();
    warm.dispose();
    const start = performance.now();
    for (let i = 0; i < iterations; i++) {
      const r = chain(x, y);
      await r.data();
      r.dispose();
    }
    return (performance.now() - start) / iterations;
  } finally {
    x.dispose();
    y.dispose();
  }
}

/** Runs the chain on both devices (latency method: one read per iteration) and prints the ratio. */
export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const size = options.size ?? 1 << 20;
  const iterations = options.iterations ?? 10;
  const { out } = options;
  out.write(`weft bench: 8-op elementwise chain on ${size} f32, ${iterations} iterations\n`);
  const fusedMs = await time(options.fused, size, iterations);
  out.write(`  fused   (${options.fused.label}): ${fusedMs.toFixed(2)} ms/iteration\n`);
  const unfusedMs = await time(options.unfused, size, iterations);
  out.write(`  unfused (${options.unfused.label}): ${unfusedMs.toFixed(2)} ms/iteration\n`);
  const speedup = unfusedMs / Math.max(fusedMs, 1e-9);
  out.write(`  fused is ${speedup.toFixed(2)}x the unfused chain\n`);
  return { fusedMs, unfusedMs, speedup };
}
