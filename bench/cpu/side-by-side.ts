/**
 * The shape every CPU workload shares: Weft, TF.js CPU and TF.js WebAssembly run the same work,
 * each iteration followed by its read, and two ratios of medians are recorded — the floor
 * against TF.js CPU and the goal against TF.js WebAssembly (issue "The CPU backend at speed").
 *
 * @module
 */
import type { Measurement } from "../harness/report.js";
import { measureVariant, pick, type VariantRun } from "../harness/variant.js";
import type { TfHostPeer } from "../peers/tfjs-host.js";
import type { CpuBenchContext, WeftCpu } from "./cpu-context.js";

/** A target as the report prints it and the least ratio that meets it; `undefined`: informative only. */
export interface Target {
  readonly text: string;
  readonly min: number;
}

/** One CPU workload run three ways. */
export interface SideBySide {
  readonly workload: string;
  /** The problem size, as printed. */
  readonly size: string;
  /** The ratio ids' stem: `cpu-<stem>-vs-tfjs-cpu`, `cpu-<stem>-vs-tfjs-wasm`. */
  readonly id: string;
  readonly weft: (w: WeftCpu) => Promise<VariantRun> | VariantRun;
  /** The same work in TF.js (the active backend is already the variant's). */
  readonly tf: (p: TfHostPeer) => Promise<VariantRun> | VariantRun;
  /** Floor: Weft vs TF.js CPU. */
  readonly floor: Target;
  /** Goal: Weft vs TF.js WebAssembly (`undefined`: recorded, no target). */
  readonly goal: Target | undefined;
  /** A figure derived from a time (requests/s, GFLOP/s). */
  readonly figure?: (ms: number) => { value: number; unit: string };
  /** Untimed samples before the timed ones, when the section's default is not enough (all three libraries get them). */
  readonly warmup?: number;
}

/** Runs `spec` on the three libraries and records the two ratios (by latency: each sample ends with its read). */
export async function sideBySide(ctx: CpuBenchContext, spec: SideBySide): Promise<void> {
  const repeats = spec.warmup === undefined ? ctx.repeats : { ...ctx.repeats, warmup: spec.warmup };
  const common = { workload: spec.workload, size: spec.size, repeats, methods: ["latency"] as const, ...(spec.figure === undefined ? {} : { figure: spec.figure }) };
  const weft = await measureVariant(ctx, { ...common, variant: "weft cpu", peer: ctx.weft, setup: spec.weft });
  const tfVariant = async (variant: string, peer: CpuBenchContext["tfCpu"]): Promise<Measurement[]> =>
    measureVariant(ctx, {
      ...common,
      variant,
      peer,
      setup: async (p) => {
        await p.use();
        const run = await spec.tf(p);
        const prepare = run.timed.prepare;
        // Another variant may have switched TF.js's backend since: switch back before every sample (untimed).
        return { ...run, timed: { ...run.timed, prepare: async (steps: number) => { await p.use(); await prepare?.(steps); } } };
      },
    });
  const tfCpu = await tfVariant("tfjs cpu", ctx.tfCpu);
  const tfWasm = await tfVariant("tfjs wasm", ctx.tfWasm);
  const r = ctx.report;
  r.ratio(spec.workload, `weft vs tfjs cpu, ${spec.size}`, pick(weft, "latency"), pick(tfCpu, "latency"), spec.floor, { time: true, id: `cpu-${spec.id}-vs-tfjs-cpu` });
  r.ratio(spec.workload, `weft vs tfjs wasm, ${spec.size}`, pick(weft, "latency"), pick(tfWasm, "latency"), spec.goal ?? { text: "info", min: 0 }, { time: true, id: `cpu-${spec.id}-vs-tfjs-wasm`, info: spec.goal === undefined });
}
