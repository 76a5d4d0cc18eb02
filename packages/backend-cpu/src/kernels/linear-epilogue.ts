/**
 * A linear layer's epilogue on the WebAssembly core: a few-row f32 `matmul` whose fused epilogue
 * is `+ bias` (a row broadcast down the product), `gelu`, or `+ bias` then `gelu` — the serving
 * MLP's hidden layers and its logits — computed by `wasm/gemm.ts` `epilogueRows` over the product
 * while it is still in the module's memory, two f64 lanes at a time.
 *
 * @remarks
 * **Same bits.** The elementwise program of the same ops is what this replaces, and each of its
 * roundings is kept: the product rounded to f32 as stored, the add in f64 rounded to f32, GELU
 * evaluated in f64 with `numerics/special.ts`' formula and erf table (a copy of `ERF_TABLE`),
 * operation for operation, then rounded to f32. WebAssembly's f64 `mul`/`add` are IEEE 754's, as
 * JavaScript's are, and neither contracts `a·b + c`; f32 demotion rounds to nearest even as a
 * `Float32Array` store does. `linear-epilogue.test.ts` holds the two paths bit for bit (NaN,
 * ±Infinity, signed zeros, every erf piece).
 * **Why.** In the serving MLP the two `add+gelu` epilogues ran in the generated JavaScript loop at
 * ~10–20 ns per element (a table lookup and five multiply-adds per element, one lane), about as
 * much CPU time as the products themselves; the product also went through a JavaScript f64 → f32
 * store loop and a read back.
 * **What qualifies** ({@link linearForm}): exactly those steps, in that order, with the product as
 * the add's left operand; the bias an f32 row with unit stride, broadcast along the rows; outputs
 * (the product, the sum, the activation: any of them, as the block writes them — in a `tidy` all
 * three are, since their drops come after the block) dense `m × n` f32; f32 operands of a plain
 * 2-D product of at most `ROWS_MAX` rows. Anything
 * else — and any launch where the WebAssembly core does not run — takes the general path (the
 * product kernel, then the elementwise program).
 *
 * @module
 */
import type { ElementwiseProgram, ProgramOperand, Register } from "./elementwise-kernel.js";
import { KernelMemory } from "./cpu-kernel.js";
import { ROWS_MAX, type MatmulArgs } from "./matmul-f64.js";
import { matmulWasmRows, type RowsEpilogue } from "./matmul-wasm.js";
import type { KernelOperand } from "./tensor-kernels.js";

/** The epilogue program of a linear layer, as {@link linearForm} recognised it. */
export interface LinearForm {
  /** The bias operand (its binding and offset; unit stride along the columns), or `undefined`. */
  readonly bias: ProgramOperand | undefined;
  readonly gelu: boolean;
  /** Where the add's result is stored (dense `m × n` f32), if it is. */
  readonly sum: ProgramOperand | undefined;
  /** Where the GELU's result is stored (dense `m × n` f32), if it is. */
  readonly act: ProgramOperand | undefined;
}

/** Whether `o` is a dense `m × n` f32 operand. */
function dense(o: ProgramOperand, m: number, n: number): boolean {
  return o.dtype === "f32" && o.strides[1] === 1 && (m === 1 || o.strides[0] === n);
}

/**
 * Whether `program` (the epilogue over a product held in register `product`, reference shape
 * `m × n`) is one {@link linearKernel} computes bit for bit, and how; `undefined` otherwise.
 */
export function linearForm(program: ElementwiseProgram, product: Register | undefined, m: number, n: number): LinearForm | undefined {
  if (product === undefined || program.shape.length !== 2 || program.shape[0] !== m || program.shape[1] !== n) return undefined;
  if (m < 1 || m > ROWS_MAX || n < 1) return undefined;
  const { steps, inputs, outputs } = program;
  let bias: ProgramOperand | undefined;
  let sumRegister: Register | undefined;
  let actRegister: Register | undefined;
  let at: Register = product;
  let s = 0;
  const first = steps[0];
  if (first?.kind === "binary" && first.op === "add" && first.inDtype === "f32" && first.outDtype === "f32" && first.a === product && first.b !== product) {
    bias = inputs.find((o) => o.register === first.b);
    if (bias === undefined || bias.dtype !== "f32" || bias.strides[1] !== 1 || (m > 1 && bias.strides[0] !== 0)) return undefined;
    at = sumRegister = first.out;
    s = 1;
  }
  const next = steps[s];
  if (next?.kind === "unary" && next.op === "gelu" && next.inDtype === "f32" && next.outDtype === "f32" && next.x === at) {
    at = actRegister = next.out;
    s++;
  }
  if (s === 0 || s !== steps.length) return undefined;
  if (inputs.length !== (bias === undefined ? 1 : 2) || !inputs.some((o) => o.register === product)) return undefined;
  // Every output is the add's or the GELU's result, each stored once, dense.
  let sum: ProgramOperand | undefined;
  let act: ProgramOperand | undefined;
  for (const o of outputs) {
    if (!dense(o, m, n)) return undefined;
    if (o.register === sumRegister && sum === undefined) sum = o;
    else if (o.register === actRegister && act === undefined) act = o;
    else return undefined;
  }
  if (sum === undefined && act === undefined) return undefined;
  return { bias, gelu: actRegister !== undefined, sum, act };
}

/** What a {@link linearKernel} launch runs: `false` when the WebAssembly core did not run it (nothing written). */
export type LinearRun = (buffers: Uint8Array[]) => boolean;

const NO_ARRAY = new Float32Array(0);

/**
 * The product `lhs @ rhs` (f32, rank 2) and the epilogue `form` as one call of the WebAssembly
 * core, or `undefined` when the operands do not qualify (see the module doc). `product` is where
 * the product itself is stored (dense `m × n` f32), when it is an output of the block. The
 * returned run answers `false` when the core does not run (no WebAssembly SIMD, too large): the
 * caller then runs the general path.
 */
export function linearKernel(lhs: KernelOperand, rhs: KernelOperand, product: KernelOperand | undefined, form: LinearForm, writable: readonly boolean[]): LinearRun | undefined {
  if (lhs.dtype !== "f32" || rhs.dtype !== "f32" || lhs.layout.shape.length !== 2 || rhs.layout.shape.length !== 2) return undefined;
  const m = lhs.layout.shape[0] as number;
  const k = lhs.layout.shape[1] as number;
  const n = rhs.layout.shape[1] as number;
  if (m < 1 || m > ROWS_MAX) return undefined;
  if (product !== undefined && (product.dtype !== "f32" || product.layout.strides[1] !== 1 || (m > 1 && product.layout.strides[0] !== n))) return undefined;
  const [lm, lk] = lhs.layout.strides as [number, number];
  const [rk, rn] = rhs.layout.strides as [number, number];
  // Kept and reused by every launch (a replayed block launches it again); the arrays are let go after each launch.
  const args: { -readonly [F in keyof MatmulArgs]: MatmulArgs[F] } = {
    a: NO_ARRAY,
    b: NO_ARRAY,
    c: NO_ARRAY,
    m,
    n,
    k,
    lm,
    lk,
    rk,
    rn,
    batches: 1,
    offsets: Float64Array.of(lhs.layout.offset, rhs.layout.offset, 0),
    store: Math.fround,
  };
  const { bias, sum, act } = form;
  const epilogue: RowsEpilogue = {
    bias: undefined,
    biasBase: bias?.offset ?? 0,
    gelu: form.gelu,
    product: undefined,
    productBase: product?.layout.offset ?? 0,
    sum: undefined,
    sumBase: sum?.offset ?? 0,
    act: undefined,
    actBase: act?.offset ?? 0,
  };
  return (buffers) => {
    const memory = new KernelMemory(buffers, writable);
    args.a = memory.array(lhs.binding, "f32");
    args.b = memory.array(rhs.binding, "f32");
    epilogue.bias = bias === undefined ? undefined : (memory.array(bias.binding, "f32") as Float32Array);
    epilogue.product = product === undefined ? undefined : (memory.array(product.binding, "f32") as Float32Array);
    epilogue.sum = sum === undefined ? undefined : (memory.array(sum.binding, "f32") as Float32Array);
    epilogue.act = act === undefined ? undefined : (memory.array(act.binding, "f32") as Float32Array);
    try {
      if (!matmulWasmRows(args, epilogue)) return false;
    } finally {
      args.a = NO_ARRAY;
      args.b = NO_ARRAY;
      epilogue.bias = epilogue.product = epilogue.sum = epilogue.act = undefined;
    }
    memory.commit();
    return true;
  };
}
