/**
 * Large elementwise launches across cores: a generated elementwise kernel (`elementwise-codegen.ts`)
 * compiled a second time, from the same source text, on `worker_threads` workers, which compute
 * ranges of the collapsed loop's outermost dim side by side with the main thread.
 *
 * @remarks
 * **Same bits.** Every element is computed by the same source (the generated loop and the text of
 * each step function it calls), only on another thread; an element's result depends on nothing
 * but that element's inputs. A step function travels as text: a `Math` builtin by its name, any
 * other function by its own source, and only when that text, compiled apart from its module,
 * gives the same results bit for bit on a fixed set of probe values (so a function that reads its
 * module's scope — `erf`'s table, `wrap` — is refused, and its programs run on one thread). The
 * tests hold threaded launches to bit equality with single-thread ones over random programs.
 * **Memory.** Kernels read and write the backend's pages, which are not shareable: each launch
 * copies every binding into one shared scratch (`SharedArrayBuffer`), runs there, and copies the
 * written bindings back — two memory copies against a computation of tens of nanoseconds per
 * element, which is why only programs with expensive steps qualify ({@link threadedWorthIt}).
 * In-place outputs stay correct: the runtime only writes in place over an input with the output's
 * layout, so a range reads and writes only its own elements.
 * **When.** Node only, generated kernels only (the interpreter runs where code generation is
 * refused, and so would a worker's compile), with the matmul's thread decision (`cpuThreads()`:
 * 1 on a machine of 2 cores or less, so it keeps the single-thread path), for launches of at least
 * {@link THREADED_ELEMENTWISE_MIN_WORK} estimated cost. Browsers stay single-threaded.
 * **Hand-off.** As for matmul (`matmul-threads.ts`): the launch's numbers are written to a shared
 * argument block, chunks of the outer dim are claimed from one claim word by every thread (the
 * main thread included, so a launch completes even if no worker wakes), and the main thread waits
 * for the chunks workers took. What a chunk needs beyond numbers — a program's source, a new
 * scratch — goes ahead on each worker's `MessagePort`, drained synchronously with
 * `receiveMessageOnPort` by a worker that lacks it. A worker that fails (its compile throws) marks
 * the launch failed; the main thread then runs the launch on one thread over the untouched pages.
 * **Bounded.** One scratch of at most {@link THREADED_SCRATCH_MAX_BYTES} (grown to the largest
 * launch served; a larger launch runs on one thread), `threads - 1` workers, and at most
 * `ELEMENTWISE_CACHE_CAPACITY` programs known to the workers (evicted oldest first, the same way
 * on every thread).
 *
 * See docs/performance.md, "The CPU backend across cores".
 *
 * @module
 */
import type { DType, TypedArray } from "@weft/fusion";
import type { ElementwiseBody, ElementwiseStep } from "./elementwise-kernel.js";
import { ELEMENTWISE_CACHE_CAPACITY } from "./elementwise-codegen.js";
import { cpuThreads, onStopThreads } from "./matmul-threads.js";
import { MAX_CHUNKS, POOL_WORDS, chunkDone, claimChunk, publishChunks, stopWorkers, waitForChunks, workerLoopSource } from "./thread-claims.js";

/** Least estimated cost (elements × `stepCost` summed over steps) worth splitting: about a quarter of a millisecond on one core. */
export const THREADED_ELEMENTWISE_MIN_WORK = 1 << 18;

/** Largest shared scratch (all bindings of one launch together); a larger launch runs on one thread. */
export const THREADED_SCRATCH_MAX_BYTES = 1 << 28;

/** Numbers in the shared argument block; a launch needing more runs on one thread. */
const ARG_WORDS = 4096;

/** The control words: only `thread-claims.ts`'s. */
const CONTROL_WORDS = POOL_WORDS;

// Argument block (Float64 indices): the header, then per operand [dtype code, byte offset in the
// scratch, elements, element offset], then the dims, the strides (operand-major) and the uniforms.
const A_PROGRAM = 0;
const A_MEMORY = 1;
const A_RANK = 2;
const A_OPERANDS = 3;
const A_UNIFORMS = 4;
const A_PER_CHUNK = 5;
const A_OUTER = 6;
const A_HEADER = 8;

/** Typed-array constructors by dtype code (the same order in the worker's source). */
const DTYPE_CODES: Partial<Record<DType, number>> = { f32: 0, i32: 1, u32: 2, bool: 3 };

/**
 * A rough cost per element of one step, in units of about a nanosecond: the transcendental steps
 * (a call into V8's C library, or a series) cost ~16, arithmetic ~1. A cost model for the
 * threading decision only; it never changes a result.
 */
export function stepCost(step: ElementwiseStep): number {
  switch (step.kind) {
    case "unary":
      return EXPENSIVE_UNARY.has(step.op) ? 16 : 1;
    case "binary":
    case "binary-scalar":
      return step.op === "pow" || step.op === "atan2" || step.op === "mod" || step.op === "floorDiv" ? 16 : 1;
    case "clamp":
    case "cast":
    case "where":
      return 1;
    default:
      return step satisfies never;
  }
}

/** Unary ops that call into V8's C library or a series (`sqrt` is one instruction: cheap). */
const EXPENSIVE_UNARY: ReadonlySet<string> = new Set(["exp", "log", "log2", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sigmoid", "silu", "gelu", "erf"]);

/**
 * Whether a launch of `steps` over `elements` elements with `operands` operands is worth the
 * hand-off: enough work in all ({@link THREADED_ELEMENTWISE_MIN_WORK}), and enough per element to
 * pay for copying every operand in and out (a program of a few additions is bound by memory, and
 * the copies would cost about what the threads save).
 */
export function threadedWorthIt(steps: readonly ElementwiseStep[], elements: number, operands: number): boolean {
  let cost = 0;
  for (const s of steps) cost += stepCost(s);
  return cost >= 4 * operands && elements * cost >= THREADED_ELEMENTWISE_MIN_WORK;
}

/** Probe arguments for {@link portableSource}: every special value, both signs, both magnitudes. */
const PROBES = [0, -0, 1, -1, 0.5, -2.5, 3, 7, 1e-40, 1e30, -1e30, 2147483648, Infinity, -Infinity, NaN];

/**
 * The text of `fn` that a worker compiles to the same function, or `undefined`: `Math.<name>` for
 * a `Math` builtin, else the function's own source when that source, compiled apart from its
 * module, gives the same result as `fn` (bit for bit, `Object.is`) on every probe combination of
 * `arity` arguments and throws on none.
 */
export function portableSource(fn: (...args: number[]) => number, arity: number): string | undefined {
  const math = Math as unknown as Record<string, unknown>;
  if (fn.name !== "" && math[fn.name] === fn) return `Math.${fn.name}`;
  const text = fn.toString();
  if (text.includes("[native code]")) return undefined;
  let copy: (...args: number[]) => number;
  try {
    copy = new Function(`"use strict"; return (${text});`)() as (...args: number[]) => number;
    if (typeof copy !== "function") return undefined;
    const probes = arity <= 1 ? PROBES : PROBES.slice(0, 9);
    const args = new Array<number>(arity).fill(0);
    const visit = (at: number): boolean => {
      if (at === arity) return Object.is(copy(...args), fn(...args));
      for (const v of probes) {
        args[at] = v;
        if (!visit(at + 1)) return false;
      }
      return true;
    };
    return visit(0) ? text : undefined;
  } catch {
    return undefined;
  }
}

/** A compiled program as text: the loop's source and each step's function texts (`null`: no converter). */
export interface PortableProgram {
  readonly source: string;
  readonly fns: readonly string[];
  readonly cvs: readonly (string | null)[];
}

/**
 * What a worker runs (CommonJS, `new Worker(…, { eval: true })`), with the control words and
 * argument indices written in as numbers (text, so a bundler renaming identifiers cannot break it).
 */
const WORKER_SOURCE = `
const { workerData, receiveMessageOnPort } = require("node:worker_threads");
const { control, args: argBuffer, port, capacity } = workerData;
const c = new Int32Array(control);
const a = new Float64Array(argBuffer);
const CTORS = [Float32Array, Int32Array, Uint32Array, Uint8Array];
const bodies = new Map();
let memory = null, memoryId = -1;
function apply(m) {
  if (m.kind === "memory") { memory = m.buffer; memoryId = m.id; return; }
  const F = new Function('"use strict"; return [' + m.fns.join(",") + "];")();
  const C = new Function('"use strict"; return [' + m.cvs.map((t) => (t === null ? "undefined" : t)).join(",") + "];")();
  bodies.set(m.id, new Function("F", "C", m.source)(F, C));
  if (bodies.size > capacity) bodies.delete(bodies.keys().next().value);
}
function ready(program, mem) {
  for (;;) {
    if (bodies.has(program) && memoryId === mem) return true;
    const m = receiveMessageOnPort(port);
    if (m === undefined) return false;
    apply(m.message);
  }
}
function runChunk(i) {
  const program = a[${A_PROGRAM}], mem = a[${A_MEMORY}];
  if (!ready(program, mem)) throw new Error("program " + program + " or scratch " + mem + " was never received");
  const rank = a[${A_RANK}], n = a[${A_OPERANDS}], nu = a[${A_UNIFORMS}], per = a[${A_PER_CHUNK}], outer = a[${A_OUTER}];
  const lo = i * per, hi = Math.min(outer, lo + per);
  const dimsAt = ${A_HEADER} + 4 * n, stridesAt = dimsAt + rank, uniformsAt = stridesAt + n * rank;
  const A = new Array(n), O = new Array(n);
  for (let k = 0; k < n; k++) {
    const q = ${A_HEADER} + 4 * k;
    A[k] = new CTORS[a[q]](memory, a[q + 1], a[q + 2]);
    O[k] = a[q + 3] + lo * a[stridesAt + k * rank];
  }
  const D = new Int32Array(rank);
  for (let d = 0; d < rank; d++) D[d] = a[dimsAt + d];
  D[0] = hi - lo;
  const S = new Int32Array(n * rank);
  for (let j = 0; j < n * rank; j++) S[j] = a[stridesAt + j];
  const U = new Float64Array(nu);
  for (let j = 0; j < nu; j++) U[j] = a[uniformsAt + j];
  bodies.get(program)(A, O, D, S, U);
}
${workerLoopSource()}`;

/** The part of Node's `worker_threads` used here. */
interface WorkerThreadsApi {
  readonly Worker: new (source: string, options: { eval: true; workerData: unknown; transferList: unknown[] }) => WorkerHandle;
  readonly MessageChannel: new () => { readonly port1: PortHandle; readonly port2: PortHandle };
}

interface WorkerHandle {
  unref(): void;
  terminate(): Promise<number>;
}

interface PortHandle {
  postMessage(message: unknown): void;
  unref?(): void;
  close(): void;
}

/** The workers, their ports, the control words, the argument block and the scratch. */
interface ElementwisePool {
  readonly threads: number;
  readonly control: Int32Array;
  readonly args: Float64Array;
  readonly workers: readonly WorkerHandle[];
  readonly ports: readonly PortHandle[];
  /** Programs the workers hold, by structural key → id, oldest first; at most `ELEMENTWISE_CACHE_CAPACITY`. */
  readonly programs: Map<string, number>;
  /** Portable texts by structural key (`null`: a step is not portable); bounded like `programs`. */
  readonly portable: Map<string, PortableProgram | null>;
  nextProgram: number;
  scratch: SharedArrayBuffer | undefined;
  scratchId: number;
}

type Builtins = { getBuiltinModule?: (name: string) => unknown } | undefined;

/** The pool, created on the first threaded launch; `null` where it cannot be. */
let pool: ElementwisePool | null | undefined;

onStopThreads(() => {
  if (pool) {
    stopWorkers(pool.control);
    for (const w of pool.workers) void w.terminate();
    for (const p of pool.ports) p.close();
  }
  pool = undefined;
});

/** The pool with `cpuThreads() - 1` workers, created once; `null` where threads are off or unavailable. */
function elementwisePool(): ElementwisePool | null {
  if (pool !== undefined) return pool;
  const threads = cpuThreads();
  const proc = (globalThis as { process?: Builtins }).process;
  const api = proc?.getBuiltinModule?.("node:worker_threads") as WorkerThreadsApi | undefined;
  if (threads < 2 || api === undefined || typeof SharedArrayBuffer === "undefined") {
    pool = null;
    return pool;
  }
  try {
    const control = new SharedArrayBuffer(CONTROL_WORDS * 4);
    const args = new SharedArrayBuffer(ARG_WORDS * 8);
    const workers: WorkerHandle[] = [];
    const ports: PortHandle[] = [];
    for (let t = 1; t < threads; t++) {
      const channel = new api.MessageChannel();
      const w = new api.Worker(WORKER_SOURCE, { eval: true, workerData: { control, args, port: channel.port2, capacity: ELEMENTWISE_CACHE_CAPACITY }, transferList: [channel.port2] });
      w.unref();
      channel.port1.unref?.();
      workers.push(w);
      ports.push(channel.port1);
    }
    pool = { threads, control: new Int32Array(control), args: new Float64Array(args), workers, ports, programs: new Map(), portable: new Map(), nextProgram: 0, scratch: undefined, scratchId: 0 };
  } catch {
    pool = null; // no shared memory or no workers here: single-threaded
  }
  return pool;
}

/** Launches run across threads in this process, and launches a worker failed (run again on one thread); only grow. */
const counts = { threaded: 0, failed: 0 };

/** How many elementwise launches ran across threads in this process, and how many a worker failed (then run on one thread). */
export function threadedElementwiseLaunches(): { readonly threaded: number; readonly failed: number } {
  return { ...counts };
}

/** Everything one threaded launch needs from the kernel (its program is fixed; buffers vary). */
export interface ThreadedLaunch {
  /** The program's structural key (`programKey`). */
  readonly key: string;
  /** The portable texts of the program, computed on first use (`undefined`: a step is not portable). */
  readonly portable: () => PortableProgram | undefined;
  readonly body: ElementwiseBody;
  readonly bindingOf: readonly number[];
  readonly dtypes: readonly DType[];
  readonly offsets: readonly number[];
  readonly dims: Int32Array;
  readonly strides: Int32Array;
  readonly writable: readonly boolean[];
  /** Operands before this index are inputs, the rest outputs. */
  readonly inputs: number;
}

/** Bytes per element of the dtypes threaded launches take (f16 never reaches a kernel). */
function bytesOf(dtype: DType): number {
  return dtype === "bool" ? 1 : 4;
}

/**
 * Runs `launch` over `buffers` on every thread of the pool and returns `true`, or returns `false`
 * (having changed nothing) when it cannot: no pool, a step that is not portable, a launch too
 * large for the scratch or the argument block, or a worker that failed.
 */
export function runThreaded(launch: ThreadedLaunch, buffers: readonly Uint8Array[], uniforms: Float64Array): boolean {
  const p = elementwisePool();
  if (p === null) return false;
  const id = programId(p, launch);
  if (id === undefined) return false;
  const n = launch.bindingOf.length;
  const rank = launch.dims.length;
  if (A_HEADER + 4 * n + rank + n * rank + uniforms.length > ARG_WORDS) return false;
  // The scratch: every binding at an 8-byte aligned offset.
  const at = new Array<number>(buffers.length);
  let bytes = 0;
  for (let b = 0; b < buffers.length; b++) {
    at[b] = bytes;
    bytes += ((buffers[b] as Uint8Array).byteLength + 7) & ~7;
  }
  if (bytes > THREADED_SCRATCH_MAX_BYTES) return false;
  if (p.scratch === undefined || p.scratch.byteLength < bytes) {
    p.scratch = new SharedArrayBuffer(Math.min(THREADED_SCRATCH_MAX_BYTES, Math.max(bytes, (p.scratch?.byteLength ?? 0) * 2)));
    p.scratchId++;
    for (const port of p.ports) port.postMessage({ kind: "memory", id: p.scratchId, buffer: p.scratch });
  }
  const scratch = p.scratch;
  const whole = new Uint8Array(scratch);
  const overwritten = wholeOutputs(launch, buffers);
  for (let b = 0; b < buffers.length; b++) if (!overwritten.has(b)) whole.set(buffers[b] as Uint8Array, at[b] as number);

  const a = p.args;
  const outer = launch.dims[0] as number;
  const chunks = Math.min(MAX_CHUNKS, p.threads * 4, outer);
  const per = Math.ceil(outer / chunks);
  const count = Math.ceil(outer / per);
  a[A_PROGRAM] = id;
  a[A_MEMORY] = p.scratchId;
  a[A_RANK] = rank;
  a[A_OPERANDS] = n;
  a[A_UNIFORMS] = uniforms.length;
  a[A_PER_CHUNK] = per;
  a[A_OUTER] = outer;
  const arrays = new Array<TypedArray>(n);
  for (let k = 0; k < n; k++) {
    const b = launch.bindingOf[k] as number;
    const dtype = launch.dtypes[k] as DType;
    const code = DTYPE_CODES[dtype];
    if (code === undefined) return false;
    const length = Math.floor((buffers[b] as Uint8Array).byteLength / bytesOf(dtype));
    const q = A_HEADER + 4 * k;
    a[q] = code;
    a[q + 1] = at[b] as number;
    a[q + 2] = length;
    a[q + 3] = launch.offsets[k] as number;
    arrays[k] = view(code, scratch, at[b] as number, length);
  }
  const dimsAt = A_HEADER + 4 * n;
  for (let d = 0; d < rank; d++) a[dimsAt + d] = launch.dims[d] as number;
  const stridesAt = dimsAt + rank;
  for (let j = 0; j < n * rank; j++) a[stridesAt + j] = launch.strides[j] as number;
  const uniformsAt = stridesAt + n * rank;
  for (let j = 0; j < uniforms.length; j++) a[uniformsAt + j] = uniforms[j] as number;

  const c = p.control;
  publishChunks(c, count);
  // This thread claims chunks too, running the kernel's own compiled body. Whatever happens, it
  // returns only once every chunk is done: a worker still running could otherwise count a stale
  // chunk as done for the next launch.
  const offsets = new Array<number>(n);
  const dims = new Int32Array(launch.dims);
  let thrown: { readonly error: unknown } | undefined;
  for (let i = claimChunk(c); i >= 0; i = claimChunk(c)) {
    const lo = i * per;
    for (let k = 0; k < n; k++) offsets[k] = (launch.offsets[k] as number) + lo * (launch.strides[k * rank] as number);
    dims[0] = Math.min(outer, lo + per) - lo;
    try {
      if (thrown === undefined) launch.body(arrays, offsets, dims, launch.strides, uniforms);
    } catch (error) {
      thrown = { error };
    }
    chunkDone(c, count);
  }
  const clean = waitForChunks(c, count);
  if (thrown !== undefined) throw thrown.error;
  if (!clean) {
    counts.failed++;
    return false;
  }
  for (let b = 0; b < buffers.length; b++) {
    if (launch.writable[b] !== true) continue;
    const out = buffers[b] as Uint8Array;
    out.set(whole.subarray(at[b] as number, (at[b] as number) + out.byteLength));
  }
  counts.threaded++;
  return true;
}

/**
 * The bindings the launch writes entirely and never reads: an output's, when no input binds the
 * same memory and the output covers the binding from its first byte to its last at unit stride
 * (a fresh dense output, the usual case). Their bytes need no copy into the scratch.
 */
function wholeOutputs(launch: ThreadedLaunch, buffers: readonly Uint8Array[]): Set<number> {
  const out = new Set<number>();
  if (launch.dims.length !== 1) return out;
  const total = launch.dims[0] as number;
  for (let k = launch.inputs; k < launch.bindingOf.length; k++) {
    const b = launch.bindingOf[k] as number;
    if (launch.offsets[k] === 0 && launch.strides[k] === 1 && total * bytesOf(launch.dtypes[k] as DType) === (buffers[b] as Uint8Array).byteLength) out.add(b);
  }
  for (let k = 0; k < launch.inputs; k++) out.delete(launch.bindingOf[k] as number);
  return out;
}

function view(code: number, buffer: SharedArrayBuffer, offset: number, length: number): TypedArray {
  switch (code) {
    case 0: return new Float32Array(buffer, offset, length);
    case 1: return new Int32Array(buffer, offset, length);
    case 2: return new Uint32Array(buffer, offset, length);
    default: return new Uint8Array(buffer, offset, length);
  }
}

/**
 * The id under which the workers know `launch`'s program, sending it to them first if they do
 * not; `undefined` when a step's function is not portable.
 */
function programId(p: ElementwisePool, launch: ThreadedLaunch): number | undefined {
  const known = p.programs.get(launch.key);
  if (known !== undefined) return known;
  let texts = p.portable.get(launch.key);
  if (texts === undefined) {
    texts = launch.portable() ?? null;
    p.portable.set(launch.key, texts);
    if (p.portable.size > ELEMENTWISE_CACHE_CAPACITY) p.portable.delete(p.portable.keys().next().value as string);
  }
  if (texts === null) return undefined;
  const id = p.nextProgram++;
  for (const port of p.ports) port.postMessage({ kind: "program", id, source: texts.source, fns: texts.fns, cvs: texts.cvs });
  p.programs.set(launch.key, id);
  // The workers evict in the same order (oldest inserted first), so both sides hold the same ids.
  if (p.programs.size > ELEMENTWISE_CACHE_CAPACITY) p.programs.delete(p.programs.keys().next().value as string);
  return id;
}
