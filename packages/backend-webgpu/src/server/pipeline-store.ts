/// <reference types="@webgpu/types" preserve="true" />
import type { CacheStats } from "@weft/environment";
import { PipelineCache } from "@weft/runtime";
import { ValidationError, kernelName } from "@weft/server";
import { DEFAULT_ENTRY_POINT, type WgslKernel } from "../kernel.js";

/** Where a pipeline's validation stands. */
export type PipelineState =
  | { readonly kind: "pending" } // error scopes not popped yet: launches must wait
  | { readonly kind: "valid" }
  | { readonly kind: "invalid"; readonly error: ValidationError };

/**
 * One kernel's pipeline, compiled off the request path (`createComputePipelineAsync`), and until
 * known the promise of its compilation and validation.
 *
 * @remarks
 * **Invariant.** `state` moves once, from `pending` to `valid` or `invalid`, when `ready` settles;
 * `ready` never rejects. `pipeline` and `bindGroupLayout` are set exactly when `state` is `valid`
 * (an explicit layout is known at once, the `auto` one only from the compiled pipeline).
 */
export interface PipelineEntry {
  readonly kernel: WgslKernel;
  /** The compiled pipeline; set when `state` becomes `valid`. */
  pipeline: GPUComputePipeline | undefined;
  /** The explicit layout's bind group layout (at once), or the pipeline's `auto` one (when valid). */
  bindGroupLayout: GPUBindGroupLayout | undefined;
  state: PipelineState;
  readonly ready: Promise<void>;
  /**
   * Whether `ready` was handed to the store's `track` (reads wait for tracked promises). A compile
   * started only to have the pipeline ready later (`getOrCompile(kernel, false)`) is tracked when
   * it is first asked for with tracking, i.e. by a launch; never twice.
   */
  tracked: boolean;
}

/** Longest wait for a failed shader module's compilation messages (they only improve the error text). */
const COMPILATION_INFO_WAIT_MS = 2000;

/** What a rejected pipeline's error says, whatever was thrown (`GPUPipelineError` is an `Error`). */
function asGpuError(error: unknown): { readonly message: string } {
  return error instanceof Error ? error : { message: String(error) };
}

/** `module`'s compilation info, or `undefined` when it fails or takes longer than {@link COMPILATION_INFO_WAIT_MS}. */
async function compilationInfo(module: GPUShaderModule): Promise<GPUCompilationInfo | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), COMPILATION_INFO_WAIT_MS);
  });
  try {
    return await Promise.race([module.getCompilationInfo().catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** What the WGSL declares at one `@group(0) @binding(i)`. */
type DeclaredBinding = "read-only-storage" | "storage" | "uniform";

/** `@binding(i) … var<storage, read_write>` / `var<uniform>` declarations of group 0. */
const BINDING_DECL = /@binding\(\s*(\d+)\s*\)[^;{}]*?var\s*<\s*(storage|uniform)\s*(?:,\s*(read_write|read))?\s*>/g;

/**
 * The bindings a WGSL module declares, by reading its `var<…>` declarations (the layout
 * convention of {@link WgslKernel}). `undefined` when none is found or a `@group` other than 0
 * appears, in which case the pipeline uses `layout: "auto"`.
 *
 * @remarks
 * **Why an explicit layout.** With `layout: "auto"` a binding the shader never uses is dropped
 * from the layout, and the bind group the launch creates (one entry per binding) would then fail
 * validation and poison the whole command buffer.
 */
export function declaredBindings(source: string): DeclaredBinding[] | undefined {
  if (/@group\(\s*[1-9]/.test(source)) return undefined;
  const found = new Map<number, DeclaredBinding>();
  for (const match of source.matchAll(BINDING_DECL)) {
    const index = Number(match[1]);
    const kind: DeclaredBinding =
      match[2] === "uniform" ? "uniform" : match[3] === "read_write" ? "storage" : "read-only-storage";
    found.set(index, kind);
  }
  if (found.size === 0) return undefined;
  const out: DeclaredBinding[] = [];
  for (let i = 0; i < found.size; i++) {
    const kind = found.get(i);
    if (kind === undefined) return undefined; // not dense: let the driver decide
    out.push(kind);
  }
  return out;
}

/**
 * Refuses a kernel that declares a read-only storage binding (`var<storage, read>` or
 * `var<storage>`), with the fix.
 *
 * @remarks
 * **Why.** Allocations are slices of shared pages, and WebGPU tracks buffer usage per
 * `GPUBuffer`, not per range: a dispatch that binds one slice of a page read-only and another
 * slice of the same page writable is a usage conflict that invalidates the whole command buffer —
 * every launch submitted with it. So every storage binding is declared `read_write` (the
 * convention of `WgslKernel`; the generated kernels use `storageBinding`). The server compiles a
 * kernel's text exactly as given and never rewrites it, so the WGSL a test checks is the WGSL
 * that runs.
 * @throws ValidationError naming the kernel and the declaration to change.
 */
export function checkStorageDeclarations(kernel: WgslKernel): void {
  const readOnly = /var\s*<\s*storage\s*(?:,\s*read\s*)?>\s*(\w+)/.exec(kernel.source);
  if (readOnly === null) return;
  throw new ValidationError(
    `kernel '${kernel.label ?? kernel.key}' declares storage binding '${readOnly[1]}' read-only; slices of one page share a ` +
      "GPUBuffer and WebGPU tracks usage per buffer, so declare every storage binding var<storage, read_write> " +
      "(the KernelBinding's access still says whether the launch reads or writes it)",
  );
}

/**
 * The pipelines of one device, cached on the kernel's key and the device's features, each
 * validated before its first launch runs.
 *
 * @remarks
 * **Compile, off the request path.** `getOrCompile` creates the shader module inside a
 * `validation` error scope and asks for the pipeline with `createComputePipelineAsync`, and returns
 * at once: no request ever blocks the thread on a compile where the implementation compiles
 * asynchronously (Dawn's worker pool, browsers). The scope, the pipeline's promise (a
 * `GPUPipelineError` when it is rejected) and, on failure, `getCompilationInfo` decide `state`;
 * launches of a `pending` pipeline wait behind the `ValidationGate`, so a pipeline that fails to
 * compile still delivers its typed `ValidationError` to exactly the writes of its launches.
 * **Cache.** `@weft/runtime`'s {@link PipelineCache}, keyed on `kernel.key` and the device's
 * features, so hits and misses are observable ({@link hits}, {@link misses}). The features are
 * joined once at construction and passed as one string, so a lookup is one `Map.get` on a string
 * (no sort per launch).
 * **Bound.** At most `capacity` pipelines (`maxPipelines`, default 512): a program that runs ever
 * new kernels (new shapes each request) holds a bounded number. The least recently used pipeline
 * is evicted; a launch already holding its entry (a task queued behind a pending validation, an
 * encoded dispatch) keeps using it — a `GPUComputePipeline` has no `destroy` and stays valid while
 * referenced — and the next launch of its key compiles it again (a miss, counted).
 */
export class PipelineStore {
  /** Entries by features × key; see the type doc for the bound. */
  readonly #cache: PipelineCache<PipelineEntry>;
  /** The device's features, sorted and joined once (the cache's feature part of every key). */
  readonly #features: string;
  /**
   * Each launched kernel object's canonical cache key, built once: kernels come from the runtime's
   * plan cache, so a launch reuses one string object and its lookup hashes nothing new (a CPU
   * profile of the serving workload on the H200, 2026-11-30, put 87 ms of 2.4 s in the cache's `get`,
   * building and hashing each launch's key afresh). Weak: a kernel object the plan cache dropped takes its key with it.
   */
  readonly #keys = new WeakMap<WgslKernel, string>();

  constructor(
    private readonly device: GPUDevice,
    /** Called with every validation promise, so reads can await it. */
    private readonly track: (ready: Promise<void>) => void,
    options: { readonly capacity?: number; readonly onEvict?: (entry: PipelineEntry) => void } = {},
  ) {
    this.#features = [...device.features].sort().join(",");
    this.#cache = new PipelineCache<PipelineEntry>({
      ...(options.capacity === undefined ? {} : { capacity: options.capacity }),
      ...(options.onEvict === undefined ? {} : { onEvict: options.onEvict }),
    });
  }

  /** Pipelines held, capacity, hits, misses and evictions. */
  stats(): CacheStats {
    return this.#cache.stats();
  }

  /** Forgets every pipeline (a destroyed server). */
  clear(): void {
    this.#cache.clear();
  }

  /**
   * Test hook: kernels whose key or label matches are compiled with a WGSL syntax error appended,
   * so the device really rejects them (a compile failure injected into real WebGPU). Applies to
   * pipelines created from now on; `undefined` turns it off.
   */
  injectInvalid: RegExp | undefined;

  /** How many pipelines were created (cache misses). */
  get compiled(): number {
    return this.#cache.misses;
  }

  /** Lookups that found their pipeline cached. */
  get hits(): number {
    return this.#cache.hits;
  }

  /** Lookups that created their pipeline (= {@link compiled}). */
  get misses(): number {
    return this.#cache.misses;
  }

  /** How many distinct pipelines are cached. */
  get size(): number {
    return this.#cache.size;
  }

  /** The cached entry for `kernel`, if any, without compiling it or touching its recency. */
  peek(kernel: WgslKernel): PipelineEntry | undefined {
    return this.#cache.peek(kernel.key, this.#features);
  }

  /**
   * The cached entry for `kernel`, compiling it on first use (see the type doc). With `track`
   * false (a compile ahead of any launch: `WebGpuServer.ready`), its validation is not handed to
   * `track` until a later call with `track` (a launch) asks for it: reads wait for tracked
   * validations, and no read should wait for a pipeline that nothing launched. On the H200 a
   * tuner's winner compiling ahead of use (185 ms) held every read of the serving workload's next
   * round until it settled.
   */
  getOrCompile(kernel: WgslKernel, track = true): PipelineEntry {
    let full = this.#keys.get(kernel);
    if (full === undefined) {
      full = PipelineCache.canonicalKey(kernel.key, this.#features);
      this.#keys.set(kernel, full);
    }
    const entry = this.#cache.getOrCreateCanonical(full, () => this.#compile(kernel));
    if (track && !entry.tracked) {
      entry.tracked = true;
      this.track(entry.ready);
    }
    return entry;
  }

  #compile(kernel: WgslKernel): PipelineEntry {
    const device = this.device;
    const label = kernel.label ?? kernel.key;
    const entryPoint = kernel.entryPoint ?? DEFAULT_ENTRY_POINT;
    checkStorageDeclarations(kernel);
    const injected = this.injectInvalid !== undefined && (this.injectInvalid.test(kernel.key) || this.injectInvalid.test(kernel.label ?? ""));
    const code = kernel.source + (injected ? "\nfn weft_injected_compile_failure( {\n" : "");
    const declared = declaredBindings(code);
    device.pushErrorScope("validation");
    const module = device.createShaderModule({ label, code });
    let layout: GPUPipelineLayout | "auto" = "auto";
    let explicit: GPUBindGroupLayout | undefined;
    if (declared !== undefined) {
      explicit = device.createBindGroupLayout({
        label,
        // A uniform block is bound with a dynamic offset into the launching stream's uniform
        // arena, so its bind group is cached like any other (see `WebGpuServer`).
        entries: declared.map((type, binding) => ({
          binding,
          visibility: 0x4 /* GPUShaderStage.COMPUTE */,
          buffer: type === "uniform" ? { type, hasDynamicOffset: true } : { type },
        })),
      });
      layout = device.createPipelineLayout({ label, bindGroupLayouts: [explicit] });
    }
    // Settles with the pipeline, or with the reason it was rejected (never rejects).
    const compiled = device.createComputePipelineAsync({ label, layout, compute: { module, entryPoint } }).then(
      (pipeline) => ({ pipeline, error: undefined }),
      (error: unknown) => ({ pipeline: undefined, error: asGpuError(error) }),
    );
    const scope = device.popErrorScope();
    const entry: PipelineEntry = {
      kernel,
      pipeline: undefined,
      bindGroupLayout: explicit,
      state: { kind: "pending" },
      ready: Promise.resolve(),
      tracked: false,
    };
    // The scope (the module and the layouts) and the pipeline's promise decide validity. The
    // compiler's messages only improve the error's text, so they are asked for only on failure
    // and waited for at most COMPILATION_INFO_WAIT_MS: a pipeline's state must always settle, or
    // every launch, read and sync queued behind it waits forever (a read must settle with its
    // value or a typed error on every adapter).
    const ready = Promise.all([scope, compiled])
      .then(async ([scoped, result]) => {
        const error = scoped ?? result.error ?? (result.pipeline === undefined ? { message: "no pipeline" } : undefined);
        if (error !== undefined) return [error, await compilationInfo(module)] as const;
        // The `auto` layout of a valid pipeline (an explicit one is known already).
        entry.bindGroupLayout ??= result.pipeline?.getBindGroupLayout(0);
        entry.pipeline = result.pipeline;
        return [undefined, undefined] as const;
      })
      .then(
        ([error, info]) => {
          if (error === undefined) {
            entry.state = { kind: "valid" };
            return;
          }
          const messages = (info?.messages ?? [])
            .filter((m) => m.type === "error")
            .map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`);
          const detail = messages.length > 0 ? messages.join("; ") : error.message;
          entry.state = {
            kind: "invalid",
            error: new ValidationError(
              `WebGPU rejected kernel '${kernelName(kernel)}' (entry point '${entryPoint}'): ${detail}. ` +
                "The code generator produced invalid WGSL; please report it with the program that produced it.",
              { cause: error },
            ),
          };
        },
        (reason: unknown) => {
          entry.state = {
            kind: "invalid",
            error: new ValidationError(`validating kernel '${kernelName(kernel)}' failed: ${String(reason)}`, { cause: reason }),
          };
        },
      );
    (entry as { ready: Promise<void> }).ready = ready;
    return entry;
  }
}
