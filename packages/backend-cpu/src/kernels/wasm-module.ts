/**
 * How the CPU backend's WebAssembly modules (built from `wasm/*.ts` by AssemblyScript and
 * embedded as base64) are compiled: once, synchronously, on first use, with the reason when they
 * cannot be.
 *
 * @module
 */

/** Whether the WebAssembly SIMD kernels run here, and why not. */
export interface WasmSupport {
  readonly available: boolean;
  readonly reason: string;
}

/** The part of the WebAssembly JavaScript API used here (the package is built without the DOM library). */
interface WebAssemblyApi {
  validate(bytes: Uint8Array): boolean;
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object, imports: object) => { readonly exports: unknown };
}

/** A compiled module's exports (or none) and whether it runs here. */
export interface LoadedWasm<E> {
  readonly exports: E | undefined;
  readonly support: WasmSupport;
}

/** The linear memory every module exports. */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

function decodeBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * Compiles and instantiates the module in `base64`. Where WebAssembly or its SIMD proposal is
 * missing, or a Content-Security-Policy refuses compilation (`'wasm-unsafe-eval'`), answers no
 * exports and why; the caller then runs its JavaScript kernel.
 */
export function instantiateWasm<E>(base64: string): LoadedWasm<E> {
  const WebAssembly = (globalThis as { WebAssembly?: WebAssemblyApi }).WebAssembly;
  if (WebAssembly === undefined) return { exports: undefined, support: { available: false, reason: "no WebAssembly in this JavaScript engine" } };
  try {
    const bytes = decodeBase64(base64);
    if (!WebAssembly.validate(bytes)) return { exports: undefined, support: { available: false, reason: "this engine has no WebAssembly SIMD" } };
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), {});
    return { exports: instance.exports as E, support: { available: true, reason: "module compiled" } };
  } catch (error) {
    const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { exports: undefined, support: { available: false, reason: `WebAssembly compilation refused (${why})` } };
  }
}

/** `memory`'s buffer, grown to at least `bytes` (the caller checked its cap). */
export function memoryOf(memory: WasmMemory, bytes: number): ArrayBuffer {
  if (memory.buffer.byteLength < bytes) memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / 65536));
  return memory.buffer;
}
