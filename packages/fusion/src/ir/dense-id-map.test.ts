import { describe, expect, it } from "vitest";
import { DenseIdMap } from "./dense-id-map.js";

describe("DenseIdMap", () => {
  it("numbers keys densely in order of first sight and answers the same index again", () => {
    const m = new DenseIdMap();
    expect([m.index(900), m.index(7), m.index(900), m.index(1), m.index(7)]).toEqual([0, 1, 0, 2, 1]);
    expect(m.size).toBe(3);
  });

  it("clear forgets every key: the next segment starts at 0 again", () => {
    const m = new DenseIdMap();
    for (let k = 0; k < 100; k++) m.index(k * 3);
    m.clear();
    expect(m.size).toBe(0);
    expect([m.index(3), m.index(0), m.index(3)], "keys of the cleared segment are new again").toEqual([0, 1, 0]);
  });

  it("grows past its initial slots and keeps every index (10,000 keys, then cleared and reused)", () => {
    const m = new DenseIdMap();
    for (let round = 0; round < 3; round++) {
      const keys = Array.from({ length: 10_000 }, (_, i) => 1_000_000 + ((i * 7919) % 10_000) * 13 + round);
      keys.forEach((k, i) => expect(m.index(k)).toBe(i));
      keys.forEach((k, i) => expect(m.index(k)).toBe(i));
      expect(m.size).toBe(10_000);
      m.clear();
    }
  });

  it("tells apart keys past 2^32 whose low words collide, and keys that hash alike", () => {
    const m = new DenseIdMap();
    const big = [2 ** 32 + 5, 2 ** 33 + 5, 5, 2 ** 52 + 5, Number.MAX_SAFE_INTEGER, 0];
    expect(big.map((k) => m.index(k))).toEqual([0, 1, 2, 3, 4, 5]);
    expect(big.map((k) => m.index(k))).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("stays right over thousands of clears (old generations never answer)", () => {
    const m = new DenseIdMap();
    for (let g = 0; g < 5_000; g++) {
      expect(m.index(g % 17)).toBe(0);
      expect(m.index(1_000 + g)).toBe(1);
      m.clear();
    }
  });

  it("the last key answers again, and a clear forgets it (the next segment's first key is new)", () => {
    const m = new DenseIdMap();
    expect([m.index(7), m.index(7), m.index(9), m.index(9), m.index(7)]).toEqual([0, 0, 1, 1, 0]);
    expect(m.size).toBe(2);
    m.clear();
    expect(m.index(9), "the key looked up last before the clear is assigned afresh").toBe(0);
    expect(m.size).toBe(1);
    expect(m.index(7)).toBe(1);
  });
});
