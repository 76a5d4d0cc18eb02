/// <reference types="@webgpu/types" preserve="true" />
import { UnsupportedError } from "@weft/environment";
import { browserGpu, isNode, missingGlesPackages, nodeGpu, vulkanLoaderPresent, type WebGpuBackend } from "./gpu-provider.js";

/**
 * Which backend to ask Dawn for in Node. `"auto"` tries Vulkan (a real GPU) first when a Vulkan
 * loader is present (`vulkanLoaderPresent`), then Mesa's software OpenGL ES. Ignored in
 * browsers, where `navigator.gpu` decides.
 */
export type WebGpuBackendChoice = "opengles" | "vulkan" | "auto";

/** Options of {@link requestWebGpuDevice} and {@link probeWebGpu}. */
export interface WebGpuDeviceOptions {
  /** Node only; default `"auto"` (see {@link WebGpuBackendChoice}). */
  readonly backend?: WebGpuBackendChoice;
  /** Passed to `requestAdapter`. */
  readonly powerPreference?: GPUPowerPreference;
}

/** What an adapter is, for logs, `weft doctor` and the choice of tolerances. */
export interface WebGpuAdapterDescription {
  /** The adapter's description (e.g. `"OpenGL ES 3.2 Mesa 22.3.6"`), or its device name. */
  readonly description: string;
  /** The vendor, possibly empty (software adapters often report none). */
  readonly vendor: string;
  /** The Dawn backend in Node, `"browser"` in browsers. */
  readonly backend: WebGpuBackend;
  /**
   * True for CPU implementations (llvmpipe, SwiftShader, lavapipe, fallback adapters): there,
   * `queue.submit()` runs synchronously and compatibility limits apply.
   */
  readonly software: boolean;
}

/**
 * A device ready for `WebGpuServer`: the device, the adapter it came from, and what they offer.
 *
 * @remarks
 * **Invariant.** `limits` and `features` are the *device's* (what was granted), which may exceed
 * the WebGPU defaults because the device is requested with the adapter's limits.
 */
export interface WebGpuDevice {
  readonly device: GPUDevice;
  readonly adapter: GPUAdapter;
  readonly info: WebGpuAdapterDescription;
  readonly limits: GPUSupportedLimits;
  readonly features: ReadonlySet<string>;
}

/**
 * The limits requested at the adapter's maximum: the ones the server and the codegen size their
 * pages, bindings and work groups by. Everything else keeps the WebGPU default.
 */
export const REQUESTED_LIMITS = [
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxStorageBuffersPerShaderStage",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupSizeZ",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupStorageSize",
  "maxComputeWorkgroupsPerDimension",
] as const;

/** Optional features requested when the adapter has them. */
export const OPTIONAL_FEATURES = ["shader-f16", "timestamp-query"] as const;

/** Adapters whose description marks a CPU implementation. */
const SOFTWARE_ADAPTER = /llvmpipe|softpipe|lavapipe|swiftshader|software|basic render|warp/i;

/** An adapter found for a request, or why none was. */
type AdapterSearch =
  | { readonly kind: "found"; readonly adapter: GPUAdapter; readonly backend: WebGpuBackend }
  | { readonly kind: "none"; readonly reason: string };

/**
 * Finds an adapter. Order:
 * 1. in a browser or worker: `navigator.gpu` (core, then compatibility feature level);
 * 2. in Node: for `"auto"`, Dawn's Vulkan then Dawn's OpenGL ES (compatibility feature level);
 *    otherwise only the named backend.
 */
async function findAdapter(options: WebGpuDeviceOptions): Promise<AdapterSearch> {
  const base: GPURequestAdapterOptions =
    options.powerPreference === undefined ? {} : { powerPreference: options.powerPreference };
  const navGpu = browserGpu();
  if (navGpu !== undefined) {
    const adapter =
      (await navGpu.requestAdapter(base)) ??
      (await navGpu.requestAdapter({ ...base, featureLevel: "compatibility" }));
    return adapter === null
      ? { kind: "none", reason: "navigator.gpu returned no adapter (WebGPU disabled or blocklisted)" }
      : { kind: "found", adapter, backend: "browser" };
  }
  if (!isNode()) {
    return { kind: "none", reason: "no navigator.gpu in this environment and not running under Node" };
  }
  const choice = options.backend ?? "auto";
  const order: ("vulkan" | "opengles")[] =
    choice !== "auto" ? [choice] : vulkanLoaderPresent() ? ["vulkan", "opengles"] : ["opengles"];
  const tried: string[] = [];
  for (const backend of order) {
    let adapter: GPUAdapter | null;
    try {
      const gpu = await nodeGpu(backend);
      adapter = await gpu.requestAdapter(
        backend === "opengles" ? { ...base, featureLevel: "compatibility" } : base,
      );
    } catch (error) {
      if (error instanceof UnsupportedError) return { kind: "none", reason: error.message };
      tried.push(`${backend}: ${String(error)}`);
      continue;
    }
    if (adapter !== null) return { kind: "found", adapter, backend };
    tried.push(`${backend}: no adapter`);
  }
  // Advice only where it helps: install the OpenGL ES packages that are missing, else say they are there.
  const missing = order.includes("opengles") ? missingGlesPackages() : undefined;
  const advice =
    missing === undefined
      ? ""
      : missing.length > 0
        ? `; for OpenGL ES install ${missing.join(" ")}`
        : "; the OpenGL ES libraries are installed (EGL_LOG_LEVEL=debug shows why Mesa made no context)";
  return { kind: "none", reason: `Dawn found no adapter (${tried.join("; ")})${advice}` };
}

/** Describes `adapter` (see {@link WebGpuAdapterDescription}). */
export function describeAdapter(adapter: GPUAdapter, backend: WebGpuBackend): WebGpuAdapterDescription {
  const info = adapter.info;
  const description = info.description || info.device || info.architecture || "unknown adapter";
  const software =
    info.isFallbackAdapter === true ||
    SOFTWARE_ADAPTER.test(`${info.description} ${info.device} ${info.vendor} ${info.architecture}`);
  return { description, vendor: info.vendor, backend, software };
}

/**
 * Requests a WebGPU device with the adapter's limits and the optional features it has.
 *
 * @remarks
 * In Node it loads the `webgpu` package lazily (Dawn; see {@link WebGpuBackendChoice}); in
 * browsers it uses `navigator.gpu`. Each call returns a new device, so a lost device can be
 * replaced by calling it again.
 * @throws UnsupportedError when no adapter exists, naming what was tried and how to fix it.
 */
export async function requestWebGpuDevice(options: WebGpuDeviceOptions = {}): Promise<WebGpuDevice> {
  const found = await findAdapter(options);
  if (found.kind === "none") throw new UnsupportedError("a WebGPU adapter", found.reason);
  const { adapter, backend } = found;
  const requiredLimits: Record<string, number> = {};
  const adapterLimits = adapter.limits as unknown as Record<string, number | undefined>;
  for (const name of REQUESTED_LIMITS) {
    const value = adapterLimits[name];
    if (typeof value === "number") requiredLimits[name] = value;
  }
  const requiredFeatures = OPTIONAL_FEATURES.filter((f) => adapter.features.has(f));
  const device = await adapter.requestDevice({
    requiredLimits,
    requiredFeatures,
    label: "weft",
  });
  return {
    device,
    adapter,
    info: describeAdapter(adapter, backend),
    limits: device.limits,
    features: new Set(device.features),
  };
}

/** The answer of {@link probeWebGpu}. */
export interface WebGpuProbe {
  /** True when an adapter exists (a device can then be requested). */
  readonly available: boolean;
  /** Why not, or the adapter's description when available. */
  readonly reason: string;
  /** The adapter found, when available. */
  readonly info?: WebGpuAdapterDescription;
}

/**
 * Whether WebGPU is usable here, without throwing and without creating a device (the adapter
 * found is not consumed). For weft's automatic device choice and `weft doctor`.
 */
export async function probeWebGpu(options: WebGpuDeviceOptions = {}): Promise<WebGpuProbe> {
  try {
    const found = await findAdapter(options);
    if (found.kind === "none") return { available: false, reason: found.reason };
    const info = describeAdapter(found.adapter, found.backend);
    return { available: true, reason: `${info.backend}: ${info.description}`, info };
  } catch (error) {
    return { available: false, reason: `probing WebGPU failed: ${String(error)}` };
  }
}
