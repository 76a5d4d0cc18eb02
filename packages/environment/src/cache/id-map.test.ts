import { describe, expect, it } from "vitest";
import { IdMap } from "./id-map.js";

/** A seeded generator (LCG): `random(n)` in [0, n). */
function seeded(seed: number): (n: number) => number {
  let s = seed >>> 0;
  return (n) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s % n;
  };
}

/** Asserts that `map` holds exactly the entries of `want`. */
function expectSame(map: IdMap<string>, want: Map<number, string>, what: string): void {
  expect(map.size, `${what}: size`).toBe(want.size);
  const got = new Map<number, string>();
  map.forEach((v, id) => got.set(id, v));
  expect(got, `${what}: entries`).toEqual(want);
  for (const [id, v] of want) expect(map.get(id), `${what}: get(${id})`).toBe(v);
}

describe("IdMap", () => {
  it("agrees with Map over random sets, deletes and lookups, across growth and shrinking", () => {
    for (const seed of [1, 7, 99, 2024]) {
      const random = seeded(seed);
      const map = new IdMap<string>();
      const want = new Map<number, string>();
      // Ids clustered (sequential, as Weft mints them), spread, and past 2^32.
      const id = (): number => [random(64), 1000 + random(5000), 2 ** 32 + random(300), 2 ** 52 + random(50)][random(4)] as number;
      for (let step = 0; step < 20_000; step++) {
        const k = id();
        const r = random(10);
        if (r < 5) {
          map.set(k, `v${step}`);
          want.set(k, `v${step}`);
        } else if (r < 8) {
          expect(map.delete(k), `seed ${seed} step ${step}: delete(${k})`).toBe(want.delete(k));
        } else {
          expect(map.has(k), `seed ${seed} step ${step}: has(${k})`).toBe(want.has(k));
          expect(map.get(k)).toBe(want.get(k));
        }
        if (step % 997 === 0) expectSame(map, want, `seed ${seed} step ${step}`);
      }
      expectSame(map, want, `seed ${seed} at the end`);
      for (const k of [...want.keys()]) expect(map.delete(k)).toBe(true);
      expect(map.size).toBe(0);
      expect(map.capacity, "emptied: at most the table that never shrinks").toBeLessThanOrEqual(1024);
    }
  });

  it("a map filled and emptied by every wave keeps its table (no rebuild), then shrinks after a large drop", () => {
    const map = new IdMap<number>();
    let next = 0;
    for (let wave = 0; wave < 100; wave++) {
      const ids: number[] = [];
      for (let i = 0; i < 32; i++) {
        ids.push(next);
        map.set(next, next++);
      }
      expect(map.capacity, `wave ${wave}: 32 entries in 64 slots`).toBe(64);
      for (const k of ids) map.delete(k);
      expect(map.capacity, `wave ${wave}: emptied, the peak's table stays`).toBe(64);
    }
    for (let i = 0; i < 5000; i++) map.set(i, i);
    expect(map.capacity, "5,000 entries: the power of two above twice as many slots").toBe(16_384);
    for (let i = 0; i < 5000; i++) map.delete(i);
    expect(map.capacity, "after a large drop the table halves, down to the size that never shrinks").toBe(1024);
    for (let i = 0; i < 5000; i++) expect(map.has(i)).toBe(false);
  });

  it("delete keeps every probe run intact: colliding ids deleted in any order stay findable", () => {
    // Ids 8 apart share their low bits; whatever their hashes, deleting from the middle of a run
    // must leave the rest of the run reachable.
    const ids = Array.from({ length: 24 }, (_, i) => i * 8);
    for (const order of [ids, [...ids].reverse(), ids.filter((_, i) => i % 3 === 0).concat(ids.filter((_, i) => i % 3 !== 0))]) {
      const map = new IdMap<number>();
      for (const k of ids) map.set(k, k + 1);
      const left = new Set(ids);
      for (const k of order) {
        expect(map.delete(k)).toBe(true);
        left.delete(k);
        for (const rest of left) expect(map.get(rest), `after deleting ${k}`).toBe(rest + 1);
        expect(map.has(k)).toBe(false);
      }
    }
  });

  it("refuses ids that are not non-negative safe integers, and leaves the map intact", () => {
    const map = new IdMap<number>();
    map.set(3, 3);
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 53]) expect(() => map.set(bad, 0), String(bad)).toThrow(RangeError);
    expect(map.size).toBe(1);
    expect(map.get(3)).toBe(3);
    expect(map.get(-1), "a lookup of a bad id finds nothing").toBeUndefined();
    expect(map.delete(1.5)).toBe(false);
  });

  it("clear, ids and values", () => {
    const map = new IdMap<string>();
    map.set(5, "a").set(9, "b");
    expect(map.ids().sort((a, b) => a - b)).toEqual([5, 9]);
    expect(map.values().sort()).toEqual(["a", "b"]);
    map.clear();
    expect(map.size).toBe(0);
    expect(map.get(5)).toBeUndefined();
  });
});
