/**
 * `weft.init`: choosing the device.
 *
 * @module
 */
import { WeftError } from "@weft/environment";
import { type Device, ValueError, setDevice } from "@weft/tensor";
import { type AdapterProbe, type BackendName, type DeviceCreationOptions, createCpuDevice, createWebGpuDevice, plansLoaded, probeAdapter } from "./backends.js";
import { type BackendRequest, type ChoiceReason, decideBackend, describeReason } from "./backend-choice.js";
import { type RemoteInitOptions, connectRemote } from "./remote.js";

/** Options of {@link init}. */
export interface InitOptions extends RemoteInitOptions {
  /**
   * `"auto"` (default): WebGPU on a hardware adapter, else the CPU (also when the only adapter is
   * a software one: see {@link ChoiceReason}). An explicit backend must work.
   * `"remote"`: compute on `weft serve` servers (`url`, `token`; see `@weft/remote`).
   */
  readonly backend?: BackendRequest | "remote";
  /** Replaces the adapter probe (tests, embedding). */
  readonly probe?: () => Promise<AdapterProbe>;
  /** Where the one-line choice is printed (default `console.log`); `null` prints nothing. */
  readonly log?: ((line: string) => void) | null;
  /**
   * Bytes the device's memory may take (a positive integer). Beyond it an allocation reclaims
   * every free page and then fails with a typed, transient `OutOfMemoryError`, before the
   * native allocator aborts (software WebGPU dies with `std::bad_alloc` under memory pressure).
   * Default: none. Local devices only: with `backend: "remote"` it is a `ValueError` (the servers'
   * memory is bounded by `weft serve --max-session-bytes`).
   */
  readonly memoryLimit?: number;
  /**
   * What happens to the device this call replaces as the current one: `"dispose"` (default)
   * releases it — its memory, caches and GPU device; its tensors then throw
   * `DisposedDeviceError` —, `"keep"` leaves it usable (the caller disposes it later).
   */
  readonly previous?: "dispose" | "keep";
  /**
   * Persists the device's execution plans across processes (`weft serve` turns it on); see
   * `DeviceCreationOptions.planCache`. Local devices only. Default false.
   */
  readonly planCache?: DeviceCreationOptions["planCache"];
}

/** The result of the device choice: the device, the reason as printed, and the reason as data. */
export interface DeviceChoice {
  readonly device: Device;
  readonly backend: BackendName | "remote";
  /** `describeReason` of {@link DeviceChoice.why}: what `init` prints after the backend. */
  readonly reason: string;
  /** Why this backend (see {@link ChoiceReason}). */
  readonly why: ChoiceReason;
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
 * Chooses a device without making it current, as `decideBackend` decides (for `"auto"`: a
 * hardware WebGPU adapter, else the CPU — also when the only adapter is a software one, which is
 * slower than the CPU backend); an `"auto"` WebGPU device that cannot be created falls back to
 * the CPU.
 */
export async function chooseDevice(options: InitOptions = {}): Promise<DeviceChoice> {
  const wanted = options.backend ?? "auto";
  const limit = checkMemoryLimit(options.memoryLimit);
  if (wanted === "remote") {
    if (limit !== undefined) {
      throw new ValueError("init", `memoryLimit caps a local device; a remote device's memory is the server's: start weft serve with --max-session-bytes ${limit} instead`);
    }
    const device = await connectRemote(options);
    return { device, backend: "remote", reason: device.label, why: { kind: "requested" } };
  }
  const created: DeviceCreationOptions = {
    ...(limit === undefined ? {} : { memoryLimit: limit }),
    ...(options.planCache === undefined ? {} : { planCache: options.planCache }),
  };
  const probe = wanted === "cpu" ? undefined : await (options.probe ?? probeAdapter)();
  const decision = decideBackend(wanted, probe);
  switch (decision.backend) {
    case "unavailable":
      throw new BackendUnavailableError("webgpu", decision.detail);
    case "cpu":
      return choice(await loaded(createCpuDevice(created)), "cpu", decision.reason);
    case "webgpu":
      try {
        return choice(await createWebGpuDevice(created), "webgpu", decision.reason);
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        if (wanted === "webgpu") throw new BackendUnavailableError("webgpu", why, { cause: error });
        return choice(await loaded(createCpuDevice(created)), "cpu", { kind: "device-failed", detail: why });
      }
    default:
      return decision satisfies never;
  }
}

/** `device` once its persisted plans are loaded. */
async function loaded(device: Device): Promise<Device> {
  await plansLoaded(device);
  return device;
}

/** `limit` when it is a positive integer number of bytes (or absent); else a `ValueError` naming the fix. */
function checkMemoryLimit(limit: number | undefined): number | undefined {
  if (limit === undefined) return undefined;
  if (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit <= 0) {
    throw new ValueError("init", `memoryLimit must be a positive integer number of bytes, got ${String(limit)}; e.g. memoryLimit: 512 * 1024 ** 2`);
  }
  return limit;
}

function choice(device: Device, backend: BackendName, why: ChoiceReason): DeviceChoice {
  return { device, backend, reason: describeReason(why), why };
}

/**
 * Picks the best device ({@link chooseDevice}), makes it the current device, prints one line saying
 * which and why (`weft: using webgpu (NVIDIA …)` / `weft: using cpu (no WebGPU adapter: …)` /
 * `weft: using cpu (the only WebGPU adapter is a software one (…), …)`),
 * and returns it.
 * @throws BackendUnavailableError when an explicitly requested backend cannot run.
 */
export async function init(options: InitOptions = {}): Promise<Device> {
  const choice = await chooseDevice(options);
  const previous = setDevice(choice.device);
  // Re-init releases the device it replaces (+68 MB per WebGPU init otherwise).
  if (previous !== undefined && previous !== choice.device && (options.previous ?? "dispose") === "dispose") previous.dispose();
  const log = options.log === undefined ? (line: string) => console.log(line) : options.log;
  log?.(`weft: using ${choice.backend} (${choice.reason})`);
  return choice.device;
}
