/**
 * `weft.init`: choosing the device.
 *
 * @module
 */
import { WeftError } from "@weft/environment";
import { type Device, setDevice } from "@weft/tensor";
import { type AdapterProbe, type BackendName, createCpuDevice, createWebGpuDevice, probeAdapter } from "./backends.js";

/** Options of {@link init}. */
export interface InitOptions {
  /** `"auto"` (default): WebGPU when an adapter exists, else CPU. An explicit backend must work. */
  readonly backend?: "auto" | BackendName;
  /** Replaces the adapter probe (tests, embedding). */
  readonly probe?: () => Promise<AdapterProbe>;
  /** Where the one-line choice is printed (default `console.log`); `null` prints nothing. */
  readonly log?: ((line: string) => void) | null;
}

/** The result of the device choice: the device and the reason, as printed. */
export interface DeviceChoice {
  readonly device: Device;
  readonly backend: BackendName;
  readonly reason: string;
}

/**
 * An explicitly requested backend that cannot run here (no adapter, no runtime in this build).
 * `init({ backend: "auto" })` falls back to the CPU instead.
 */
export class BackendUnavailableError extends WeftError {
  readonly backend: BackendName;

  constructor(backend: BackendName, reason: string, options?: ErrorOptions) {
    super("backend-unavailable", `init: the ${backend} backend is unavailable (${reason}); use init({ backend: "auto" }) or "cpu"`, options);
    this.backend = backend;
  }
}

/**
 * Chooses a device without making it current. Resolution order for `"auto"`:
 * 1. WebGPU when the probe finds an adapter and the device is created;
 * 2. else the CPU, with the reason WebGPU was not used.
 */
export async function chooseDevice(options: InitOptions = {}): Promise<DeviceChoice> {
  const wanted = options.backend ?? "auto";
  if (wanted === "cpu") return { device: createCpuDevice(), backend: "cpu", reason: "requested" };
  const probe = await (options.probe ?? probeAdapter)();
  if (!probe.available) {
    if (wanted === "webgpu") throw new BackendUnavailableError("webgpu", `no WebGPU adapter: ${probe.reason}`);
    return { device: createCpuDevice(), backend: "cpu", reason: `no WebGPU adapter: ${probe.reason}` };
  }
  try {
    const device = await createWebGpuDevice();
    return { device, backend: "webgpu", reason: probe.info?.description ?? probe.reason };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    if (wanted === "webgpu") throw new BackendUnavailableError("webgpu", why, { cause: error });
    return { device: createCpuDevice(), backend: "cpu", reason: `WebGPU device creation failed: ${why}` };
  }
}

/**
 * Picks the best device (WebGPU, else CPU), makes it the current device, prints one line saying
 * which and why (`weft: using webgpu (NVIDIA …)` / `weft: using cpu (no WebGPU adapter: …)`),
 * and returns it.
 * @throws BackendUnavailableError when an explicitly requested backend cannot run.
 */
export async function init(options: InitOptions = {}): Promise<Device> {
  const choice = await chooseDevice(options);
  setDevice(choice.device);
  const log = options.log === undefined ? (line: string) => console.log(line) : options.log;
  log?.(`weft: using ${choice.backend} (${choice.reason})`);
  return choice.device;
}
