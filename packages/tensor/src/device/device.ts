/**
 * Devices as the user sees them, and the global current device.
 *
 * @module
 */
import { ValueError, checkOptions, describeValue } from "@weft/environment";
import type { DeviceStats, DType, FusionClient, FusionMemory } from "@weft/fusion";
import { NoDeviceError } from "../errors/tensor-errors.js";

/**
 * How a {@link Device} is named. What it can do (dtypes, synchronous reads) is not an option: the
 * backend's runtime reports it (`FusionRuntime.capabilities`).
 */
export interface DeviceOptions {
  /** The backend's name shown in messages and `weft doctor`. Defaults to the runtime's `name`. */
  readonly backend?: string;
  /** A longer description (adapter name, "fused"/"unfused"), for messages. Defaults to `backend`. */
  readonly label?: string;
}

/**
 * Devices created so far per backend name, for {@link Device.name}. **Bound.** One entry per
 * backend name (a handful); counts only grow.
 */
const created = new Map<string, number>();

/**
 * One backend device as the user API sees it: a `FusionDevice` (through its handle-independent
 * `FusionClient` surface) plus what the backend is.
 *
 * @remarks
 * **Why.** A `Tensor` must know which device it lives on, to refuse mixing devices at the call
 * and to name the backend in messages; the `FusionDevice` below stays the one place that records
 * work. **Invariant.** A `Device` never changes its `FusionDevice`; two `Device`s are the same
 * device only when they are the same object.
 */
export class Device {
  /** The fusion device every op on this device is registered with. */
  readonly fusion: FusionClient;
  /** The backend's name (`"webgpu"`, `"cpu"`). */
  readonly backend: string;
  /** A human-readable description (backend and adapter or kernel paths), for logs and reports. */
  readonly label: string;
  /**
   * A short name unique in the process: the backend and the device's ordinal among that backend's
   * devices (`cpu#1`, `cpu#2`, `webgpu#1`). What messages that involve several devices use, so two
   * devices of one backend are never both "cpu".
   */
  readonly name: string;
  /** Whether `dataSync()` may succeed on this device. */
  readonly syncReads: boolean;
  readonly #dtypes: ReadonlySet<DType>;

  /**
   * Wraps `fusion` (a `FusionDevice`) with how it is named.
   * @throws ValueError for a missing fusion device, an unknown option or a mistyped field.
   */
  constructor(fusion: FusionClient, options: DeviceOptions = {}) {
    const op = "new Device";
    if (typeof fusion !== "object" || fusion === null || typeof (fusion as { register?: unknown }).register !== "function" || typeof (fusion as { runtime?: unknown }).runtime !== "object") {
      throw new ValueError(op, `pass a FusionDevice (new FusionDevice(runtime)) first, not ${describeValue(fusion)}`);
    }
    const opts = checkOptions(op, options, ["backend", "label"]);
    if (opts.backend !== undefined && (typeof opts.backend !== "string" || opts.backend === "")) {
      throw new ValueError(op, `pass options.backend as the backend's name (e.g. "webgpu"), not ${describeValue(opts.backend)}`);
    }
    if (opts.label !== undefined && typeof opts.label !== "string") throw new ValueError(op, `pass options.label as a string, not ${describeValue(opts.label)}`);
    this.fusion = fusion;
    const { capabilities } = fusion.runtime;
    this.backend = options.backend ?? fusion.runtime.name;
    this.label = options.label ?? this.backend;
    const ordinal = (created.get(this.backend) ?? 0) + 1;
    created.set(this.backend, ordinal);
    this.name = `${this.backend}#${ordinal}`;
    this.syncReads = capabilities.reads === "async-and-sync";
    this.#dtypes = new Set(capabilities.dtypes);
  }

  /** Whether tensors of `dtype` can live on this device (`f16` needs `shader-f16` on WebGPU). */
  supports(dtype: DType): boolean {
    return this.#dtypes.has(dtype);
  }

  /** The dtypes this device stores. */
  get dtypes(): readonly DType[] {
    return [...this.#dtypes];
  }

  /** Drains the current stream (or `stream`) and waits for its device work. */
  sync(): Promise<void> {
    return this.fusion.sync();
  }

  /** Drains every stream of this device. */
  syncAll(): Promise<void> {
    return this.fusion.syncAll();
  }

  /** Live tensors, handles, streams and bytes of this device. */
  memory(): FusionMemory {
    return this.fusion.memory();
  }

  /** What this device holds and did: pipelines, caches, launches, plans (see {@link @weft/fusion!DeviceStats | DeviceStats}). */
  stats(): DeviceStats {
    return this.fusion.stats();
  }

  /** Gives every free page of this device back to the system; live tensors are untouched. */
  releaseUnused(): void {
    this.fusion.releaseUnused();
  }

  /**
   * Releases the device: its memory, caches and (WebGPU) the `GPUDevice`. Its tensors then throw
   * `DisposedDeviceError` when used. `weft.init()` does this to the device it replaces.
   */
  dispose(): void {
    this.fusion.dispose();
    if (current === this) current = undefined;
  }

  /** `Device(cpu#1: cpu (generated kernels, …))`: the name and the label. */
  toString(): string {
    return `Device(${this.name}: ${this.label})`;
  }
}

/** The device ops use when no `{ device }` option is given. Set by `setDevice` / `weft.init`. */
let current: Device | undefined;

/** Makes `device` the current device (what `weft.init()` does) and returns the previous one. */
export function setDevice(device: Device | undefined): Device | undefined {
  if (device !== undefined && !(device instanceof Device)) {
    throw new ValueError("setDevice", `expected a Device or undefined, got ${describeValue(device)}; pass what weft.init() or weft.device() returns`);
  }
  const previous = current;
  current = device;
  return previous;
}

/**
 * The current device.
 * @throws NoDeviceError when none was chosen (`weft.init()` or `setDevice()` first).
 */
export function device(): Device {
  if (current === undefined) throw new NoDeviceError("device");
  return current;
}

/** The current device, or `undefined` when none was chosen. */
export function tryDevice(): Device | undefined {
  return current;
}

/** `explicit` when given, else the current device; throws `NoDeviceError` naming `op`. */
export function resolveDevice(op: string, explicit: Device | undefined): Device {
  if (explicit !== undefined) return explicit;
  if (current === undefined) throw new NoDeviceError(op);
  return current;
}
