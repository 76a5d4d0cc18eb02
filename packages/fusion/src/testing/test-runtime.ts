import { invariant } from "@weft/environment";
import type { StreamId } from "@weft/environment";
import type { MemoryUsage } from "@weft/server";
import { InjectedFaultError } from "@weft/server";
import type { OperationIr } from "../ir/operation-ir.js";
import { operationInputs, operationOutputs } from "../ir/operation-descriptor.js";
import type { TensorData, TensorId, TensorIr, TypedArray } from "../ir/tensor-ir.js";
import { BaseFusionRuntime } from "../runtime/fusion-runtime.js";
import type { ExecutionContext, OperationFuser, Optimization, RuntimeCapabilities } from "../runtime/fusion-runtime.js";
import { evaluate, toTyped } from "./host-math.js";

/**
 * Host memory of the test runtime with an explicit reference count.
 * **Invariant.** `refs` is the number of live {@link TestHandle}s over it; freed at 0.
 */
export class TestMemory {
  refs = 1;
  constructor(
    /** Distinct per allocation, for tests that check aliasing. */
    readonly serial: number,
    /** The values (every dtype stored as doubles, rounded to the dtype on write). */
    readonly data: Float64Array,
  ) {}
}

/** One reference to a {@link TestMemory}: what the handle container holds. */
export interface TestHandle {
  readonly memory: TestMemory;
}

/** Options of a {@link TestRuntime}. */
export interface TestRuntimeOptions {
  /** The fusers each stream gets (default: one {@link ElementwiseFuser}-like set from `fusers`). */
  readonly fusers?: (runtime: TestRuntime) => OperationFuser<Optimization<TestHandle>>[];
  /** What the runtime reports (default: every dtype but `f16`, synchronous reads). */
  readonly capabilities?: RuntimeCapabilities;
}

/**
 * A complete host `FusionRuntime` for testing the engine without a device: handles with explicit
 * reference counts, every elementwise op and the basic reductions, fault injection, and counters
 * the tests assert on (allocations per tensor id, in-place writes, live memory).
 *
 * @remarks
 * **Why.** The engine's properties (write elision, in-place reuse only for sole owners, frees,
 * error delivery) are about handles and counts; this runtime makes them observable.
 * **Bound.** `allocatedFor` grows with every output ever allocated (test lifetimes only).
 */
export class TestRuntime extends BaseFusionRuntime<TestHandle> {
  readonly name = "test";
  /** Host values of every dtype but `f16`; reads can be synchronous (unless the options say otherwise). */
  readonly capabilities: RuntimeCapabilities;
  readonly #fusers: (runtime: TestRuntime) => OperationFuser<Optimization<TestHandle>>[];
  readonly #live = new Set<TestMemory>();
  #serial = 0;
  /** Tensor ids an output buffer was allocated (or reused in place) for. */
  readonly allocatedFor = new Set<TensorId>();
  /** Outputs written into a consumed input's memory. */
  inPlaceWrites = 0;
  /** Operations executed, fused or not (not counting `init`/`drop`). */
  executedOperations = 0;
  /** When set, an operation for which it returns true throws an `InjectedFaultError`. */
  failWhen: ((op: OperationIr) => boolean) | undefined;
  /** When set, every read throws this (a server-level taint). */
  readError: Error | undefined;

  constructor(options: TestRuntimeOptions = {}) {
    super();
    this.#fusers = options.fusers ?? (() => []);
    this.capabilities = options.capabilities ?? { dtypes: ["f32", "i32", "u32", "bool"], reads: "async-and-sync" };
  }

  /** Live memories (0 at quiescence). */
  get liveMemories(): number {
    return this.#live.size;
  }

  fusers(): OperationFuser<Optimization<TestHandle>>[] {
    return this.#fusers(this);
  }

  /** A new memory with `values`, one reference. */
  allocate(values: Float64Array): TestHandle {
    const memory = new TestMemory(this.#serial++, values);
    this.#live.add(memory);
    return { memory };
  }

  /** Throws the injected fault if {@link TestRuntime.failWhen} selects `op`. */
  checkFault(op: OperationIr): void {
    if (this.failWhen?.(op) === true) throw new InjectedFaultError(`${op.kind}${"op" in op ? ` ${op.op}` : ""}`);
  }

  /**
   * Memories whose bytes a device-side failure claims (the asynchronous-failure model of a real
   * server: the launch returns, its outputs are tainted, later launches reading them are skipped).
   * Entries added by {@link TestRuntime.taintDeviceSide} and by launches that read tainted memory;
   * removed when the memory is freed.
   */
  readonly #deviceFailures = new Map<TestMemory, Error>();

  /** Marks `handle`'s memory as claimed by `error` device-side (as a failed launch would). */
  taintDeviceSide(handle: TestHandle, error: Error): void {
    this.#deviceFailures.set(handle.memory, error);
  }

  /** Calls of {@link TestRuntime.handleError} so far (tests of when the engine asks). */
  handleErrorCalls = 0;

  /** The device-side failure claiming `handle`'s memory (the engine's `handleError` hook). */
  handleError(handle: TestHandle): Error | undefined {
    this.handleErrorCalls++;
    return this.#deviceFailures.get(handle.memory);
  }

  /** Whether some memory is claimed device-side (the engine's `deviceClaims` hook). */
  deviceClaims(): boolean {
    return this.#deviceFailures.size > 0;
  }

  /** The first device-side failure among `handles`, if any (what a server's `checkReads` finds). */
  deviceFailureOf(handles: readonly TestHandle[]): Error | undefined {
    for (const h of handles) {
      const error = this.#deviceFailures.get(h.memory);
      if (error !== undefined) return error;
    }
    return undefined;
  }

  executeOperation(op: OperationIr, ctx: ExecutionContext<TestHandle>): void {
    this.checkFault(op);
    if (op.kind === "drop") {
      ctx.handles.removeHandle(op.tensor.id);
      return;
    }
    const skipped = this.deviceFailureOf(operationInputs(op).map((t) => ctx.handles.getHandle(t)));
    if (skipped !== undefined) {
      // A server skips a launch that reads tainted bytes and taints what it would have written.
      for (const out of operationOutputs(op)) {
        const handle = this.allocate(new Float64Array(0));
        this.#deviceFailures.set(handle.memory, skipped);
        ctx.handles.registerHandle(out.id, handle);
      }
      return;
    }
    const inputs = operationInputs(op).map((t) => ctx.handles.getHandle(t).memory.data);
    const values = evaluate(op, inputs);
    this.executedOperations++;
    for (const out of operationOutputs(op)) {
      this.allocatedFor.add(out.id);
      ctx.handles.registerHandle(out.id, this.allocate(values));
    }
  }

  retainHandle(handle: TestHandle): TestHandle {
    invariant(handle.memory.refs > 0, "retain of freed test memory");
    handle.memory.refs++;
    return { memory: handle.memory };
  }

  releaseHandle(handle: TestHandle): void {
    invariant(handle.memory.refs > 0, () => `double release of test memory ${handle.memory.serial}`);
    handle.memory.refs--;
    if (handle.memory.refs === 0) {
      this.#live.delete(handle.memory);
      this.#deviceFailures.delete(handle.memory);
    }
  }

  canMut(handle: TestHandle): boolean {
    return handle.memory.refs === 1;
  }

  upload(data: TensorData, _stream: StreamId): TestHandle {
    return this.allocate(Float64Array.from(data.data as ArrayLike<number>));
  }

  read(handle: TestHandle, tensor: TensorIr, _stream: StreamId): Promise<TypedArray> {
    if (this.readError !== undefined) throw this.readError;
    const failure = this.#deviceFailures.get(handle.memory);
    if (failure !== undefined) return Promise.reject(failure);
    invariant(handle.memory.refs > 0, "read of freed test memory");
    // Copy now: the promise must hold nothing of the engine (docs/pitfalls.md#p4).
    return Promise.resolve(toTyped(handle.memory.data, tensor.dtype));
  }

  readSync(handle: TestHandle, tensor: TensorIr, _stream: StreamId): TypedArray | undefined {
    if (this.readError !== undefined) throw this.readError;
    return toTyped(handle.memory.data, tensor.dtype);
  }

  sync(_stream: StreamId): Promise<void> {
    return Promise.resolve();
  }

  memoryUsage(): MemoryUsage {
    let bytes = 0;
    for (const m of this.#live) bytes += m.data.length * 4;
    return { bytesInUse: bytes, bytesReserved: bytes, pages: this.#live.size, slices: this.#live.size, liveAllocations: this.#live.size, streams: this.#live.size > 0 ? 1 : 0 };
  }
}
