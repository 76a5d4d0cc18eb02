/**
 * The targets of issue "Speed at the hardware limit" (and the docs/performance.md ones it keeps), as one
 * table: each target's stable `id`, its bar, and how its value is computed from the run's
 * measurements. Workloads only measure; the ratios are evaluated here after every workload has
 * run, so the same table serves one shared process, several isolated ones (`--isolate`, whose
 * measurements are merged first) and several whole runs (`--runs`, whose spread it reports).
 *
 * @remarks
 * **Names.** The variant names and size labels below are the vocabulary the workloads record
 * under; a workload imports them from here, so a target never looks for a row under a name no
 * workload writes.
 *
 * @module
 */
import type { Sizes } from "./context.js";
import { median } from "./harness/measure.js";
import type { Measurement, Method, Ratio } from "./harness/report.js";
import { sizeText } from "./harness/data.js";

/** The variant names the targets read, per workload. */
export const VARIANT = {
  limitChain: "limit: handwritten WGSL, reused buffers, 30 dispatches/submit",
  handwritten: "handwritten WGSL, 1 dispatch/submit",
  fused: "weft fused",
  unfused: "weft unfused",
  tfjs: "tfjs",
  jax: "jax-js jit",
  weft: "weft",
  limitSum: "limit: handwritten WGSL sum, reused buffers, 30/submit",
  weftSum: "weft sum",
  tfjsSum: "tfjs sum",
  weftRowSum: "weft row sum",
  tfjsRowSum: "tfjs row sum",
  rawRead: "raw mapAsync, fresh array",
  rawReadInto: "raw mapAsync, into caller memory",
  weftData: "weft data()",
  weftDataInto: "weft data({ into })",
  tfjsData: "tfjs data()",
  weftRecord: "weft record",
  tfjsEager: "tfjs eager",
  jsCalibration: "js calibration",
  p50: (variant: string) => `${variant} p50`,
  p99: (variant: string) => `${variant} p99`,
  inFlight: (variant: string, inFlight: number) => `${variant}, ${inFlight} in flight`,
} as const;

/** The size labels the workloads record under. */
export const LABEL = {
  chain: (n: number): string => sizeText(n),
  readback: (n: number): string => `${sizeText(n)} (${(n * 4) >> 20} MB)`,
  sum: (n: number): string => sizeText(n),
  rows: ([rows, cols]: readonly [number, number]): string => `${rows}×${cols} f32`,
  matmul: (n: number): string => `${n}²`,
  host: (ops: number): string => `${ops} ops on 16 f32`,
  dependent: (ops: number): string => `${ops} adds on 1 f32`,
  small: ([count, n]: readonly [number, number]): string => `${count} × ${n} f32`,
  serving: (s: Sizes["serving"]): string => `MLP 64→128→128→10, batch ${s.batch}, ${s.requests} requests`,
  training: (t: Sizes["training"]): string => `MLP 64→128→128→10, batch ${t.batch}, Adam, ${t.steps} steps per run`,
} as const;

/** One side of a comparison: the measurement it reads. */
export interface Side {
  readonly workload: string;
  readonly variant: string;
  readonly method: Method;
  readonly size: string;
}

/** How a target's value is computed from the run's measurements. */
export type Formula =
  /** Times: `denominator.ms / numerator.ms`, how many times faster the numerator is. */
  | { readonly kind: "faster"; readonly numerator: Side; readonly denominator: Side }
  /** Rates (GB/s, req/s): `numerator.value / denominator.value`. */
  | { readonly kind: "rate"; readonly numerator: Side; readonly denominator: Side }
  /** One measurement's own figure, converted by `read` (e.g. ops/s to µs per op). */
  | { readonly kind: "figure"; readonly side: Side; readonly read: (m: Measurement) => number | undefined; readonly unit: string };

/** A bar: the least (`at: "least"`) or most (`"most"`) value that meets it, or none (informative). */
export type Bar = { readonly text: string; readonly at: "least" | "most"; readonly bound: number } | { readonly text: "info"; readonly at: "informative" };

/** One target of the table. */
export interface TargetSpec {
  readonly id: string;
  readonly workload: string;
  /** What is compared, as printed. */
  readonly name: string;
  readonly bar: Bar;
  readonly formula: Formula;
  /** A remark printed with the value (e.g. quick sizes stand in for the issue's). */
  readonly note?: string;
}

const least = (bound: number): Bar => ({ text: `≥ ${bound}`, at: "least", bound });
const most = (bound: number): Bar => ({ text: `≤ ${bound}`, at: "most", bound });
const INFO: Bar = { text: "info", at: "informative" };
/** The size label of the host workload's calibration loop (`jsCalibration`, harness/measure.ts). */
export const CALIBRATION_SIZE = "60 × 65,536 reads";

/**
 * The table for a run of `sizes`. The ids name the sizes (2^24, 2^28, 64 MB, 2^26, 1024…);
 * a quick run measures smaller stand-ins and says so in each target's note.
 */
export function targetsFor(sizes: Sizes, quick: boolean): TargetSpec[] {
  const out: TargetSpec[] = [];
  const stand = (what: string): { note?: string } => (quick ? { note: `quick mode: ${what}` } : {});
  const side = (workload: string, variant: string, method: Method, size: string): Side => ({ workload, variant, method, size });

  // Chain: the two sizes by role (the second exists only when the device binds 1 GiB).
  (["2^24", "2^28"] as const).forEach((name, k) => {
    const n = sizes.chain[k];
    const size = n === undefined ? `${name} f32 (not run)` : LABEL.chain(n);
    const s = (variant: string, method: Method): Side => side("chain", variant, method, size);
    const note = n === undefined ? { note: "not run: the device cannot bind 1 GiB" } : stand(`${size} stands for ${name}`);
    out.push(
      { id: `chain-${name}-fused-vs-limit`, workload: "chain", name: `fused / limit, throughput, ${size}`, bar: least(k === 0 ? 0.8 : 0.9), formula: { kind: "faster", numerator: s(VARIANT.fused, "throughput"), denominator: s(VARIANT.limitChain, "throughput") }, ...note },
      { id: `chain-${name}-fused-vs-tfjs`, workload: "chain", name: `fused vs tfjs, latency, ${size}`, bar: k === 0 ? least(6) : INFO, formula: { kind: "faster", numerator: s(VARIANT.fused, "latency"), denominator: s(VARIANT.tfjs, "latency") }, ...note },
      { id: `chain-${name}-fused-vs-jax`, workload: "chain", name: `fused vs jax-js jit, latency, ${size}`, bar: k === 0 ? least(2) : INFO, formula: { kind: "faster", numerator: s(VARIANT.fused, "latency"), denominator: s(VARIANT.jax, "latency") }, ...note },
      { id: `chain-${name}-fused-vs-unfused`, workload: "chain", name: `fused vs unfused, throughput, ${size}`, bar: least(5), formula: { kind: "faster", numerator: s(VARIANT.fused, "throughput"), denominator: s(VARIANT.unfused, "throughput") }, ...note },
      { id: `chain-${name}-limit-vs-1-per-submit`, workload: "chain", name: `limit vs handwritten 1 dispatch/submit, throughput, ${size}`, bar: INFO, formula: { kind: "faster", numerator: s(VARIANT.limitChain, "throughput"), denominator: s(VARIANT.handwritten, "throughput") }, ...note },
    );
  });

  const hostSize = LABEL.host(sizes.hostOps);
  out.push(
    {
      id: "host-us-per-op",
      workload: "host",
      name: `weft µs per recorded op, ${hostSize}`,
      bar: most(1.5),
      formula: { kind: "figure", side: side("host", VARIANT.weftRecord, "host", hostSize), read: (m) => (m.value === undefined || m.value <= 0 ? undefined : 1e6 / m.value), unit: "µs/op" },
    },
    { id: "host-vs-tfjs", workload: "host", name: `weft vs tfjs eager, ops recorded per second, ${hostSize}`, bar: INFO, formula: { kind: "rate", numerator: side("host", VARIANT.weftRecord, "host", hostSize), denominator: side("host", VARIANT.tfjsEager, "host", hostSize) }, note: "TF.js encodes each op eagerly" },
    {
      id: "host-js-calibration-ms",
      workload: "host",
      name: "a fixed pure-JS loop in this process, ms (the machine's speed: read host-bound figures against it)",
      bar: INFO,
      formula: { kind: "figure", side: side("host", VARIANT.jsCalibration, "host", CALIBRATION_SIZE), read: (m) => m.ms, unit: "ms" },
      note: "compare across runs of the bench: on the H200, 55–62 ms where Weft recorded at 0.77–1.26 µs/op, 66–79 ms where at 1.45–2.2",
    },
  );

  const dep = LABEL.dependent(sizes.dependent);
  out.push({ id: "dependent-10k-vs-tfjs", workload: "dependent", name: `weft vs tfjs, ${dep}, then a read`, bar: least(1.5), formula: { kind: "faster", numerator: side("dependent", VARIANT.weft, "latency", dep), denominator: side("dependent", VARIANT.tfjs, "latency", dep) }, ...stand(`${dep} stands for 10,000`) });

  const rb = LABEL.readback(sizes.readback);
  const r = (variant: string): Side => side("readback", variant, "latency", rb);
  out.push(
    { id: "readback-64MB-vs-tfjs", workload: "readback", name: `weft data() vs tfjs data(), latency, ${rb}`, bar: least(4), formula: { kind: "faster", numerator: r(VARIANT.weftData), denominator: r(VARIANT.tfjsData) }, ...stand(`${rb} stands for 64 MB`) },
    { id: "readback-into-vs-raw", workload: "readback", name: `weft data({ into }) / raw map + copy into, latency, ${rb}`, bar: least(0.5), formula: { kind: "faster", numerator: r(VARIANT.weftDataInto), denominator: r(VARIANT.rawReadInto) }, ...stand(`${rb} stands for 64 MB`) },
    { id: "readback-64MB-vs-raw", workload: "readback", name: `weft data() / raw map + fresh array, latency, ${rb}`, bar: least(0.5), formula: { kind: "faster", numerator: r(VARIANT.weftData), denominator: r(VARIANT.rawRead) }, ...stand(`${rb} stands for 64 MB`) },
  );

  const sum = LABEL.sum(sizes.sum);
  const rows = LABEL.rows(sizes.rows);
  out.push(
    { id: "sum-2^26-vs-limit", workload: "reduction", name: `weft sum / limit sum, throughput, ${sum}`, bar: least(0.7), formula: { kind: "faster", numerator: side("reduction", VARIANT.weftSum, "throughput", sum), denominator: side("reduction", VARIANT.limitSum, "throughput", sum) }, ...stand(`${sum} stands for 2^26`) },
    { id: "sum-2^26-vs-tfjs", workload: "reduction", name: `weft sum vs tfjs, latency, ${sum}`, bar: least(100), formula: { kind: "faster", numerator: side("reduction", VARIANT.weftSum, "latency", sum), denominator: side("reduction", VARIANT.tfjsSum, "latency", sum) }, ...stand(`${sum} stands for 2^26`) },
    { id: "rowsum-vs-tfjs", workload: "reduction", name: `weft row sum vs tfjs, latency, ${rows}`, bar: least(1.5), formula: { kind: "faster", numerator: side("reduction", VARIANT.weftRowSum, "latency", rows), denominator: side("reduction", VARIANT.tfjsRowSum, "latency", rows) }, ...stand(`${rows} stands for 4096×16384`) },
    { id: "rowsum-vs-limit", workload: "reduction", name: `weft row sum / limit sum, bandwidth, ${rows} vs ${sum}`, bar: INFO, formula: { kind: "rate", numerator: side("reduction", VARIANT.weftRowSum, "throughput", rows), denominator: side("reduction", VARIANT.limitSum, "throughput", sum) } },
  );

  ([1024, 2048, 4096] as const).forEach((name, k) => {
    const n = sizes.matmul[k];
    const size = n === undefined ? `${name}² (not run)` : LABEL.matmul(n);
    const s = (variant: string, method: Method): Side => side("matmul", variant, method, size);
    const note = n === undefined ? { note: "not run in this mode" } : stand(`${size} stands for ${name}²`);
    out.push(
      { id: `matmul-${name}-vs-tfjs`, workload: "matmul", name: `weft vs tfjs, throughput, ${size}`, bar: least(1.5), formula: { kind: "faster", numerator: s(VARIANT.weft, "throughput"), denominator: s(VARIANT.tfjs, "throughput") }, ...note },
      { id: `matmul-${name}-vs-tfjs-latency`, workload: "matmul", name: `weft vs tfjs, latency, ${size}`, bar: INFO, formula: { kind: "faster", numerator: s(VARIANT.weft, "latency"), denominator: s(VARIANT.tfjs, "latency") }, ...note },
    );
  });

  const small = LABEL.small(sizes.small);
  out.push(
    { id: "small-64-vs-tfjs", workload: "small", name: `weft vs tfjs, latency, ${small}`, bar: least(15), formula: { kind: "faster", numerator: side("small", VARIANT.weft, "latency", small), denominator: side("small", VARIANT.tfjs, "latency", small) } },
    { id: "small-64-vs-tfjs-throughput", workload: "small", name: `weft vs tfjs, throughput, ${small}`, bar: INFO, formula: { kind: "faster", numerator: side("small", VARIANT.weft, "throughput", small), denominator: side("small", VARIANT.tfjs, "throughput", small) } },
  );

  const serving = LABEL.serving(sizes.serving);
  const inFlight = sizes.serving.inFlight;
  const sv = (variant: string, method: Method): Side => side("serving", variant, method, serving);
  const ms = (m: Measurement): number | undefined => m.ms;
  out.push(
    { id: "serving-vs-tfjs", workload: "serving", name: `weft vs tfjs, requests/s, ${inFlight} in flight`, bar: least(10), formula: { kind: "rate", numerator: sv(VARIANT.inFlight(VARIANT.weft, inFlight), "throughput"), denominator: sv(VARIANT.inFlight(VARIANT.tfjs, inFlight), "throughput") }, ...stand(`${sizes.serving.requests} requests stand for 256`) },
    { id: "serving-p99-ms", workload: "serving", name: `weft p99 latency (ms), ${inFlight} in flight`, bar: most(5), formula: { kind: "figure", side: sv(VARIANT.p99(VARIANT.inFlight(VARIANT.weft, inFlight)), "latency"), read: ms, unit: "ms" } },
    { id: "serving-p50-ms", workload: "serving", name: `weft p50 latency (ms), ${inFlight} in flight`, bar: INFO, formula: { kind: "figure", side: sv(VARIANT.p50(VARIANT.inFlight(VARIANT.weft, inFlight)), "latency"), read: ms, unit: "ms" } },
    { id: "serving-tfjs-p99-ms", workload: "serving", name: `tfjs p99 latency (ms), ${inFlight} in flight`, bar: INFO, formula: { kind: "figure", side: sv(VARIANT.p99(VARIANT.inFlight(VARIANT.tfjs, inFlight)), "latency"), read: ms, unit: "ms" } },
    { id: "serving-1-in-flight-vs-tfjs", workload: "serving", name: "weft vs tfjs, requests/s, 1 in flight", bar: INFO, formula: { kind: "rate", numerator: sv(VARIANT.inFlight(VARIANT.weft, 1), "throughput"), denominator: sv(VARIANT.inFlight(VARIANT.tfjs, 1), "throughput") } },
  );

  const training = LABEL.training(sizes.training);
  out.push(
    { id: "train-mlp-vs-tfjs", workload: "training", name: `weft vs tfjs (tf.variableGrads + tf.train.adam), steps/s, ${training}`, bar: least(3), formula: { kind: "rate", numerator: side("training", VARIANT.weft, "throughput", training), denominator: side("training", VARIANT.tfjs, "throughput", training) }, ...stand(`batch ${sizes.training.batch} stands for 256`) },
  );
  return out;
}

function find(measurements: readonly Measurement[], s: Side): Measurement | undefined {
  return measurements.find((m) => m.workload === s.workload && m.variant === s.variant && m.method === s.method && m.size === s.size && m.status === "ok");
}

const wrong = (m: Measurement | undefined): boolean => m?.check?.startsWith("WRONG") === true;

/** One run's value of `spec` from that run's `measurements` (no value when a side is missing). */
export function evaluate(spec: TargetSpec, measurements: readonly Measurement[]): { value?: number; wrong: string[]; missing?: string } {
  const f = spec.formula;
  if (f.kind === "figure") {
    const m = find(measurements, f.side);
    if (m === undefined) return { wrong: [], missing: f.side.variant };
    const value = f.read(m);
    return { ...(value === undefined ? { missing: f.side.variant } : { value }), wrong: wrong(m) ? [m.variant] : [] };
  }
  const a = find(measurements, f.numerator);
  const b = find(measurements, f.denominator);
  if (a === undefined || b === undefined) return { wrong: [], missing: a === undefined ? f.numerator.variant : f.denominator.variant };
  const bad = [a, b].filter(wrong).map((m) => m.variant);
  const [top, bottom] = f.kind === "faster" ? [b.ms, a.ms] : [a.value, b.value];
  if (top === undefined || bottom === undefined || !(bottom > 0)) return { wrong: bad, missing: "a figure" };
  return { value: top / bottom, wrong: bad };
}

/** Whether `value` meets `bar` (`undefined` for an informative bar). */
export function meetsBar(bar: Bar, value: number): boolean | undefined {
  switch (bar.at) {
    case "least":
      return value >= bar.bound;
    case "most":
      return value <= bar.bound;
    case "informative":
      return undefined;
  }
}

/**
 * The target over every run: the median of the runs' values, the verdict on that median, and the
 * spread between runs (each run's value, min and max). A run in which the Weft side computed a
 * wrong result makes the target a miss whatever its speed.
 */
export function aggregate(spec: TargetSpec, runs: readonly (readonly Measurement[])[]): Ratio {
  const each = runs.map((ms) => evaluate(spec, ms));
  const values = each.flatMap((e) => (e.value === undefined ? [] : [e.value]));
  const unit = spec.formula.kind === "figure" ? { unit: spec.formula.unit } : {};
  const base = { workload: spec.workload, id: spec.id, name: spec.name, target: spec.bar.text, ...unit };
  const notes = spec.note === undefined ? [] : [spec.note];
  const bad = [...new Set(each.flatMap((e) => e.wrong))];
  if (bad.length > 0) notes.push(`${bad.join(", ")} computed a WRONG result`);
  if (values.length === 0) {
    const missing = each.find((e) => e.missing !== undefined)?.missing ?? "a side";
    return { ...base, note: [`no figure for ${missing}`, ...notes].join("; ") };
  }
  const value = median(values);
  const weftWrong = bad.some((v) => v.startsWith("weft"));
  const verdict = meetsBar(spec.bar, value);
  return {
    ...base,
    value,
    ...(verdict === undefined ? {} : { meets: verdict && !weftWrong }),
    runs: values,
    spread: { min: Math.min(...values), max: Math.max(...values) },
    ...(notes.length === 0 ? {} : { note: notes.join("; ") }),
  };
}
