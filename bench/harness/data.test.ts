import { describe, expect, it } from "vitest";
import { chainRef, checkIndices, compare, hostData, matmulRef } from "./data.js";

describe("host data", () => {
  it("is identical for the same seed and never all zeros", () => {
    const a = hostData(1000, 7);
    const b = hostData(1000, 7);
    expect(Array.from(a), "every library must get the same values").toEqual(Array.from(b));
    expect(a.some((v) => v !== 0), "zeros hide unwritten outputs").toBe(true);
    expect(Array.from(hostData(1000, 8)), "another seed gives other values").not.toEqual(Array.from(a));
  });

  it("stays inside the requested range", () => {
    const x = hostData(10_000, 3, 0, 1);
    expect(Math.min(...x)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...x)).toBeLessThan(1);
  });
});

describe("compare", () => {
  const ref = (i: number) => chainRef(i / 10);
  const indices = checkIndices(100);

  it("accepts a result equal to the reference", () => {
    const out = Float32Array.from({ length: 100 }, (_, i) => ref(i));
    expect(compare(out, ref, indices)).toMatch(/^ok/);
  });

  it("never passes NaN, whatever the tolerance", () => {
    const out = Float32Array.from({ length: 100 }, (_, i) => ref(i));
    out[50] = Number.NaN;
    expect(compare(out, ref, indices, Number.POSITIVE_INFINITY), "NaN is a wrong result, not a small error").toMatch(/^WRONG/);
  });

  it("catches one wrong element among the checked ones", () => {
    const out = Float32Array.from({ length: 100 }, (_, i) => ref(i));
    out[99] = (out[99] as number) + 10;
    expect(compare(out, ref, indices), "the last element is always checked").toMatch(/^WRONG/);
  });

  it("checks the first, the last and a spread of elements", () => {
    const idx = checkIndices(1 << 20);
    expect(idx).toContain(0);
    expect(idx).toContain((1 << 20) - 1);
    expect(idx.length, "bounded, so checks stay cheap at 2^28").toBeLessThan(5000);
  });
});

describe("matmulRef", () => {
  it("computes a row-by-column dot product", () => {
    const a = Float32Array.from([1, 2, 3, 4]);
    const b = Float32Array.from([5, 6, 7, 8]);
    expect(matmulRef(a, b, 2, 0, 0)).toBe(19);
    expect(matmulRef(a, b, 2, 1, 1)).toBe(50);
  });
});
