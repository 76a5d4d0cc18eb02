/**
 * `weft doctor`: what this machine offers — the WebGPU adapter (or why there is none), its
 * limits and features, and which backend `init()` picks and why.
 *
 * @module
 */
import { invariant } from "@weft/environment";
import type { AdapterProbe } from "../device/backends.js";
import { describeWebGpu, probeAdapter } from "../device/backends.js";
import { type ChoiceReason, decideBackend, describeReason } from "../device/backend-choice.js";
import type { Output } from "./progress.js";
import { describeCpuKernels } from "@weft/backend-cpu";

/** Options of {@link runDoctor}. */
export interface DoctorOptions {
  readonly out: Output;
  /** Replaces the adapter probe (tests). */
  readonly probe?: () => Promise<AdapterProbe>;
  /** Replaces the device description (tests); by default a real device is requested. */
  readonly describe?: typeof describeWebGpu;
}

/** What {@link runDoctor} found: the backend `init({ backend: "auto" })` would choose, and why. */
export interface DoctorReport {
  readonly backend: "webgpu" | "cpu";
  readonly why: ChoiceReason;
}

/**
 * Prints the report and resolves with the choice `init({ backend: "auto" })` makes here, decided
 * by the same rule ({@link decideBackend}), so the two never disagree.
 */
export async function runDoctor(options: DoctorOptions): Promise<DoctorReport> {
  const { out } = options;
  out.write(`node ${process.version} on ${process.platform}/${process.arch}\n`);
  out.write(`cpu backend kernels: ${describeCpuKernels()}\n`);
  const probe = await (options.probe ?? probeAdapter)();
  const decision = decideBackend("auto", probe);
  if (!probe.available) {
    out.write(`webgpu adapter: none (${probe.reason})\n`);
  } else {
    const info = probe.info;
    const details = [info?.software === true ? "software" : "", info?.vendor ? `vendor ${info.vendor}` : "", info?.backend ? `via ${info.backend}` : ""];
    out.write(`webgpu adapter: ${info?.description ?? probe.reason} (${details.filter((d) => d !== "").join(", ") || "no details"})\n`);
    try {
      const gpu = await (options.describe ?? describeWebGpu)();
      out.write(`features: ${gpu.features.join(", ") || "(none)"}\n`);
      out.write("limits:\n");
      for (const [k, v] of Object.entries(gpu.limits)) out.write(`  ${k}: ${v}\n`);
    } catch (error) {
      const why: ChoiceReason = { kind: "device-failed", detail: error instanceof Error ? error.message : String(error) };
      return chosen(out, { backend: "cpu", why });
    }
  }
  invariant(decision.backend !== "unavailable", "decideBackend answered unavailable for auto");
  return chosen(out, { backend: decision.backend, why: decision.reason });
}

function chosen(out: Output, report: DoctorReport): DoctorReport {
  out.write(`chosen backend: ${report.backend} (${describeReason(report.why)})\n`);
  return report;
}
