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
  readonly Memory: new (descriptor: { initial: number }) => WasmMemory;
}

/** A WebAssembly linear memory (what `new WebAssembly.Memory` makes; a {@link WasmArena} never grows one). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}

function decodeBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Bytes of a WebAssembly memory page. */
const PAGE = 65536;

/** The smallest memory a {@link WasmArena} makes: 1 MiB, a serving MLP's products several times over. */
const ARENA_MIN_PAGES = 16;

/**
 * A module built to import its memory (`env.memory`, AssemblyScript `--importMemory`), with a
 * memory that is replaced, never grown: when a call needs more bytes, the arena makes a larger
 * memory and a new instance of the same compiled module.
 *
 * @remarks
 * **Why never grow.** `memory.grow` detaches the memory's old `ArrayBuffer`. The first detached
 * buffer in a process makes V8 give up its "no buffer was ever detached" assumption, and from
 * then on every typed-array access of every kernel checks for detachment: the serving MLP's gelu
 * epilogue took 11.9 µs instead of 10.6 µs per 1,024 elements after one detach (2-core machine,
 * 2026-11-30), and the modules started at 0 pages, so the first matmul or reduction grew them.
 * **Bound.** One memory at a time, at least twice the last one when replaced but never above
 * `maxBytes` unless one call needs more (the callers refuse such calls first:
 * `WASM_GEMM_MAX_BYTES`); the replaced memory and instance are garbage. Views of an old buffer
 * stay valid until dropped (the callers key their views by buffer).
 */
export class WasmArena<E> {
  /** Whether the module runs here, and why not. */
  readonly support: WasmSupport;
  readonly #api: WebAssemblyApi | undefined;
  readonly #module: object | undefined;
  readonly #maxPages: number;
  /** The current instance's exports and its memory's buffer (one object, handed out as is). */
  #held: { readonly exports: E; readonly buffer: ArrayBuffer } | undefined;

  /**
   * Compiles the module in `base64`. Where WebAssembly or its SIMD proposal is missing, or a
   * Content-Security-Policy refuses compilation (`'wasm-unsafe-eval'`), `support` says why and
   * {@link WasmArena.ensure} answers `undefined`: the caller runs its JavaScript kernel.
   */
  constructor(base64: string, reason: string, maxBytes: number = Number.POSITIVE_INFINITY) {
    const api = (globalThis as { WebAssembly?: WebAssemblyApi }).WebAssembly;
    let module: object | undefined;
    let support: WasmSupport;
    if (api === undefined) support = { available: false, reason: "no WebAssembly in this JavaScript engine" };
    else {
      try {
        const bytes = decodeBase64(base64);
        if (!api.validate(bytes)) support = { available: false, reason: "this engine has no WebAssembly SIMD" };
        else {
          module = new api.Module(bytes);
          support = { available: true, reason };
        }
      } catch (error) {
        const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        support = { available: false, reason: `WebAssembly compilation refused (${why})` };
      }
    }
    this.#api = api;
    this.#module = module;
    this.#maxPages = Math.floor(maxBytes / PAGE);
    this.support = support;
  }

  /**
   * The exports over a memory of at least `bytes`, and that memory's buffer; `undefined` where the
   * module does not run (or a memory of that size cannot be made: the caller then runs its
   * JavaScript kernel).
   */
  ensure(bytes: number): { readonly exports: E; readonly buffer: ArrayBuffer } | undefined {
    const held = this.#held;
    if (held !== undefined && held.buffer.byteLength >= bytes) return held; // every call of a kernel: nothing made
    const api = this.#api;
    const module = this.#module;
    if (api === undefined || module === undefined) return undefined;
    const current = held === undefined ? 0 : held.buffer.byteLength / PAGE;
    const pages = Math.max(Math.ceil(bytes / PAGE), Math.min(Math.max(ARENA_MIN_PAGES, current * 2), this.#maxPages));
    try {
      // A memory that is never grown keeps its buffer, so the buffer is read once.
      const memory = new api.Memory({ initial: pages });
      const exports = new api.Instance(module, { env: { memory } }).exports as E;
      this.#held = { exports, buffer: memory.buffer };
    } catch {
      return undefined; // out of memory: the caller's JavaScript kernel runs
    }
    return this.#held;
  }
}
