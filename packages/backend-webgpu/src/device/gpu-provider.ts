/// <reference types="@webgpu/types" preserve="true" />
import manifest from "#manifest" with { type: "json" };
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

/** Where Linux distributions install shared libraries, besides `LD_LIBRARY_PATH`. */
const LIBRARY_DIRS = [
  "/usr/lib/x86_64-linux-gnu",
  "/usr/lib/aarch64-linux-gnu",
  "/usr/lib64",
  "/usr/lib",
  "/usr/local/lib",
];

/** The Node process and `node:fs`, or `undefined` outside Node. */
function nodeFs(): { env: Record<string, string | undefined>; platform: string | undefined; fs: { existsSync(path: string): boolean } | undefined } | undefined {
  const proc = (
    globalThis as {
      process?: { platform?: string; env: Record<string, string | undefined>; getBuiltinModule?: (id: string) => unknown };
    }
  ).process;
  if (proc === undefined) return undefined;
  return { env: proc.env, platform: proc.platform, fs: proc.getBuiltinModule?.("node:fs") as { existsSync(path: string): boolean } | undefined };
}

/** Whether `file` sits in `LD_LIBRARY_PATH` or a standard library folder; `undefined` when unknowable. */
function libraryPresent(file: string): boolean | undefined {
  const node = nodeFs();
  if (node?.fs === undefined || node.platform !== "linux") return undefined;
  const dirs = [...(node.env["LD_LIBRARY_PATH"] ?? "").split(":").filter((d) => d !== ""), ...LIBRARY_DIRS];
  const fs = node.fs;
  return dirs.some((dir) => fs.existsSync(`${dir}/${file}`));
}

/**
 * Whether Dawn can load Vulkan here: off Linux always true (Dawn decides), on Linux true when a
 * Vulkan driver is named in the environment (`VK_DRIVER_FILES`, `VK_ICD_FILENAMES`) or
 * `libvulkan.so.1` sits in `LD_LIBRARY_PATH` or a standard library folder.
 *
 * @remarks
 * **Why.** Asking Dawn for Vulkan without a loader works (it falls through to OpenGL ES) but prints
 * a native warning on every device request, which `weft demo` and `weft doctor` users would see on
 * every GPU-less machine. A false negative only means OpenGL ES is tried first.
 */
export function vulkanLoaderPresent(): boolean {
  const node = nodeFs();
  if (node === undefined || node.platform !== "linux") return true;
  if (node.env["VK_DRIVER_FILES"] || node.env["VK_ICD_FILENAMES"]) return true;
  return libraryPresent("libvulkan.so.1") ?? true;
}

/** The Debian packages Dawn's OpenGL ES backend needs, with the library each one installs. */
const GLES_PACKAGES = [
  { name: "libegl1", file: "libEGL.so.1" },
  { name: "libegl-mesa0", file: "libEGL_mesa.so.0" },
  { name: "libgles2", file: "libGLESv2.so.2" },
] as const;

/**
 * The Debian packages of Dawn's OpenGL ES backend whose library cannot be found here (empty when
 * all are present), so advice to install them is given only when it helps; `undefined` off Linux,
 * where the packages do not apply.
 */
export function missingGlesPackages(): string[] | undefined {
  if (libraryPresent(GLES_PACKAGES[0].file) === undefined) return undefined;
  return GLES_PACKAGES.filter((p) => libraryPresent(p.file) === false).map((p) => p.name);
}

/** True when running under Node (where the `webgpu` package can be loaded). */
export function isNode(): boolean {
  const proc = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof proc?.versions?.node === "string";
}

/** The `webgpu` versions this package works with (its optional peer dependency). */
export const WEBGPU_PEER_RANGE: string = manifest.peerDependencies.webgpu;

/**
 * The error for a failed `import("webgpu")`: not installed (it is an optional peer, so CPU-only and
 * browser installs leave it out), or installed but its native part failed to load.
 */
export function webGpuPackageError(error: unknown): UnsupportedError {
  const code = (error as { code?: unknown } | null)?.code;
  const missing = (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") && /['"]webgpu['"]/.test(String(error));
  if (missing) {
    return new UnsupportedError(
      "WebGPU in Node",
      `the optional peer package 'webgpu' (Dawn, about 130 MB) is not installed; add it with \`npm install webgpu@${WEBGPU_PEER_RANGE}\`, ` +
        "or use the CPU backend (init() picks it automatically)",
      { cause: error },
    );
  }
  return new UnsupportedError(
    "WebGPU in Node",
    `the 'webgpu' package is installed but could not be loaded (${String(error)}); reinstall it (\`npm install webgpu@${WEBGPU_PEER_RANGE}\`) ` +
      "and check that its native library matches this platform",
    { cause: error },
  );
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
        throw webGpuPackageError(error);
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
