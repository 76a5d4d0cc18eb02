/**
 * What a benchmark run records and how it is printed: one {@link Measurement} per (workload,
 * variant, method), one {@link Ratio} per comparison that counts, and the table and JSON built
 * from them.
 *
 * @remarks
 * **Why ratios.** Absolute figures depend on the machine (the software adapter here is thousands of
 * times slower than the H200); docs/performance.md states its targets as ratios measured side by side in
 * the same process, so the report leads with those.
 *
 * @module
 */

import { NOT_SELECTED } from "../context.js";

/** How a time was taken (docs/performance.md). */
export type Method =
  /** Many iterations back to back, one wait at the end; the figure is time per iteration. */
  | "throughput"
  /** One wait per iteration; the figure is the median iteration. */
  | "latency"
  /** Host time only (recording work); no wait for the device is inside the timed region. */
  | "host"
  /** Not a time: a count or a byte figure read from the engine. */
  | "count";

/** One measured (or unavailable) variant of a workload. */
export interface Measurement {
  readonly workload: string;
  /** What ran: `"weft fused"`, `"handwritten WGSL"`, `"tfjs"`, … */
  readonly variant: string;
  readonly method: Method;
  /** The problem size, as printed (`"2^24 f32"`, `"2048²"`). */
  readonly size: string;
  /** `"ok"`, or why there is no figure (`"unavailable: …"`, `"failed: …"`). */
  readonly status: string;
  /** Median milliseconds per iteration (time methods), absent otherwise. */
  readonly ms?: number;
  /** Every sample the median was taken from, in milliseconds per iteration. */
  readonly samples?: readonly number[];
  /** The derived figure (`GB/s`, `TFLOP/s`, `ops/s`, `bytes`, `explorations`). */
  readonly value?: number;
  readonly unit?: string;
  /** What the correctness check found (`"ok (max rel err 2e-7)"`, `"WRONG: …"`). */
  readonly check?: string;
  /** Which whole run (`--runs`) took it, from 0; absent in a single run. */
  readonly run?: number;
}

/** A comparison that counts, measured side by side in this run. */
export interface Ratio {
  readonly workload: string;
  /** A stable name for tracking the ratio across runs (`cpu-matmul-512-vs-tfjs-cpu`), when it has one. */
  readonly id?: string;
  /** What is compared, `"weft fused / handwritten WGSL (throughput)"`. */
  readonly name: string;
  /** The ratio (higher is better unless `lowerIsBetter`), or absent when a side is missing. */
  readonly value?: number;
  /** The docs/performance.md target, as printed (`"≥ 0.95"`). */
  readonly target: string;
  /** Whether `value` meets the target; absent when no value. */
  readonly meets?: boolean;
  /** Why there is no value, or a remark (`"software adapter: not comparable"`). */
  readonly note?: string;
  /** How `value` is printed when it is not a ratio (`"explorations"`, `"µs/op"`); default `×`. */
  readonly unit?: string;
  /** The value of each run (`--runs`) that had one; `value` is their median. */
  readonly runs?: readonly number[];
  /** The spread between runs: the least and greatest of {@link Ratio.runs}. */
  readonly spread?: { readonly min: number; readonly max: number };
}

/**
 * Collects the run's measurements and ratios, in the order they were taken.
 *
 * @remarks **Bound.** Grows by a few entries per workload; a run has seven workloads.
 */
export class Report {
  readonly measurements: Measurement[] = [];
  readonly ratios: Ratio[] = [];

  /**
   * Records a measurement and echoes it as one line, so a long run shows progress. A row of a
   * library left out of this process (`--peers`; {@link NOT_SELECTED}) is not recorded.
   */
  add(m: Measurement): Measurement {
    if (m.status === `unavailable: ${NOT_SELECTED}`) return m;
    this.measurements.push(m);
    console.log(`  ${m.workload} · ${m.variant} · ${m.method} · ${m.size}: ${describe(m)}`);
    return m;
  }

  /** The measurement of `variant`/`method` in `workload` (and `size`), when it has a figure. */
  find(workload: string, variant: string, method: Method, size?: string): Measurement | undefined {
    return this.measurements.find(
      (m) => m.workload === workload && m.variant === variant && m.method === method && (size === undefined || m.size === size) && m.status === "ok",
    );
  }

  /**
   * Records `numerator / denominator` of two figures against `target` (`min`: the least value
   * that meets it). With `time: true` the figures are times and the ratio is inverted
   * (`denominator.ms / numerator.ms`: how many times faster the numerator is). With `info: true`
   * the ratio is recorded without a verdict.
   */
  ratio(workload: string, name: string, numerator: Measurement | undefined, denominator: Measurement | undefined, target: { text: string; min: number }, options: { time?: boolean; note?: string; id?: string; info?: boolean } = {}): void {
    const id = options.id === undefined ? {} : { id: options.id };
    const a = options.time === true ? denominator?.ms : numerator?.value;
    const b = options.time === true ? numerator?.ms : denominator?.value;
    if (a === undefined || b === undefined || b <= 0) {
      const missing = numerator === undefined ? "numerator" : "denominator";
      this.ratios.push({ workload, ...id, name, target: target.text, note: `no figure for the ${missing}${options.note === undefined ? "" : `; ${options.note}`}` });
      return;
    }
    const value = a / b;
    const notes: string[] = options.note === undefined ? [] : [options.note];
    const numeratorWrong = numerator?.check?.startsWith("WRONG") === true;
    if (numeratorWrong) notes.push(`${numerator?.variant ?? "numerator"} computed a WRONG result`);
    if (denominator?.check?.startsWith("WRONG") === true) notes.push(`${denominator.variant} computed a WRONG result`);
    const meets = !numeratorWrong && value >= target.min;
    // An informative ratio (`info`) has no verdict.
    this.ratios.push({ workload, ...id, name, value, target: target.text, ...(options.info === true ? {} : { meets }), ...(notes.length === 0 ? {} : { note: notes.join("; ") }) });
  }

  /** Records a ratio computed by the workload itself (counts, byte ratios). */
  addRatio(r: Ratio): void {
    this.ratios.push(r);
  }
}

/** One measurement's figure as text. */
export function describe(m: Measurement): string {
  if (m.status !== "ok") return m.status;
  const parts: string[] = [];
  if (m.ms !== undefined) parts.push(`${formatMs(m.ms)}`);
  if (m.value !== undefined) parts.push(`${formatNumber(m.value)} ${m.unit ?? ""}`.trim());
  if (m.check !== undefined) parts.push(`check ${m.check}`);
  return parts.join(", ");
}

/** Milliseconds with three significant digits, switching to µs below 1 ms. */
export function formatMs(ms: number): string {
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  return ms >= 1 ? `${ms.toPrecision(3)} ms` : `${(ms * 1000).toPrecision(3)} µs`;
}

/** A number with three significant digits, with k/M/G suffixes for large values. */
export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const abs = Math.abs(v);
  if (abs >= 1e9) return `${(v / 1e9).toPrecision(3)}G`;
  if (abs >= 1e6) return `${(v / 1e6).toPrecision(3)}M`;
  if (abs >= 1e4) return `${(v / 1e3).toPrecision(3)}k`;
  if (abs === 0 || abs >= 0.01) return Number(v.toPrecision(3)).toString();
  return v.toExponential(2);
}

function pad(s: string, n: number): string {
  return s.length >= n ? s : s + " ".repeat(n - s.length);
}

/** Prints the measurements as one table per workload, then the ratios. */
export function printReport(report: Report, header: string): void {
  const out: string[] = ["", header, ""];
  const workloads = [...new Set(report.measurements.map((m) => m.workload))];
  for (const w of workloads) {
    out.push(`── ${w} ──`);
    const rows = report.measurements.filter((m) => m.workload === w);
    const name = (m: Measurement): string => (m.run === undefined ? m.variant : `run ${m.run + 1}: ${m.variant}`);
    const width = Math.max(...rows.map((m) => name(m).length), 8);
    const sizeWidth = Math.max(...rows.map((m) => m.size.length), 4);
    for (const m of rows) {
      const time = m.status === "ok" && m.ms !== undefined ? formatMs(m.ms) : "";
      const fig = m.status === "ok" && m.value !== undefined ? `${formatNumber(m.value)} ${m.unit ?? ""}` : "";
      const tail = m.status !== "ok" ? m.status : m.check === undefined ? "" : `check ${m.check}`;
      out.push(`  ${pad(name(m), width)}  ${pad(m.method, 10)}  ${pad(m.size, sizeWidth)}  ${pad(time, 10)}  ${pad(fig, 16)}  ${tail}`);
    }
    out.push("");
  }
  out.push("── ratios (side by side, this run) ──");
  const nameWidth = Math.max(...report.ratios.map((r) => r.name.length + (r.id === undefined ? 0 : r.id.length + 2)), 10);
  for (const r of report.ratios) {
    const show = (v: number): string => (r.unit === undefined ? `${formatNumber(v)}×` : `${formatNumber(v)} ${r.unit}`);
    const value = r.value === undefined ? "—" : show(r.value);
    const verdict = r.meets === undefined ? "n/a" : r.meets ? "meets" : "MISSES";
    const spread = r.spread === undefined || (r.runs?.length ?? 0) < 2 ? "" : `runs ${formatNumber(r.spread.min)}–${formatNumber(r.spread.max)}`;
    const id = r.id === undefined ? "" : `${r.id}: `;
    out.push(`  ${pad(id + r.name, nameWidth)}  ${pad(value, 10)}  target ${pad(r.target, 8)}  ${pad(verdict, 6)}  ${pad(spread, 16)}  ${r.note ?? ""}`.trimEnd());
  }
  console.log(out.join("\n"));
}
