/**
 * The elementwise kernel: a straight-line program of scalar steps evaluated in ONE pass over the
 * elements of a reference shape. Unfused elementwise ops are one-step programs, copies are
 * zero-step programs, and the fused elementwise optimization is a many-step program — so fused
 * and unfused results are bit-identical by construction.
 *
 * @remarks
 * **Two ways to run a program** ({@link KernelPath}): compiled into JavaScript once per structure
 * (`elementwise-codegen.ts`, cached by the program's structural key) or interpreted
 * (`elementwise-interpreter.ts`). Both call the same step functions ({@link stepFunctions}).
 * **Keys.** A program's key is structural: the steps (ops, dtypes, register wiring), the
 * operands' dtypes and how each steps along the collapsed loop (rank, innermost step class).
 * Shapes, strides, offsets and scalar values are run-time arguments, so a new size or a new
 * scalar reuses the compiled code.
 *
 * @module
 */
import type { BinaryOp, DType, UnaryOp } from "@weft/fusion";
import type { MemoryHandle } from "@weft/server";
import { invariant } from "@weft/environment";
import { broadcastStrides, type Layout } from "@weft/fusion";
import { binaryFn, castFn, convert, converter, unaryFn, type UnaryFn } from "../numerics/scalar-ops.js";
import { BindingSet, KernelMemory, decodeUniforms, encodeUniforms, type CpuKernel } from "./cpu-kernel.js";
import { compiledElementwise, portableElementwise, type ElementwiseCache } from "./elementwise-codegen.js";
import { runThreaded, threadedWorthIt, type ThreadedLaunch } from "./elementwise-threads.js";
import { cpuThreads } from "./matmul-threads.js";
import { interpretElementwise } from "./elementwise-interpreter.js";
import type { KernelPath } from "./kernel-path.js";
import { innerStep, planLoop, type LoopPlan } from "./strided-loop.js";
import type { TypedArray } from "@weft/fusion";

/** A register of the program (a local of the generated loop, a slot of the interpreter's scratch). */
export type Register = number & { readonly __brand: "Register" };

/** One tensor the program reads or writes, broadcast to the reference shape. */
export interface ProgramOperand {
  readonly binding: number;
  readonly dtype: DType;
  /** Strides broadcast to the reference shape (0 where the operand repeats). */
  readonly strides: readonly number[];
  readonly offset: number;
  /** The register an input is loaded into, or an output is stored from. */
  readonly register: Register;
}

/** One scalar step: reads registers (and uniforms), writes `out`. */
export type ElementwiseStep =
  | { readonly kind: "unary"; readonly op: UnaryOp; readonly inDtype: DType; readonly outDtype: DType; readonly x: Register; readonly out: Register }
  | { readonly kind: "binary"; readonly op: BinaryOp; readonly inDtype: DType; readonly outDtype: DType; readonly a: Register; readonly b: Register; readonly out: Register }
  | {
      readonly kind: "binary-scalar";
      readonly op: BinaryOp;
      readonly inDtype: DType;
      readonly outDtype: DType;
      readonly x: Register;
      /** Index of the scalar among the uniforms. */
      readonly uniform: number;
      readonly scalarFirst: boolean;
      readonly out: Register;
    }
  | { readonly kind: "clamp"; readonly dtype: DType; readonly x: Register; readonly lo: number; readonly hi: number; readonly out: Register }
  | { readonly kind: "cast"; readonly from: DType; readonly to: DType; readonly x: Register; readonly out: Register }
  | { readonly kind: "where"; readonly outDtype: DType; readonly condition: Register; readonly a: Register; readonly b: Register; readonly out: Register };

/**
 * A whole elementwise program: what to read, the steps, what to write.
 *
 * **Invariants.** Registers are numbered in order of definition (inputs and steps), every step
 * reads only registers defined before it, and every output's register is defined.
 */
export interface ElementwiseProgram {
  readonly shape: readonly number[];
  readonly inputs: readonly ProgramOperand[];
  readonly outputs: readonly ProgramOperand[];
  readonly steps: readonly ElementwiseStep[];
  readonly registers: number;
}

/**
 * The functions a step calls, from `numerics/scalar-ops.ts` (never restated): `fn` computes the op
 * in f64 and `cv` brings the result into the output dtype — absent for `cast` (whose function
 * converts) and `clamp` (whose bounds and input are already in the dtype).
 */
export interface StepFunctions {
  readonly fn: ((a: number, b: number, c: number) => number) | ((a: number, b: number) => number) | UnaryFn;
  readonly cv: UnaryFn | undefined;
}

/** `min(max(v, lo), hi)` with NaN kept (the clamp step; bounds already in the value's dtype). */
export function clampValue(v: number, lo: number, hi: number): number {
  if (v !== v) return v;
  return v < lo ? lo : v > hi ? hi : v;
}

/** `cond != 0 ? a : b` (the where step, before conversion). */
export function selectValue(cond: number, a: number, b: number): number {
  return cond !== 0 ? a : b;
}

/** The functions step `step` calls (see {@link StepFunctions}). */
export function stepFunctions(step: ElementwiseStep): StepFunctions {
  switch (step.kind) {
    case "unary":
      return { fn: unaryFn(step.op, step.inDtype), cv: converter(step.outDtype) };
    case "binary":
    case "binary-scalar":
      return { fn: binaryFn(step.op, step.inDtype), cv: converter(step.outDtype) };
    case "clamp":
      return { fn: clampValue, cv: undefined };
    case "cast":
      return { fn: castFn(step.from, step.to), cv: undefined };
    case "where":
      return { fn: selectValue, cv: converter(step.outDtype) };
    default:
      return step satisfies never;
  }
}

/** The structural key of one step (ops, dtypes, registers; never a value). */
export function stepKey(s: ElementwiseStep): string {
  switch (s.kind) {
    case "unary":
      return `u:${s.op}:${s.inDtype}>${s.outDtype}(${s.x})${s.out}`;
    case "binary":
      return `b:${s.op}:${s.inDtype}>${s.outDtype}(${s.a},${s.b})${s.out}`;
    case "binary-scalar":
      return `s${s.scalarFirst ? "f" : ""}:${s.op}:${s.inDtype}>${s.outDtype}(${s.x},u${s.uniform})${s.out}`;
    case "clamp":
      return `c:${s.dtype}(${s.x},u${s.lo},u${s.hi})${s.out}`;
    case "cast":
      return `t:${s.from}>${s.to}(${s.x})${s.out}`;
    case "where":
      return `w:${s.outDtype}(${s.condition},${s.a},${s.b})${s.out}`;
    default:
      return s satisfies never;
  }
}

/**
 * The structural key of `program` iterated by `plan`: what the compiled code depends on, and
 * nothing it takes as an argument (shapes, strides, offsets, scalars).
 */
export function programKey(program: ElementwiseProgram, plan: LoopPlan): string {
  const nIn = program.inputs.length;
  const count = nIn + program.outputs.length;
  let key = `ew/r${plan.rank}/in`;
  for (let k = 0; k < count; k++) {
    const o = (k < nIn ? program.inputs[k] : program.outputs[k - nIn]) as ProgramOperand;
    if (k === nIn) key += "/out";
    key += `|${o.dtype}${innerStep(plan, k)[0] as string}${o.register}`;
  }
  key += "/";
  for (const s of program.steps) key += `${stepKey(s)};`;
  return key;
}

/** A built elementwise launch: what `client.launch` takes. */
export interface BuiltKernel {
  readonly kernel: CpuKernel;
  readonly bindings: ReturnType<BindingSet["bindings"]>;
  readonly uniforms: Uint8Array;
}

/** How a program's kernel runs: the path, and the compiled-code cache it draws on. */
export interface ElementwiseRunner {
  readonly path: KernelPath;
  readonly cache: ElementwiseCache;
}

/**
 * Builds one elementwise kernel.
 *
 * **Invariants.** Every input and output layout broadcasts into `shape`; registers are assigned in
 * order (inputs and steps), so the key is canonical for the program.
 */
export class ElementwiseProgramBuilder {
  readonly #shape: readonly number[];
  readonly #bindings: BindingSet;
  readonly #inputs: ProgramOperand[] = [];
  readonly #outputs: ProgramOperand[] = [];
  readonly #steps: ElementwiseStep[] = [];
  /** Scalar values (bounded by the steps' scalars); sent as uniforms, kept out of the key. */
  readonly #uniforms: number[] = [];
  #registers = 0;

  /**
   * @param bindings the launch's binding set, when the program is part of a larger kernel (a
   * matmul's epilogue binds into the matmul's set, so both index the same buffers); default a
   * set of its own.
   */
  constructor(shape: readonly number[], bindings: BindingSet = new BindingSet()) {
    this.#shape = shape;
    this.#bindings = bindings;
  }

  /** The reference shape the program iterates. */
  get shape(): readonly number[] {
    return this.#shape;
  }

  /** Loads an input tensor (a strided view broadcast into the reference shape) into a register. */
  input(memory: MemoryHandle, dtype: DType, layout: Layout): Register {
    const register = this.#register();
    const binding = this.#bindings.bind(memory, "read");
    this.#inputs.push({ binding, dtype, strides: broadcastStrides(layout, this.#shape), offset: layout.offset, register });
    return register;
  }

  /** Stores `register` into an output view (broadcast into the reference shape). */
  output(register: Register, memory: MemoryHandle, dtype: DType, layout: Layout): void {
    const binding = this.#bindings.bind(memory, "write");
    this.#outputs.push({ binding, dtype, strides: broadcastStrides(layout, this.#shape), offset: layout.offset, register });
  }

  /** `op(x)` computed for values of `inDtype`, stored as `outDtype`. */
  unary(op: UnaryOp, x: Register, inDtype: DType, outDtype: DType): Register {
    return this.#step((out) => ({ kind: "unary", op, inDtype, outDtype, x, out }));
  }

  /** `op(a, b)` computed for values of `inDtype`, stored as `outDtype`. */
  binary(op: BinaryOp, a: Register, b: Register, inDtype: DType, outDtype: DType): Register {
    return this.#step((out) => ({ kind: "binary", op, inDtype, outDtype, a, b, out }));
  }

  /** `op(x, scalar)` (or `op(scalar, x)` when `scalarFirst`); the scalar is converted to `inDtype`. */
  binaryScalar(op: BinaryOp, x: Register, scalar: number, scalarFirst: boolean, inDtype: DType, outDtype: DType): Register {
    const uniform = this.#uniform(convert(scalar, inDtype));
    return this.#step((out) => ({ kind: "binary-scalar", op, inDtype, outDtype, x, uniform, scalarFirst, out }));
  }

  /** `min(max(x, lo), hi)`; NaN stays NaN; bounds converted to `dtype`. */
  clamp(x: Register, lo: number, hi: number, dtype: DType): Register {
    const ulo = this.#uniform(convert(lo, dtype));
    const uhi = this.#uniform(convert(hi, dtype));
    return this.#step((out) => ({ kind: "clamp", dtype, x, lo: ulo, hi: uhi, out }));
  }

  /** `cast` from `from` to `to` (see `castFn` for the rules). */
  cast(x: Register, from: DType, to: DType): Register {
    return this.#step((out) => ({ kind: "cast", from, to, x, out }));
  }

  /** `condition != 0 ? a : b`, stored as `outDtype`. */
  where(condition: Register, a: Register, b: Register, outDtype: DType): Register {
    return this.#step((out) => ({ kind: "where", outDtype, condition, a, b, out }));
  }

  /** The program built so far. */
  program(): ElementwiseProgram {
    return { shape: this.#shape, inputs: this.#inputs, outputs: this.#outputs, steps: this.#steps, registers: this.#registers };
  }

  /** The kernel (run by `runner`'s path), its bindings and uniforms. */
  build(runner: ElementwiseRunner): BuiltKernel {
    const program = this.program();
    invariant(program.outputs.length > 0, "an elementwise kernel writes at least one output");
    const nIn = program.inputs.length;
    const count = nIn + program.outputs.length;
    const strides: (readonly number[])[] = new Array<readonly number[]>(count);
    const offsets: number[] = new Array<number>(count);
    const dtypes: DType[] = new Array<DType>(count);
    const bindingOf: number[] = new Array<number>(count);
    for (let k = 0; k < count; k++) {
      const o = (k < nIn ? program.inputs[k] : program.outputs[k - nIn]) as ProgramOperand;
      strides[k] = o.strides;
      offsets[k] = o.offset;
      dtypes[k] = o.dtype;
      bindingOf[k] = o.binding;
    }
    const plan = planLoop(program.shape, strides);
    const key = programKey(program, plan);
    const writable = this.#bindings.writable();
    const body = runner.path === "generated" ? compiledElementwise(runner.cache, key, program, plan) : interpretElementwise(program, plan);
    const steps = program.steps;
    // Across cores only for generated code (a worker compiles the same source) and enough work.
    const threaded: ThreadedLaunch | undefined =
      runner.path === "generated" && cpuThreads() > 1 && threadedWorthIt(steps, plan.total, count)
        ? { key, portable: () => portableElementwise(program, plan), body, bindingOf, dtypes, offsets, dims: plan.dims, strides: plan.strides, writable, inputs: nIn }
        : undefined;
    // The operands' arrays of one launch, reused by every launch of this kernel (a kernel is kept
    // and launched again: a fused block's launch replay); emptied after each launch, so a kept
    // kernel never keeps a page that was given back alive.
    const arrays: TypedArray[] = new Array<TypedArray>(count).fill(NO_ARRAY);
    const kernel: CpuKernel = {
      key,
      // What messages name the kernel by (never the key): "elementwise mul+add", "copy". A
      // getter: only faults and errors read it, so launches do not build the text.
      get label(): string {
        return steps.length === 0 ? "copy" : `elementwise ${steps.map((st) => ("op" in st ? st.op : st.kind)).join("+")}`;
      },
      run(buffers, uniformBytes) {
        if (plan.total === 0) return;
        if (threaded !== undefined && runThreaded(threaded, buffers, decodeUniforms(uniformBytes))) return;
        const memory = new KernelMemory(buffers, writable);
        for (let k = 0; k < count; k++) arrays[k] = memory.array(bindingOf[k] as number, dtypes[k] as DType);
        try {
          body(arrays, offsets, plan.dims, plan.strides, decodeUniforms(uniformBytes));
        } finally {
          arrays.fill(NO_ARRAY);
        }
        memory.commit();
      },
    };
    return { kernel, bindings: this.#bindings.bindings(), uniforms: encodeUniforms(this.#uniforms) };
  }

  #register(): Register {
    return this.#registers++ as Register;
  }

  #uniform(value: number): number {
    this.#uniforms.push(value);
    return this.#uniforms.length - 1;
  }

  #step(make: (out: Register) => ElementwiseStep): Register {
    const out = this.#register();
    this.#steps.push(make(out));
    return out;
  }
}

/** What a kept kernel's operand arrays hold between launches (no page). */
const NO_ARRAY = new Float32Array(0);

/**
 * The signature of a runnable elementwise program (compiled or interpreted): the operands' typed
 * arrays (inputs then outputs), their offsets, the plan's dims and strides, and the uniforms.
 */
export type ElementwiseBody = (arrays: readonly TypedArray[], offsets: readonly number[], dims: Int32Array, strides: Int32Array, uniforms: Float64Array) => void;
