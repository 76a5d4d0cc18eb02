/**
 * The linear-layer epilogue on the WebAssembly core: the product, `+ bias` and GELU with the
 * elementwise program's bits (every erf piece, its boundaries, NaN, ±Infinity, signed zeros), and
 * a matmul block takes it exactly for the programs it computes — the serving MLP's layers, with
 * or without their intermediates written — and the general path otherwise.
 */
import { describe, expect, it } from "vitest";
import type { DType, OperationIr, TensorIr } from "@weft/fusion";
import { CpuTestHarness } from "../testing/cpu-test-harness.js";
import { gelu } from "../numerics/special.js";
import { ElementwiseProgramBuilder } from "./elementwise-kernel.js";
import { linearForm } from "./linear-epilogue.js";
import { matmulWasmRows, wasmSupport } from "./matmul-wasm.js";
import type { MatmulArgs } from "./matmul-f64.js";
import type { MemoryHandle } from "@weft/server";

/** Every erf piece's center and both sides of its boundaries (as gelu arguments `x = t·√2`), both signs, and the special values. */
function probeValues(): Float32Array {
  const t: number[] = [];
  for (let i = 0; i <= 6 * 64 + 2; i++) {
    const c = i / 64;
    for (const d of [0, 1 / 128, -1 / 128, 1 / 128 + 1e-9, 1 / 128 - 1e-9, 1e-4]) t.push((c + d) * Math.SQRT2);
  }
  // The negative tail's erfc form (below GELU_TAIL) and both sides of the switch.
  const tail = [-2.5 * Math.SQRT2, -3.5355, -3.5356, -3.6, -4.7, -6, -7, -9, -12, -14, -20, -38, -39];
  const values = [...t, ...t.map((x) => -x), ...tail, 0, -0, NaN, Infinity, -Infinity, 1e-40, -1e-40, 3e38, -3e38, 8.4, -8.4, 8.6, -8.6, 100, -100];
  return Float32Array.from(values);
}

function argsOf(a: Float32Array, b: Float32Array, m: number, k: number, n: number, c: Float32Array): MatmulArgs {
  return { a, b, c, m, n, k, lm: k, lk: 1, rk: n, rn: 1, batches: 1, offsets: Float64Array.of(0, 0, 0), store: Math.fround };
}

/** Bits of a float32 array with every NaN as one pattern (the ops promise NaN, not its payload). */
function bits(v: Float32Array): number[] {
  return Array.from(new Uint32Array(Float32Array.from(v, (x) => (x !== x ? NaN : x)).buffer));
}

describe("linear epilogue (WebAssembly)", () => {
  it("computes the product, the add and GELU with the elementwise program's bits, at every erf piece and special value", () => {
    expect(wasmSupport().available).toBe(true);
    const values = probeValues();
    const n = values.length; // not a multiple of 8
    for (const m of [1, 2, 3]) {
      // x = 1 in every row, so the product is each value exactly (k = 1), then a second row scaled.
      const k = 1;
      const a = Float32Array.from({ length: m }, (_, i) => (i === 2 ? -0.5 : 1));
      const b = values;
      const bias = Float32Array.from({ length: n + 3 }, (_, j) => (j < 3 ? 99 : ((j * 7) % 11) / 16 - 0.3));
      const product = new Float32Array(m * n);
      expect(matmulWasmRows(argsOf(a, b, m, k, n, product))).toBe(true);
      const wantSum = product.map((x, e) => Math.fround(x + (bias[3 + (e % n)] as number)));
      const wantAct = wantSum.map((x) => Math.fround(gelu(x)));
      const wantActOfProduct = product.map((x) => Math.fround(gelu(x)));
      const got = { product: new Float32Array(m * n + 5), sum: new Float32Array(m * n + 5), act: new Float32Array(m * n + 5) };
      const ok = matmulWasmRows(argsOf(a, b, m, k, n, new Float32Array(0)), {
        bias,
        biasBase: 3,
        gelu: true,
        product: got.product,
        productBase: 5,
        sum: got.sum,
        sumBase: 5,
        act: got.act,
        actBase: 5,
      });
      expect(ok).toBe(true);
      expect(bits(got.product.subarray(5)), `m=${m}: product`).toEqual(bits(product));
      expect(bits(got.sum.subarray(5)), `m=${m}: sum`).toEqual(bits(wantSum));
      expect(bits(got.act.subarray(5)), `m=${m}: gelu(sum)`).toEqual(bits(wantAct));
      // GELU straight on the product (no bias), only the activation stored.
      const act = new Float32Array(m * n);
      matmulWasmRows(argsOf(a, b, m, k, n, new Float32Array(0)), { bias: undefined, biasBase: 0, gelu: true, product: undefined, productBase: 0, sum: undefined, sumBase: 0, act, actBase: 0 });
      expect(bits(act), `m=${m}: gelu(product)`).toEqual(bits(wantActOfProduct));
    }
  });

  it("recognises exactly product + bias, gelu, or both, with the bias a broadcast row and dense f32 outputs", () => {
    const memory = (id: number): MemoryHandle => ({ id }) as unknown as MemoryHandle;
    const dense = (shape: number[]) => ({ shape, strides: shape.length === 2 ? [shape[1] as number, 1] : [1], offset: 0 });
    const build = (m: number, n: number, f: (b: ElementwiseProgramBuilder, p: ReturnType<ElementwiseProgramBuilder["input"]>) => void) => {
      const b = new ElementwiseProgramBuilder([m, n]);
      const p = b.input(memory(1), "f32", dense([m, n]));
      f(b, p);
      return { program: b.program(), p };
    };
    const biasRow = (b: ElementwiseProgramBuilder, n: number, dtype: DType = "f32") => b.input(memory(2), dtype, { shape: [n], strides: [1], offset: 0 });
    const mlp = build(8, 128, (b, p) => {
      const s = b.binary("add", p, biasRow(b, 128), "f32", "f32");
      const y = b.unary("gelu", s, "f32", "f32");
      b.output(s, memory(3), "f32", dense([8, 128]));
      b.output(y, memory(4), "f32", dense([8, 128]));
    });
    const form = linearForm(mlp.program, mlp.p, 8, 128);
    expect(form?.gelu).toBe(true);
    expect(form?.bias).toBeDefined();
    expect(form?.sum).toBeDefined();
    expect(form?.act).toBeDefined();
    const logits = build(8, 10, (b, p) => b.output(b.binary("add", p, biasRow(b, 10), "f32", "f32"), memory(3), "f32", dense([8, 10])));
    expect(linearForm(logits.program, logits.p, 8, 10)).toMatchObject({ gelu: false, act: undefined });
    // Not computed by the core: bias on the left, another op, a second step after gelu, a
    // full-matrix addend, more than ROWS_MAX rows, a non-f32 bias.
    const rejected = [
      build(4, 8, (b, p) => b.output(b.binary("add", biasRow(b, 8), p, "f32", "f32"), memory(3), "f32", dense([4, 8]))),
      build(4, 8, (b, p) => b.output(b.binary("sub", p, biasRow(b, 8), "f32", "f32"), memory(3), "f32", dense([4, 8]))),
      build(4, 8, (b, p) => b.output(b.unary("exp", b.unary("gelu", p, "f32", "f32"), "f32", "f32"), memory(3), "f32", dense([4, 8]))),
      build(4, 8, (b, p) => b.output(b.binary("add", p, b.input(memory(2), "f32", dense([4, 8])), "f32", "f32"), memory(3), "f32", dense([4, 8]))),
      build(4, 8, (b, p) => b.output(b.binary("add", p, biasRow(b, 8, "i32"), "f32", "f32"), memory(3), "f32", dense([4, 8]))),
    ];
    for (const r of rejected) expect(linearForm(r.program, r.p, 4, 8)).toBeUndefined();
    const tall = build(17, 8, (b, p) => b.output(b.unary("gelu", p, "f32", "f32"), memory(3), "f32", dense([17, 8])));
    expect(linearForm(tall.program, tall.p, 17, 8)).toBeUndefined();
  });

  it("a matmul block with a linear epilogue gives the unfused values, its intermediates written or not", () => {
    function seeded(count: number, seed: number): number[] {
      let s = seed;
      return Array.from({ length: count }, () => {
        s = (Math.imul(s, 1103515245) + 12345) >>> 0;
        return (s / 2 ** 32) * 8 - 4;
      });
    }
    /** `gelu(x @ w + b)`; `keep` makes the product and the sum outputs of the block (read after it, as in a `tidy`). */
    function layer(h: CpuTestHarness, m: number, k: number, n: number, keep: boolean, withGelu: boolean): { ops: OperationIr[]; outs: TensorIr[] } {
      const x = h.tensor(seeded(m * k, 1), [m, k], "f32");
      const w = h.tensor(seeded(k * n, 2), [k, n], "f32");
      const b = h.tensor(seeded(n, 3), [n], "f32");
      const p = h.output([m, n], "f32");
      const s = h.output([m, n], "f32");
      const ops: OperationIr[] = [
        { kind: "matmul", lhs: x, rhs: w, out: p },
        { kind: "binary", op: "add", lhs: h.use(p, keep ? "ReadOnly" : "ReadWrite"), rhs: b, out: s },
      ];
      const outs = keep ? [h.use(p, "ReadOnly")] : [];
      if (!withGelu) return { ops, outs: [...outs, h.use(s, "ReadOnly")] };
      const y = h.output([m, n], "f32");
      ops.push({ kind: "unary", op: "gelu", input: h.use(s, keep ? "ReadOnly" : "ReadWrite"), out: y });
      if (keep) outs.push(h.use(s, "ReadOnly"));
      return { ops, outs: [...outs, h.use(y, "ReadOnly")] };
    }
    for (const [m, k, n] of [[8, 64, 128], [8, 128, 10], [1, 1, 1], [3, 5, 7], [16, 9, 33], [17, 4, 9]] as const) {
      for (const keep of [false, true]) {
        for (const withGelu of [true, false]) {
          const fused = new CpuTestHarness();
          const plain = new CpuTestHarness({ fusion: false });
          const f = layer(fused, m, k, n, keep, withGelu);
          fused.runFused(f.ops, "matmul");
          const p = layer(plain, m, k, n, keep, withGelu);
          for (const op of p.ops) plain.exec(op);
          const what = `${m}×${k}×${n}, ${keep ? "intermediates written" : "only the result"}, ${withGelu ? "gelu" : "no gelu"}`;
          f.outs.forEach((o, i) => expect(fused.values(o), what).toEqual(plain.values(p.outs[i] as TensorIr)));
        }
      }
    }
  });
});
