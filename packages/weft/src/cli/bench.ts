/**
 * `weft bench`: a small built-in benchmark — the same 8-op elementwise chain run fused and unfused
 * on one backend, several runs each, reported as medians with the spread between runs, which is
 * faster and by how much, and an SVG chart of every run. The full suite is `npm run bench`.
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { type Device, type Tensor, rand, tidy } from "@weft/tensor";
import type { Output } from "./progress.js";

/** Options of {@link runBench}. */
export interface BenchOptions {
  readonly fused: Device;
  readonly unfused: Device;
  readonly out: Output;
  /** Elements per tensor (default 2^20). */
  readonly size?: number;
  /** Iterations per run (default 10); a run's figure is its mean time per iteration. */
  readonly iterations?: number;
  /** Timed runs per variant (default 5); their spread is what the report and the chart show. */
  readonly runs?: number;
  /** Where to write the SVG chart; none when `undefined`. */
  readonly svg?: string | undefined;
}

/** One variant's runs, in ms per iteration. */
export interface VariantTimes {
  /** The device's label. */
  readonly label: string;
  /** Every run's mean time per iteration, in run order. */
  readonly runsMs: readonly number[];
  readonly medianMs: number;
  readonly minMs: number;
  readonly maxMs: number;
}

/** What {@link runBench} measured. */
export interface BenchReport {
  readonly fused: VariantTimes;
  readonly unfused: VariantTimes;
  /** The fused median (ms per iteration). */
  readonly fusedMs: number;
  /** The unfused median (ms per iteration). */
  readonly unfusedMs: number;
  /** `unfusedMs / fusedMs`: above 1 the fused chain is faster. */
  readonly speedup: number;
  /** The chart, as written to `svg` (always built, so tests can check it without a file). */
  readonly chart: string;
}

function chain(x: Tensor, y: Tensor): Tensor {
  return tidy(() => x.mul(1.5).add(y).exp().sub(0.25).mul(y).tanh().add(1).sqrt());
}

/** One device's inputs and its timed runs (latency method: one read per iteration). */
class Variant {
  readonly #device: Device;
  readonly #x: Tensor;
  readonly #y: Tensor;
  readonly runsMs: number[] = [];

  constructor(device: Device, size: number) {
    this.#device = device;
    this.#x = rand([size], { device, seed: 1 });
    this.#y = rand([size], { device, seed: 2 });
  }

  get label(): string {
    return this.#device.label;
  }

  /** Runs the chain `iterations` times and returns the mean ms per iteration. */
  async run(iterations: number): Promise<number> {
    const start = performance.now();
    for (let i = 0; i < iterations; i++) {
      const r = chain(this.#x, this.#y);
      try {
        await r.data();
      } finally {
        r.dispose();
      }
    }
    return (performance.now() - start) / iterations;
  }

  times(): VariantTimes {
    const sorted = [...this.runsMs].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    const medianMs = sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
    return { label: this.label, runsMs: [...this.runsMs], medianMs, minMs: sorted[0] ?? 0, maxMs: sorted[sorted.length - 1] ?? 0 };
  }

  dispose(): void {
    this.#x.dispose();
    this.#y.dispose();
  }
}

/** `1.23 ms (spread 1.20–1.31 over 5 runs)`. */
function describe(t: VariantTimes): string {
  const spread = t.runsMs.length > 1 ? ` (spread ${t.minMs.toFixed(2)}–${t.maxMs.toFixed(2)} over ${t.runsMs.length} runs)` : "";
  return `${t.medianMs.toFixed(2)} ms/iteration${spread}`;
}

/** `fused is 2.41× faster than unfused` / `… 1.10× slower …`, from the medians. */
export function verdict(fusedMs: number, unfusedMs: number): string {
  const ratio = unfusedMs / Math.max(fusedMs, 1e-9);
  if (ratio >= 1) return `fused is ${ratio.toFixed(2)}× faster than unfused`;
  return `fused is ${(1 / Math.max(ratio, 1e-9)).toFixed(2)}× slower than unfused`;
}

/**
 * Runs the chain on both devices, alternating fused and unfused runs after one warm-up run each
 * (so drift and warm caches affect both alike), prints the medians, the spread, the verdict, and
 * writes the chart when asked.
 */
export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const size = options.size ?? 1 << 20;
  const iterations = options.iterations ?? 10;
  const runs = options.runs ?? 5;
  const { out } = options;
  out.write(`weft bench: 8-op elementwise chain on ${size} f32, ${runs} runs of ${iterations} iterations per variant\n`);
  const fused = new Variant(options.fused, size);
  const unfused = new Variant(options.unfused, size);
  try {
    out.write("warming up (compiles and autotunes the kernels once)\n");
    await fused.run(1);
    await unfused.run(1);
    for (let r = 0; r < runs; r++) {
      fused.runsMs.push(await fused.run(iterations));
      unfused.runsMs.push(await unfused.run(iterations));
    }
  } finally {
    fused.dispose();
    unfused.dispose();
  }
  const f = fused.times();
  const u = unfused.times();
  out.write(`  fused   (${f.label}): ${describe(f)}\n`);
  out.write(`  unfused (${u.label}): ${describe(u)}\n`);
  out.write(`  ${verdict(f.medianMs, u.medianMs)} (medians)\n`);
  const chart = benchChart(f, u, size);
  if (options.svg !== undefined) {
    writeFileSync(options.svg, chart);
    out.write(`  chart: ${options.svg}\n`);
  }
  return { fused: f, unfused: u, fusedMs: f.medianMs, unfusedMs: u.medianMs, speedup: u.medianMs / Math.max(f.medianMs, 1e-9), chart };
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * The chart: one row per variant, a bar to its median, a dot per run (the spread), and the value.
 * Plain SVG 1.1 with inline styles, so any browser or image viewer shows it.
 */
export function benchChart(fused: VariantTimes, unfused: VariantTimes, size: number): string {
  const width = 640;
  const left = 190;
  const right = 90;
  const rowHeight = 44;
  const top = 48;
  const rows = [
    { name: "fused", times: fused, color: "#2b7bb9" },
    { name: "unfused", times: unfused, color: "#c46a2b" },
  ];
  const maxMs = Math.max(fused.maxMs, unfused.maxMs, 1e-9);
  const x = (ms: number): number => left + ((width - left - right) * ms) / maxMs;
  const height = top + rows.length * rowHeight + 40;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="13">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="12" y="24" font-size="15" font-weight="bold">weft bench: 8-op chain on ${size} f32 (ms per iteration, lower is better)</text>`,
  ];
  rows.forEach((row, i) => {
    const y = top + i * rowHeight;
    const t = row.times;
    parts.push(
      `<text x="12" y="${y + 18}">${escapeXml(row.name)}</text>`,
      `<text x="12" y="${y + 33}" font-size="10" fill="#555555">${escapeXml(t.label.length > 28 ? `${t.label.slice(0, 27)}…` : t.label)}</text>`,
      `<rect x="${left}" y="${y + 6}" width="${(x(t.medianMs) - left).toFixed(1)}" height="22" fill="${row.color}" fill-opacity="0.35"/>`,
      `<line x1="${x(t.minMs).toFixed(1)}" y1="${y + 17}" x2="${x(t.maxMs).toFixed(1)}" y2="${y + 17}" stroke="${row.color}" stroke-width="2"/>`,
      ...t.runsMs.map((ms) => `<circle cx="${x(ms).toFixed(1)}" cy="${y + 17}" r="4" fill="${row.color}"/>`),
      `<text x="${(x(t.maxMs) + 8).toFixed(1)}" y="${y + 22}">${t.medianMs.toFixed(2)} ms</text>`,
    );
  });
  const axisY = top + rows.length * rowHeight + 4;
  parts.push(
    `<line x1="${left}" y1="${axisY}" x2="${width - right}" y2="${axisY}" stroke="#999999"/>`,
    `<text x="${left}" y="${axisY + 16}" font-size="11" fill="#555555">0</text>`,
    `<text x="${width - right}" y="${axisY + 16}" font-size="11" fill="#555555" text-anchor="end">${maxMs.toFixed(2)} ms</text>`,
    `<text x="12" y="${axisY + 32}" font-size="11" fill="#555555">${escapeXml(verdict(fused.medianMs, unfused.medianMs))}; bars: medians, dots: each run</text>`,
    "</svg>",
  );
  return `${parts.join("\n")}\n`;
}
