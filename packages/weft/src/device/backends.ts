/**
 * Creating devices for each backend. The only place (with `init.ts`) that imports backends.
 *
 * @remarks
 * **Why the WebGPU backend is loaded lazily.** It pulls in Dawn (`webgpu` in Node) or touches
 * `navigator.gpu`; a CPU-only program, the CLI's `--backend cpu`, and the tests never load it.
 *
 * @module
 */
import { ValueError, checkBoolean, checkChoice, checkInteger, checkOptions, describeValue } from "@weft/environment";
import { cpuKernelReport, createCpuRuntime, type KernelPathChoice } from "@weft/backend-cpu";
import { FusionDevice, type FusionDeviceOptions } from "@weft/fusion";
import { Device } from "@weft/tensor";
import { TuneRelay, attachTuneRelay } from "./tune-progress.js";

/** The backends `init` can choose. */
export type BackendName = "webgpu" | "cpu";

/** Every `kernels` option of {@link createCpuDevice}, for validation. */
const KERNEL_PATH_CHOICES: readonly KernelPathChoice[] = ["auto", "generated", "interpreted"];

/**
 * Creates a CPU device; `fusion: false` runs every op alone (the oracle mode); `kernels` picks how
 * elementwise programs run (default `auto`: generated JavaScript where allowed, else interpreted);
 * `memoryLimit` caps its memory. The label names the kernel paths
 * (`cpu (generated kernels, WebAssembly SIMD matmul)`).
 */
export function createCpuDevice(options: DeviceCreationOptions & { kernels?: KernelPathChoice } = {}): Device {
  const opts = checkOptions("createCpuDevice", options, ["fusion", "kernels", "memoryLimit", "planCache"]);
  const { fusion, memoryLimit } = checkDeviceOptions("createCpuDevice", opts);
  const kernels = opts.kernels === undefined ? "auto" : checkChoice("createCpuDevice", "options.kernels", opts.kernels, KERNEL_PATH_CHOICES);
  const runtime = createCpuRuntime({ fusion, kernels, ...(memoryLimit === undefined ? {} : { memoryLimit }) });
  return new Device(new FusionDevice(runtime, fusionOptions(options, fusion ? "cpu" : "cpu unfused")), {
    label: `cpu${fusion ? "" : " unfused"} (${runtime.kernelPath} kernels, ${cpuKernelReport().matmul === "webassembly-simd" ? "WebAssembly SIMD" : "JavaScript"} matmul)`,
  });
}

/** Options of {@link createCpuDevice} and {@link createWebGpuDevice}. */
export interface DeviceCreationOptions {
  /** `false` runs every op alone (the oracle mode, `weft bench`'s unfused runs). Default true. */
  readonly fusion?: boolean;
  /**
   * Bytes the device's memory pages may take. Beyond it, once every free page was reclaimed, an
   * allocation fails with a typed, transient `OutOfMemoryError` (a read of the tensor it was for
   * rejects with it as the root cause) — before the native allocator aborts. Default: none.
   */
  readonly memoryLimit?: number;
  /**
   * Persists the device's execution plans, so the next process (a restarted server, a reloaded
   * page) starts with them: `true` in the cache folder the autotune results use (`$WEFT_CACHE_DIR`,
   * else the OS temp folder; IndexedDB in browsers), `{ directory }` in that folder. Plans are
   * keyed by the Weft version, the backend and the adapter, and checked as they load
   * (docs/fusion-search.md, "Persisted plans"). Default false.
   */
  readonly planCache?: boolean | { readonly directory?: string };
}

/** The fusion engine's options for `options`, on `adapter` (what persisted plans are keyed by). */
function fusionOptions(options: DeviceCreationOptions, adapter: string): FusionDeviceOptions {
  const plans = options.planCache;
  if (plans === undefined || plans === false) return {};
  return { planCache: { adapter, ...(plans === true || plans.directory === undefined ? {} : { directory: plans.directory }) } };
}

/**
 * Resolves once the persisted plans of `device` are loaded (at once when it persists none): a
 * server or a page then runs its first requests from them.
 */
export async function plansLoaded(device: Device): Promise<void> {
  const fusion = device.fusion as unknown as Partial<FusionDevice<unknown>>;
  await fusion.planCache?.load();
}

/**
 * The {@link DeviceCreationOptions} of `options` checked: `fusion` a boolean, `memoryLimit` a
 * positive integer number of bytes, `planCache` a boolean or `{ directory }` (a string).
 * @throws ValueError naming `op`, the bad option and what to pass.
 */
export function checkDeviceOptions(
  op: string,
  options: { readonly fusion?: unknown; readonly memoryLimit?: unknown; readonly planCache?: unknown },
): { fusion: boolean; memoryLimit: number | undefined } {
  const fusion = checkBoolean(op, "options.fusion", options.fusion) ?? true;
  const memoryLimit = options.memoryLimit === undefined ? undefined : checkInteger(op, "options.memoryLimit (bytes, e.g. 512 * 1024 ** 2)", options.memoryLimit, 1);
  const plans = options.planCache;
  if (plans !== undefined && typeof plans !== "boolean") {
    const { directory } = checkOptions(op, plans, ["directory"]);
    if (directory !== undefined && typeof directory !== "string") {
      throw new ValueError(op, `pass options.planCache as true, false or { directory: "path" }, not a directory of ${describeValue(directory)}`);
    }
  }
  return { fusion, memoryLimit };
}

/**
 * What an adapter probe answers: the shape of `@weft/backend-webgpu`'s `probeWebGpu` result,
 * written here so weft's published types never import the WebGPU backend's (those reference
 * `@webgpu/types`, which need the DOM lib: a Node consumer under `node16` would fail to typecheck).
 * The assignment in {@link probeAdapter} checks that the backend's result still fits.
 */
export interface AdapterProbe {
  readonly available: boolean;
  /** Why not, or the adapter's description. */
  readonly reason: string;
  readonly info?: { readonly description: string; readonly vendor: string; readonly backend: string; readonly software: boolean };
}

/** `@weft/backend-webgpu`, loaded on first use (only its types are imported statically). */
function loadWebGpu(): Promise<typeof import("@weft/backend-webgpu")> {
  return import("@weft/backend-webgpu");
}

/** Looks for a WebGPU adapter without creating a device; never throws. */
export async function probeAdapter(): Promise<AdapterProbe> {
  try {
    return await (await loadWebGpu()).probeWebGpu();
  } catch (error) {
    return { available: false, reason: `the WebGPU backend could not load: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** The WebGPU limits `weft doctor` reports. */
const LIMIT_NAMES = [
  "maxTextureDimension2D", "maxBindGroups", "maxBindingsPerBindGroup", "maxStorageBuffersPerShaderStage",
  "maxUniformBuffersPerShaderStage", "maxUniformBufferBindingSize", "maxStorageBufferBindingSize",
  "minStorageBufferOffsetAlignment", "maxBufferSize", "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX", "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupSizeZ", "maxComputeWorkgroupsPerDimension",
] as const;

/** What `weft doctor` prints about the adapter: its limits and features, from a real device. */
export async function describeWebGpu(): Promise<{ description: string; features: string[]; limits: Record<string, number> }> {
  const gpu = await (await loadWebGpu()).requestWebGpuDevice();
  const limits: Record<string, number> = {};
  // Limits are prototype getters (not enumerable in every implementation): read the standard names.
  for (const key of LIMIT_NAMES) {
    const v: unknown = gpu.limits[key];
    if (typeof v === "number") limits[key] = v;
  }
  return { description: gpu.info.description, features: [...gpu.features].sort(), limits };
}

/**
 * Creates a WebGPU device (`fusion: false` asks the runtime for no fusers, for `weft bench`). The
 * dtypes it stores (`f16` only with `shader-f16`) are what its runtime reports.
 * @throws UnsupportedError when no adapter exists.
 */
export async function createWebGpuDevice(options: DeviceCreationOptions = {}): Promise<Device> {
  checkDeviceOptions("createWebGpuDevice", checkOptions("createWebGpuDevice", options, ["fusion", "memoryLimit", "planCache"]));
  const mod = await loadWebGpu();
  const gpu = await mod.requestWebGpuDevice();
  const relay = new TuneRelay();
  // The device is ours: `Device.dispose()` (and `weft.init()` replacing it) destroys it.
  const runtime = await mod.createWebGpuRuntime({
    device: gpu.device,
    fusion: options.fusion ?? true,
    autotune: { onProgress: relay.emit },
    ownsDevice: true,
    ...(options.memoryLimit === undefined ? {} : { memoryLimit: options.memoryLimit }),
  });
  const fusion = new FusionDevice(runtime, fusionOptions(options, gpu.info.description));
  await fusion.planCache.load();
  const device = new Device(fusion, { label: `webgpu${options.fusion === false ? " unfused" : ""} (${gpu.info.description})` });
  attachTuneRelay(device, relay);
  return device;
}
