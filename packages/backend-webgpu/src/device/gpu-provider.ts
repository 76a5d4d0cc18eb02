/// <reference types="@webgpu/types" />
import { UnsupportedError } from "@weft/environment";

/** Which native backend Dawn uses in Node; `"browser"` when the platform's `navigator.gpu` is used. */
export type WebGpuBackend = "vulkan" | "opengles" | "browser";

/**
 * The shape of the `webgpu` npm package (Dawn for Node), typed here because it is loaded with a
 * computed specifier (see {@link loadNodeWebGpu}).
 */
interface NodeWebGpuModule {
  create(options: string[]): GPU;
  globals: object;
}

/** The module, once loaded; `undefined` until the first Node request. Never cleared. */
let nodeModule: Promise<NodeWebGpuModule> | undefined;

/**
 * The `navigator.gpu` of a browser or worker, or `undefined` where there is none (Node).
 */
export function browserGpu(): GPU | undefined {
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  return nav?.gpu ?? undefined;
}

/** True when running under Node (where the `webgpu` package can be loaded). */
export function isNode(): boolean {
  const proc = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof proc?.versions?.node === "string";
}

/**
 * Loads the `webgpu` package lazily and installs its globals (`GPUBufferUsage`, …) where the
 * global object lacks them.
 *
 * @remarks
 * **Why a computed specifier.** A literal `import("webgpu")` makes bundlers follow it into a
 * native `.node` addon, which breaks every browser build; the computed one (and
 * `@vite-ignore`) keeps the browser bundle from ever touching it. The browser harness also
 * marks it external.
 * Sets `EGL_PLATFORM=surfaceless` unless already set: Mesa's GLES needs it on machines without a
 * display, and it is harmless elsewhere.
 */
export function loadNodeWebGpu(): Promise<NodeWebGpuModule> {
  if (nodeModule === undefined) {
    const proc = (globalThis as { process?: { env: Record<string, string | undefined> } }).process;
    if (proc !== undefined) proc.env["EGL_PLATFORM"] ||= "surfaceless";
    const specifier = "webgpu";
    nodeModule = (import(/* @vite-ignore */ specifier) as Promise<NodeWebGpuModule>).then(
      (mod) => {
        const target = globalThis as Record<string, unknown>;
        for (const [name, value] of Object.entries(mod.globals)) {
          if (!(name in target)) target[name] = value;
        }
        return mod;
      },
      (error: unknown) => {
        nodeModule = undefined;
        throw new UnsupportedError(
          "WebGPU in Node",
          `the 'webgpu' package could not be loaded (${String(error)}); install it with npm install webgpu`,
        );
      },
    );
  }
  return nodeModule;
}

/** Dawn instances per backend, created once: each `create()` starts a native instance. */
const instances = new Map<"vulkan" | "opengles", GPU>();

/** The Dawn `GPU` object for `backend`, created on first use and kept for the process. */
export async function nodeGpu(backend: "vulkan" | "opengles"): Promise<GPU> {
  const existing = instances.get(backend);
  if (existing !== undefined) return existing;
  const mod = await loadNodeWebGpu();
  const gpu = mod.create([`backend=${backend}`]);
  instances.set(backend, gpu);
  return gpu;
}
