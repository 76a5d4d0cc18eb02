/**
 * The elementwise kernel: a straight-line program of scalar steps evaluated in ONE pass over the
 * elements of a reference shape. Unfused elementwise ops are one-step programs, copies are
 * zero-step programs, and the fused elementwise optimization is a many-step program — so fused
 * and unfused results are bit-identical by construction.
 *
 * @module
 */
import type { BinaryOp, DType, UnaryOp } from "@weft/fusion";
import type { MemoryHandle } from "@weft/server";
import { invariant } from "@weft/environment";
import { broadcastStrides, forEachPosition, type Layout } from "../handle/layout.js";
import { binaryFn, castFn, convert, unaryFn } from "../numerics/scalar-ops.js";
import { BindingSet, KernelMemory, decodeUniforms, encodeUniforms, operandKey, type CpuKernel } from "./cpu-kernel.js";

/** A register of the program (a slot of the per-element scratch array). */
export type Register = number & { readonly __brand: "Register" };

interface Operand {
  readonly binding: number;
  readonly dtype: DType;
  /** Strides broadcast to the reference shape. */
  readonly strides: readonly number[];
  readonly offset: number;
  readonly register: Register;
  readonly key: string;
}

interface Step {
  readonly key: string;
  readonly out: Register;
  readonly compute: (regs: Float64Array, uniforms: Float64Array) => number;
}

/** A built elementwise launch: what `client.launch` takes. */
export interface BuiltKernel {
  readonly kernel: CpuKernel;
  readonly bindings: ReturnType<BindingSet["bindings"]>;
  readonly uniforms: Uint8Array;
}

/**
 * Builds one elementwise kernel.
 *
 * **Invariants.** Every input and output layout broadcasts into `shape`; registers are assigned in
 * order (inputs and steps), so the key — built from the step and operand keys — is canonical for
 * the program.
 */
export class ElementwiseProgramBuilder {
  readonly #shape: readonly number[];
  readonly #bindings = new BindingSet();
  readonly #inputs: Operand[] = [];
  readonly #outputs: Operand[] = [];
  readonly #steps: Step[] = [];
  /** Scalar values (bounded by the steps' scalars); sent as uniforms, kept out of the key. */
  readonly #uniforms: number[] = [];
  #registers = 0;

  constructor(shape: readonly number[]) {
    this.#shape = [...shape];
  }

  /** The reference shape the program iterates. */
  get shape(): readonly number[] {
    return this.#shape;
  }

  /** Loads an input tensor (a strided view broadcast into the reference shape) into a register. */
  input(memory: MemoryHandle, dtype: DType, layout: Layout): Register {
    const register = this.#register();
    const strides = broadcastStrides(layout, this.#shape);
    const binding = this.#bindings.bind(memory, "read");
    this.#inputs.push({ binding, dtype, strides, offset: layout.offset, register, key: `b${binding}:${operandKey(dtype, { shape: this.#shape, strides, offset: layout.offset })}` });
    return register;
  }

  /** Stores `register` into an output view (broadcast into the reference shape). */
  output(register: Register, memory: MemoryHandle, dtype: DType, layout: Layout): void {
    const strides = broadcastStrides(layout, this.#shape);
    const binding = this.#bindings.bind(memory, "write");
    this.#outputs.push({ binding, dtype, strides, offset: layout.offset, register, key: `r${register}->b${binding}:${operandKey(dtype, { shape: this.#shape, strides, offset: layout.offset })}` });
  }

  /** `op(x)` computed for values of `inDtype`, stored as `outDtype`. */
  unary(op: UnaryOp, x: Register, inDtype: DType, outDtype: DType): Register {
    const fn = unaryFn(op, inDtype);
    return this.#step(`unary:${op}:${inDtype}>${outDtype}(r${x})`, (r) => convert(fn(r[x] ?? 0), outDtype));
  }

  /** `op(a, b)` computed for values of `inDtype`, stored as `outDtype`. */
  binary(op: BinaryOp, a: Register, b: Register, inDtype: DType, outDtype: DType): Register {
    const fn = binaryFn(op, inDtype);
    return this.#step(`binary:${op}:${inDtype}>${outDtype}(r${a},r${b})`, (r) => convert(fn(r[a] ?? 0, r[b] ?? 0), outDtype));
  }

  /** `op(x, scalar)` (or `op(scalar, x)` when `scalarFirst`); the scalar is converted to `inDtype`. */
  binaryScalar(op: BinaryOp, x: Register, scalar: number, scalarFirst: boolean, inDtype: DType, outDtype: DType): Register {
    const fn = binaryFn(op, inDtype);
    const u = this.#uniform(convert(scalar, inDtype));
    return scalarFirst
      ? this.#step(`scalar-first:${op}:${inDtype}>${outDtype}(u${u},r${x})`, (r, us) => convert(fn(us[u] ?? 0, r[x] ?? 0), outDtype))
      : this.#step(`scalar:${op}:${inDtype}>${outDtype}(r${x},u${u})`, (r, us) => convert(fn(r[x] ?? 0, us[u] ?? 0), outDtype));
  }

  /** `min(max(x, lo), hi)`; NaN stays NaN; bounds converted to `dtype`. */
  clamp(x: Register, lo: number, hi: number, dtype: DType): Register {
    const ulo = this.#uniform(convert(lo, dtype));
    const uhi = this.#uniform(convert(hi, dtype));
    return this.#step(`clamp:${dtype}(r${x},u${ulo},u${uhi})`, (r, us) => {
      const v = r[x] ?? 0;
      if (v !== v) return v;
      const l = us[ulo] ?? 0;
      const h = us[uhi] ?? 0;
      return v < l ? l : v > h ? h : v;
    });
  }

  /** `cast` from `from` to `to` (see `castFn` for the rules). */
  cast(x: Register, from: DType, to: DType): Register {
    const fn = castFn(from, to);
    return this.#step(`cast:${from}>${to}(r${x})`, (r) => fn(r[x] ?? 0));
  }

  /** `condition != 0 ? a : b`, stored as `outDtype`. */
  where(condition: Register, a: Register, b: Register, outDtype: DType): Register {
    return this.#step(`where:${outDtype}(r${condition},r${a},r${b})`, (r) => convert((r[condition] ?? 0) !== 0 ? (r[a] ?? 0) : (r[b] ?? 0), outDtype));
  }

  /** The kernel, its bindings and uniforms. */
  build(): BuiltKernel {
    const shape = this.#shape;
    const inputs = [...this.#inputs];
    const outputs = [...this.#outputs];
    const steps = [...this.#steps];
    const registers = this.#registers;
    const writable = this.#bindings.writable();
    invariant(outputs.length > 0, "an elementwise kernel writes at least one output");
    const key = [
      `elementwise[${shape.join(",")}]`,
      `in{${inputs.map((o) => o.key).join(";")}}`,
      `steps{${steps.map((s) => `${s.key}->r${s.out}`).join(";")}}`,
      `out{${outputs.map((o) => o.key).join(";")}}`,
    ].join("|");
    const kernel: CpuKernel = {
      key,
      run(buffers, uniformBytes) {
        const memory = new KernelMemory(buffers, writable);
        const uniforms = decodeUniforms(uniformBytes);
        const inArrays = inputs.map((o) => memory.array(o.binding, o.dtype));
        const outArrays = outputs.map((o) => memory.array(o.binding, o.dtype));
        const regs = new Float64Array(Math.max(1, registers));
        const strides = [...inputs.map((o) => o.strides), ...outputs.map((o) => o.strides)];
        const offsets = [...inputs.map((o) => o.offset), ...outputs.map((o) => o.offset)];
        const nIn = inputs.length;
        forEachPosition(shape, strides, offsets, (_i, pos) => {
          for (let j = 0; j < nIn; j++) regs[inputs[j]!.register] = inArrays[j]![pos[j]!]!;
          for (const step of steps) regs[step.out] = step.compute(regs, uniforms);
          for (let j = 0; j < outputs.length; j++) outArrays[j]![pos[nIn + j]!] = regs[outputs[j]!.register]!;
        });
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

  #step(key: string, compute: Step["compute"]): Register {
    const out = this.#register();
    this.#steps.push({ key, out, compute });
    return out;
  }
}
