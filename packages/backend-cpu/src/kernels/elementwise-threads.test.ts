/**
 * What may run across threads: a step function travels as text only when that text, compiled
 * apart from its module, is the same function (`portableSource`), and only programs with enough
 * expensive work per operand qualify (`threadedWorthIt`). The bits of threaded launches are held
 * to the single thread's by the random programs of `packages/weft/src/cpu-kernel-paths.test.ts`.
 */
import { describe, expect, it } from "vitest";
import { binaryFn, converter, unaryFn } from "../numerics/scalar-ops.js";
import { erf } from "../numerics/special.js";
import { portableSource, threadedWorthIt, THREADED_ELEMENTWISE_MIN_WORK } from "./elementwise-threads.js";
import type { ElementwiseStep, Register } from "./elementwise-kernel.js";

const r = (n: number): Register => n as Register;

describe("portableSource", () => {
  it("names Math builtins and keeps self-contained functions' own text", () => {
    expect(portableSource(Math.sin, 1)).toBe("Math.sin");
    expect(portableSource(converter("f32"), 1)).toBe("Math.fround");
    const relu = unaryFn("relu", "f32");
    const text = portableSource(relu, 1);
    expect(text).toBe(relu.toString());
    expect(portableSource(binaryFn("pow", "f32"), 2), "ieeePow reads nothing but Math").toBeDefined();
  });

  it("refuses functions that read their module's scope (they would differ or throw elsewhere)", () => {
    expect(portableSource(erf, 1), "erf reads its coefficient table").toBeUndefined();
    expect(portableSource(binaryFn("add", "i32"), 2), "integer add calls wrap()").toBeUndefined();
    const k = 3;
    expect(portableSource((x: number) => x * k, 1), "a closure over a local").toBeUndefined();
  });
});

describe("threadedWorthIt", () => {
  const sin: ElementwiseStep = { kind: "unary", op: "sin", inDtype: "f32", outDtype: "f32", x: r(0), out: r(1) };
  const add: ElementwiseStep = { kind: "binary-scalar", op: "add", inDtype: "f32", outDtype: "f32", x: r(0), uniform: 0, scalarFirst: false, out: r(1) };
  it("takes transcendental programs past the work threshold, never copy-bound arithmetic", () => {
    expect(threadedWorthIt([sin], 1 << 20, 2)).toBe(true);
    expect(threadedWorthIt([sin], 16, 2), "too little work").toBe(false);
    expect(threadedWorthIt([add, add], 1 << 22, 2), "memory-bound: the copies would cost what threads save").toBe(false);
    expect(threadedWorthIt([sin], THREADED_ELEMENTWISE_MIN_WORK / 16, 2), "at the threshold").toBe(true);
    expect(threadedWorthIt([sin], THREADED_ELEMENTWISE_MIN_WORK / 16 - 1, 2), "one element below it").toBe(false);
    expect(threadedWorthIt([sin], 1 << 20, 5), "one sin for five operands: copy-bound").toBe(false);
  });
});
