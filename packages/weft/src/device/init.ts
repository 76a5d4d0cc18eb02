/**
 * `weft.init`: choosing the device.
 *
 * @module
 */
import { WeftError, ValueError, checkChoice, checkFunction, checkOptions } from "@weft/environment";
import { type Device, setDevice } from "@weft/tensor";
import { type AdapterProbe, type BackendName, type DeviceCreationOptions, checkDeviceOptions, createCpuDevice, createWebGpuDevice, plansLoaded, probeAdapter } from "./backends.js";
import { type BackendRequest, type ChoiceReason, decideBackend, describeReason } from "./backend-choice.js";
import { type RemoteInitOptions, checkRemoteOptions, connectRemote } from "./remote.js";

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
  return choose(checkInitOptions("chooseDevice", options));
}

/** The backends `init({ backend })` accepts. */
const BACKEND_CHOICES: readonly ("auto" | BackendName | "remote")[] = ["auto", "webgpu", "cpu", "remote"];

/** What `init({ previous })` accepts. */
const PREVIOUS_CHOICES: readonly ("dispose" | "keep")[] = ["dispose", "keep"];

/**
 * `options` checked before anything is probed, created or connected: known keys only, `backend`
 * one of {@link BACKEND_CHOICES}, `probe` a function, `log` a function or `null`, `memoryLimit` a
 * positive integer and `planCache` a boolean or `{ directory }` (local devices only), `previous`
 * one of {@link PREVIOUS_CHOICES}, and the remote options (`url`, `token`, `remote`) only with
 * `backend: "remote"`.
 * @throws ValueError naming `op`, the bad option and what to pass.
 */
function checkInitOptions(op: string, options: unknown): InitOptions {
  const opts = checkOptions(op, options, ["backend", "probe", "log", "memoryLimit", "previous", "planCache", "url", "token", "remote"]);
  const backend = opts.backend === undefined ? "auto" : checkChoice(op, "options.backend", opts.backend, BACKEND_CHOICES);
  if (opts.probe !== undefined) checkFunction(op, "options.probe", opts.probe);
  if (opts.log !== undefined && opts.log !== null) checkFunction(op, "options.log", opts.log);
  if (opts.previous !== undefined) checkChoice(op, "options.previous", opts.previous, PREVIOUS_CHOICES);
  const { memoryLimit } = checkDeviceOptions(op, { memoryLimit: opts.memoryLimit, planCache: opts.planCache });
  if (backend === "remote") {
    if (memoryLimit !== undefined) {
      throw new ValueError(op, `memoryLimit caps a local device; a remote device's memory is the server's: pass --max-session-bytes ${memoryLimit} to weft serve instead`);
    }
    if (opts.planCache !== undefined) {
      throw new ValueError(op, "planCache persists a local device's plans; a remote device's plans are the server's (weft serve persists them): remove planCache");
    }
    checkRemoteOptions(op, opts);
  } else {
    for (const key of ["url", "token", "remote"] as const) {
      if (opts[key] !== undefined) throw new ValueError(op, `options.${key} is for backend: "remote"; pass backend: "remote" with it, or drop it`);
    }
  }
  return opts as InitOptions;
}

/** {@link chooseDevice} once the options were checked. */
async function choose(options: InitOptions): Promise<DeviceChoice> {
  const wanted = options.backend ?? "auto";
  const limit = options.memoryLimit;
  if (wanted === "remote") {
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

function choice(device: Device, backend: BackendName, why: ChoiceReason): DeviceChoice {
  return { device, backend, reason: describeReason(why), why };
}

/**
 * Picks the best device ({@link chooseDevice}), makes it the current device, prints one line saying
 * which and why (`weft: using webgpu (NVIDIA …)` / `weft: using cpu (no WebGPU adapter: …)` /
 * `weft: using cpu (the only WebGPU adapter is a software one (…), …)`),
 * and returns it.
 * @throws BackendUnavailableError when an explicitly requested backend cannot run; ValueError for
 *   an unknown option or backend name (`init({ backend: "metal" })`), before anything is probed
 *   and with the current device unchanged.
 */
export async function init(options: InitOptions = {}): Promise<Device> {
  const choice = await choose(checkInitOptions("init", options));
  const previous = setDevice(choice.device);
  // Re-init releases the device it replaces (+68 MB per WebGPU init otherwise).
  if (previous !== undefined && previous !== choice.device && (options.previous ?? "dispose") === "dispose") previous.dispose();
  const log = options.log === undefined ? (line: string) => console.log(line) : options.log;
  log?.(`weft: using ${choice.backend} (${choice.reason})`);
  return choice.device;
}
