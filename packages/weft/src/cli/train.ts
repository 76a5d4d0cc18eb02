/**
 * `weft demo --train`: an MLP learning a small synthetic task with `valueAndGrad` and Adam, on
 * the chosen device, with a progress bar and the loss curve (as text, and as an SVG chart).
 *
 * @remarks
 * **Task.** Three interleaved spirals in the plane (the classic CS231n toy set): 3 classes of
 * {@link POINTS_PER_CLASS} points, `r = i/n`, `θ = 4c + 4r + 0.2·ε`, `(x, y) = r·(sin θ, cos θ)`.
 * No straight line separates them; a small MLP must bend its decision boundary around each arm.
 * Training and held-out points are drawn from the same distribution with different seeds.
 * **Model.** `2 → 64 → 64 → 3`, ReLU, softmax cross-entropy; weights `randn · √(2 / fan_in)`
 * (He), biases zero, fixed seeds. Full-batch Adam (`lr` 0.01) for {@link DEFAULT_STEPS} steps.
 * **Check.** The accuracy on the held-out points must reach {@link TARGET_ACCURACY}; the command
 * exits with 1 otherwise. The model reaches it on every backend (the loss curve and the decision
 * differ only by float rounding between them).
 * **What it shows.** Each step is one `valueAndGrad` (forward, tape, backward — recorded lazily
 * and fused like any other work) and one `optimizer.step` (parameters updated in place); the loss
 * is read every few steps only, so the device runs ahead of the host in between.
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { optim, valueAndGrad } from "@weft/autodiff";
import { type Device, type Tensor, tensor, randn, tidy, zeros } from "@weft/tensor";
import { type Output, ProgressBar } from "./progress.js";

/** Points per class, in the training set and in the held-out set. */
export const POINTS_PER_CLASS = 100;
/** Classes (spiral arms). */
export const CLASSES = 3;
/** Hidden width of both hidden layers. */
export const HIDDEN = 64;
/** Steps of full-batch Adam. */
export const DEFAULT_STEPS = 400;
/** The held-out accuracy the demo must reach. */
export const TARGET_ACCURACY = 0.95;
/** The chart `weft demo --train` writes unless told otherwise. */
export const DEFAULT_TRAIN_SVG = "weft-train.svg";

/** Options of {@link runTrainDemo}. */
export interface TrainOptions {
  readonly device: Device;
  readonly out: Output;
  /** Steps of Adam (default {@link DEFAULT_STEPS}). */
  readonly steps?: number;
  /** Where to write the SVG loss curve; none when `undefined`. */
  readonly svg?: string | undefined;
}

/** What {@link runTrainDemo} measured. */
export interface TrainReport {
  readonly steps: number;
  /** `[step, loss]` pairs, read every few steps. */
  readonly curve: readonly (readonly [number, number])[];
  readonly trainAccuracy: number;
  readonly testAccuracy: number;
  readonly stepsPerSecond: number;
  /** Whether the held-out accuracy reached {@link TARGET_ACCURACY}. */
  readonly passed: boolean;
  /** The SVG chart of the loss curve (always built, so tests can check it without a file). */
  readonly chart: string;
}

/** A seeded PRNG (mulberry32) for the data set: the same points on every run and backend. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The spirals (see the module doc): points `[n·3, 2]` and one-hot labels `[n·3, 3]`, plus the class of each point. */
export function spirals(seed: number, perClass = POINTS_PER_CLASS): { points: Float32Array; onehot: Float32Array; labels: Int32Array } {
  const next = prng(seed);
  const n = perClass * CLASSES;
  const points = new Float32Array(n * 2);
  const onehot = new Float32Array(n * CLASSES);
  const labels = new Int32Array(n);
  for (let c = 0; c < CLASSES; c++) {
    for (let i = 0; i < perClass; i++) {
      const k = c * perClass + i;
      const r = i / perClass;
      const noise = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
      const theta = 4 * c + 4 * r + 0.2 * noise;
      points[2 * k] = r * Math.sin(theta);
      points[2 * k + 1] = r * Math.cos(theta);
      onehot[k * CLASSES + c] = 1;
      labels[k] = c;
    }
  }
  return { points, onehot, labels };
}

/** The model's parameters. */
interface Params {
  readonly w1: Tensor;
  readonly b1: Tensor;
  readonly w2: Tensor;
  readonly b2: Tensor;
  readonly w3: Tensor;
  readonly b3: Tensor;
}

function initParams(device: Device): Params {
  return tidy(() => ({
    w1: randn([2, HIDDEN], { device, seed: 21 }).mul(Math.sqrt(2 / 2)),
    b1: zeros([HIDDEN], { device }),
    w2: randn([HIDDEN, HIDDEN], { device, seed: 22 }).mul(Math.sqrt(2 / HIDDEN)),
    b2: zeros([HIDDEN], { device }),
    w3: randn([HIDDEN, CLASSES], { device, seed: 23 }).mul(Math.sqrt(2 / HIDDEN)),
    b3: zeros([CLASSES], { device }),
  }));
}

function logits(p: Params, x: Tensor): Tensor {
  return x.matmul(p.w1).add(p.b1).relu().matmul(p.w2).add(p.b2).relu().matmul(p.w3).add(p.b3);
}

/** Mean softmax cross-entropy of `x` against one-hot `y`. */
function loss(p: Params, x: Tensor, y: Tensor): Tensor {
  return logits(p, x).logSoftmax(-1).mul(y).sum(-1).neg().mean();
}

async function accuracy(p: Params, x: Tensor, labels: Tensor): Promise<number> {
  const acc = tidy(() => logits(p, x).argmax(-1).eq(labels).cast("f32").mean());
  try {
    return (await acc.data())[0] ?? 0;
  } finally {
    acc.dispose();
  }
}

/** Trains, prints the progress, the curve and the accuracies, writes the chart; see the module doc. */
export async function runTrainDemo(options: TrainOptions): Promise<TrainReport> {
  const { device, out } = options;
  const steps = options.steps ?? DEFAULT_STEPS;
  const n = POINTS_PER_CLASS * CLASSES;
  out.write(`weft demo --train: MLP 2→${HIDDEN}→${HIDDEN}→${CLASSES} (ReLU) learning ${CLASSES} interleaved spirals (${n} points), full-batch Adam, ${steps} steps on ${device.label}\n`);
  const train = spirals(1);
  const test = spirals(2);
  const x = tensor(train.points, { device, shape: [n, 2] });
  const y = tensor(train.onehot, { device, shape: [n, CLASSES] });
  const trainLabels = tensor(train.labels, { device, shape: [n] });
  const xTest = tensor(test.points, { device, shape: [n, 2] });
  const testLabels = tensor(test.labels, { device, shape: [n] });
  const params = initParams(device);
  const opt = optim.adam({ lr: 0.01 });
  const every = Math.max(1, Math.floor(steps / 50));
  const curve: [number, number][] = [];
  const bar = new ProgressBar(out, "training", steps);
  const start = performance.now();
  try {
    for (let step = 1; step <= steps; step++) {
      const value = tidy(() => {
        const [l, g] = valueAndGrad(loss)(params, x, y);
        opt.step(params, g);
        return l;
      });
      try {
        if (step % every === 0 || step === 1 || step === steps) curve.push([step, (await value.data())[0] ?? Number.NaN]);
      } finally {
        value.dispose();
      }
      bar.tick();
    }
    await device.sync();
    const seconds = (performance.now() - start) / 1000;
    bar.finish();
    const trainAccuracy = await accuracy(params, x, trainLabels);
    const testAccuracy = await accuracy(params, xTest, testLabels);
    const passed = testAccuracy >= TARGET_ACCURACY;
    const chart = lossChart(curve, device.label);
    out.write(`\nloss (every ${every} steps):\n${textCurve(curve)}\n`);
    out.write(`throughput: ${(steps / seconds).toFixed(1)} steps/s (${((1000 * seconds) / steps).toFixed(2)} ms per step: forward, backward and Adam update)\n`);
    out.write(`accuracy: ${(100 * trainAccuracy).toFixed(1)}% on the training points, ${(100 * testAccuracy).toFixed(1)}% on ${n} held-out points\n`);
    out.write(
      passed
        ? `check: held-out accuracy ${(100 * testAccuracy).toFixed(1)}% ≥ ${100 * TARGET_ACCURACY}%\n`
        : `check: held-out accuracy ${(100 * testAccuracy).toFixed(1)}% is below the ${100 * TARGET_ACCURACY}% the demo must reach\n`,
    );
    if (options.svg !== undefined) {
      writeFileSync(options.svg, chart);
      out.write(`loss curve: ${options.svg}\n`);
    }
    return { steps, curve, trainAccuracy, testAccuracy, stepsPerSecond: steps / seconds, passed, chart };
  } finally {
    for (const t of [x, y, trainLabels, xTest, testLabels, ...Object.values(params)]) t.dispose();
    opt.dispose();
  }
}

/** The loss curve as text: one row per level, a `•` per sample, log scale (10 rows). */
export function textCurve(curve: readonly (readonly [number, number])[]): string {
  const losses = curve.map(([, l]) => l).filter((l) => Number.isFinite(l) && l > 0);
  if (losses.length === 0) return "  (no finite loss)";
  const hi = Math.log10(Math.max(...losses));
  const lo = Math.log10(Math.min(...losses));
  const rows = 10;
  const span = Math.max(hi - lo, 1e-9);
  const grid = Array.from({ length: rows }, () => new Array<string>(curve.length).fill(" "));
  curve.forEach(([, l], i) => {
    if (!(Number.isFinite(l) && l > 0)) return;
    const r = Math.round(((hi - Math.log10(l)) / span) * (rows - 1));
    const row = grid[r];
    if (row !== undefined) row[i] = "•";
  });
  const label = (r: number): string => (10 ** (hi - (r / (rows - 1)) * span)).toPrecision(3).padStart(9);
  const lines = grid.map((row, r) => `${r === 0 || r === rows - 1 || r === Math.floor(rows / 2) ? label(r) : " ".repeat(9)} │${row.join("")}`);
  const first = curve[0]?.[0] ?? 0;
  const last = curve[curve.length - 1]?.[0] ?? 0;
  lines.push(`${" ".repeat(9)} └${"─".repeat(curve.length)}`);
  lines.push(`${" ".repeat(11)}step ${first}${" ".repeat(Math.max(1, curve.length - String(first).length - String(last).length - 5))}${last}`);
  return lines.join("\n");
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** The loss curve as a plain SVG 1.1 line chart (log-scale loss against step). */
export function lossChart(curve: readonly (readonly [number, number])[], label: string): string {
  const width = 640;
  const height = 360;
  const left = 70;
  const right = 20;
  const top = 48;
  const bottom = 48;
  const finite = curve.filter(([, l]) => Number.isFinite(l) && l > 0);
  const losses = finite.map(([, l]) => l);
  const hi = Math.log10(Math.max(...losses, 1e-9));
  const lo = Math.log10(Math.min(...losses, hi > 0 ? 1 : 1e-9));
  const span = Math.max(hi - lo, 1e-9);
  const lastStep = Math.max(1, ...finite.map(([s]) => s));
  const x = (step: number): number => left + ((width - left - right) * step) / lastStep;
  const y = (l: number): number => top + ((height - top - bottom) * (hi - Math.log10(l))) / span;
  const points = finite.map(([s, l]) => `${x(s).toFixed(1)},${y(l).toFixed(1)}`).join(" ");
  return `${[
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="12" y="24" font-size="15" font-weight="bold">weft demo --train: cross-entropy loss per step (log scale)</text>`,
    `<text x="12" y="40" font-size="11" fill="#555555">${escapeXml(label)}</text>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${height - bottom}" stroke="#999999"/>`,
    `<line x1="${left}" y1="${height - bottom}" x2="${width - right}" y2="${height - bottom}" stroke="#999999"/>`,
    `<text x="${left - 6}" y="${top + 4}" text-anchor="end">${(10 ** hi).toPrecision(3)}</text>`,
    `<text x="${left - 6}" y="${height - bottom + 4}" text-anchor="end">${(10 ** lo).toPrecision(3)}</text>`,
    `<text x="${left}" y="${height - bottom + 18}">0</text>`,
    `<text x="${width - right}" y="${height - bottom + 18}" text-anchor="end">${lastStep}</text>`,
    `<text x="${(left + width - right) / 2}" y="${height - 12}" text-anchor="middle">step</text>`,
    `<polyline points="${points}" fill="none" stroke="#2b7bb9" stroke-width="2"/>`,
    "</svg>",
  ].join("\n")}\n`;
}
