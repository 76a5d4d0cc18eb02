/**
 * `weft doctor`: what this machine offers — the WebGPU adapter (or why there is none), its
 * limits and features, and which backend `init()` picks and why.
 *
 * @module
 */
import type { AdapterProbe } from "../device/backends.js";
import { describeWebGpu, probeAdapter } from "../device/backends.js";
import type { Output } from "./progress.js";

/** Options of {@link runDoctor}. */
export interface DoctorOptions {
  readonly out: Output;
  /** Replaces the adapter probe (tests). */
  readonly probe?: () => Promise<AdapterProbe>;
}

/** Prints the report; resolves with the backend `init({ backend: "auto" })` would choose. */
export async function runDoctor(options: DoctorOptions): Promise<"webgpu" | "cpu"> {
  const { out } = options;
  out.write(`node ${process.version} on ${process.platform}/${process.arch}\n`);
  const probe = await (options.probe ?? probeAdapter)();
  if (!probe.available) {
    out.write(`webgpu adapter: none (${probe.reason})\n`);
    out.write(`chosen backend: cpu (no WebGPU adapter: ${probe.reason})\n`);
    return "cpu";
  }
  const info = probe.info;
  out.write(`webgpu adapter: ${info?.description ?? probe.reason}${info?.vendor ? ` [${info.vendor}]` : ""}${info?.software ? " (software)" : ""}\n`);
  if (options.probe === undefined) {
    try {
      const gpu = await describeWebGpu();
      out.write(`features: ${gpu.features.join(", ") || "(none)"}\n`);
      out.write("limits:\n");
      for (const [k, v] of Object.entries(gpu.limits)) out.write(`  ${k}: ${v}\n`);
    } catch (error) {
      out.write(`device request failed: ${error instanceof Error ? error.message : String(error)}\n`);
      out.write(`chosen backend: cpu (WebGPU device creation failed)\n`);
      return "cpu";
    }
  }
  out.write(`chosen backend: webgpu (${info?.description ?? probe.reason})\n`);
  return "webgpu";
}
