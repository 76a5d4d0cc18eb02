/**
 * Generated elementwise kernels: compiled once per structure (a new scalar, size or offset reuses
 * the code), the cache bounded with least-recently-used eviction, the interpreter compiling
 * nothing, and the collapsed loop plan.
 */
import { describe, expect, it } from "vitest";
import type { OperationIr } from "@weft/fusion";
import { CpuTestHarness } from "../testing/cpu-test-harness.js";
import { ElementwiseCache, elementwiseSource } from "./elementwise-codegen.js";
import type { ElementwiseProgram, Register } from "./elementwise-kernel.js";
import { codeGeneration, resolveKernelPath } from "./kernel-path.js";
import { planLoop } from "./strided-loop.js";

describe("generated elementwise kernels", () => {
  it("a new scalar value or a new size compiles nothing: scalars and sizes are arguments", () => {
    const h = new CpuTestHarness();
    const cache = h.runtime.elementwiseCache;
    const scaled = (n: number, s: number): number[] => {
      const x = h.tensor(Array.from({ length: n }, (_, i) => i), [n]);
      return h.values(h.run({ kind: "binary-scalar", op: "mul", lhs: x, scalar: s, scalarFirst: false, out: h.output([n]) }));
    };
    expect(scaled(4, 2)).toEqual([0, 2, 4, 6]);
    const compiled = cache.compiled;
    expect(scaled(4, -3), "the new scalar arrives as a uniform").toEqual([-0, -3, -6, -9]);
    expect(scaled(7, 0.5)).toEqual([0, 0.5, 1, 1.5, 2, 2.5, 3]);
    expect(cache.compiled, "same structure, same code").toBe(compiled);
    expect(cache.hits).toBeGreaterThanOrEqual(2);
  });

  it("programs that differ only in their ops get different source text (V8 shares type feedback between closures of one text)", () => {
    const r = (n: number): Register => n as Register;
    const program = (binary: "add" | "sub", unary: "gelu" | "exp"): ElementwiseProgram => ({
      shape: [8, 128],
      inputs: [
        { binding: 0, dtype: "f32", strides: [128, 1], offset: 0, register: r(0) },
        { binding: 1, dtype: "f32", strides: [0, 1], offset: 0, register: r(1) },
      ],
      outputs: [{ binding: 2, dtype: "f32", strides: [128, 1], offset: 0, register: r(3) }],
      steps: [
        { kind: "binary", op: binary, inDtype: "f32", outDtype: "f32", a: r(0), b: r(1), out: r(2) },
        { kind: "unary", op: unary, inDtype: "f32", outDtype: "f32", x: r(2), out: r(3) },
      ],
      registers: 4,
    });
    const plan = planLoop([8, 128], [[128, 1], [0, 1], [128, 1]]);
    const geluText = elementwiseSource(program("add", "gelu"), plan);
    const expText = elementwiseSource(program("sub", "exp"), plan);
    expect(geluText).not.toBe(expText);
    expect(geluText.split("\n")[1], "the first line after the directive names the ops").toContain("gelu");
    expect(elementwiseSource(program("add", "gelu"), plan), "and the text stays a pure function of the structure").toBe(geluText);
  });

  it("keeps at most `capacity` functions and evicts the least recently used", () => {
    const cache = new ElementwiseCache(2);
    const body = () => () => undefined;
    const a = cache.getOrCompile("a", body);
    cache.getOrCompile("b", body);
    expect(cache.getOrCompile("a", body), "a hit returns the compiled function").toBe(a);
    cache.getOrCompile("c", body); // evicts b, the least recently used
    expect(cache.size).toBe(2);
    expect(cache.evictions).toBe(1);
    cache.getOrCompile("a", body);
    expect(cache.compiled, "a survived (recently used); b was evicted, so only a, b, c were compiled").toBe(3);
    cache.getOrCompile("b", body);
    expect(cache.compiled, "b compiles again after its eviction").toBe(4);
  });

  it("the interpreter compiles nothing and gives the same bits as generated code", () => {
    const values = (kernels: "generated" | "interpreted"): { out: number[]; compiled: number } => {
      const h = new CpuTestHarness({ kernels });
      const x = h.tensor([-2, -0, 0.5, Number.NaN, Infinity, 3], [2, 3]);
      const y = h.tensor([1, -1, 2], [3]);
      const a = h.output([2, 3]);
      const b = h.output([2, 3]);
      const ops: OperationIr[] = [
        { kind: "binary", op: "div", lhs: x, rhs: y, out: a },
        { kind: "unary", op: "exp", input: h.use(a, "ReadWrite"), out: b },
      ];
      h.runFused(ops);
      return { out: h.values(h.use(b, "ReadOnly")), compiled: h.runtime.elementwiseCache.compiled };
    };
    const generated = values("generated");
    const interpreted = values("interpreted");
    expect(interpreted.compiled).toBe(0);
    expect(generated.compiled).toBeGreaterThan(0);
    expect(interpreted.out.map((v) => Object.is(v, -0) ? "-0" : v)).toEqual(generated.out.map((v) => Object.is(v, -0) ? "-0" : v));
  });

  it("code generation is detected once and `auto` picks it where allowed (Node allows it)", () => {
    expect(codeGeneration().allowed).toBe(true);
    expect(resolveKernelPath("auto")).toBe("generated");
    expect(resolveKernelPath("interpreted")).toBe("interpreted");
  });
});

describe("planLoop", () => {
  it("drops size-1 dims and merges dims every operand walks as one run", () => {
    const dense = planLoop([2, 1, 3, 4], [[12, 12, 4, 1], [12, 12, 4, 1]]);
    expect([...dense.dims], "a dense tensor is one run").toEqual([24]);
    const broadcast = planLoop([2, 3, 4], [[12, 4, 1], [0, 0, 1]]);
    expect([...broadcast.dims], "a row broadcast over [2,3] merges the outer dims only").toEqual([6, 4]);
    expect([...broadcast.strides]).toEqual([4, 1, 0, 1]);
    const transposed = planLoop([3, 4], [[1, 3], [4, 1]]);
    expect(transposed.rank, "a transposed read cannot merge").toBe(2);
    expect(planLoop([2, 0, 3], [[0, 3, 1]]).total).toBe(0);
    expect([...planLoop([], [[]]).dims], "a scalar is one element").toEqual([1]);
  });
});
