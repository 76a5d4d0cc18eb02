import { describe, expect, it } from "vitest";
import { LruCache } from "./lru-cache.js";

describe("LruCache", () => {
  it("holds at most `capacity` entries and evicts the least recently used one", () => {
    const evicted: string[] = [];
    const cache = new LruCache<string, number>(2, { onEvict: (k) => evicted.push(k) });
    cache.set("a", 1);
    cache.set("b", 2);
    expect(cache.get("a"), "a hit refreshes a").toBe(1);
    cache.set("c", 3);
    expect(evicted, "b was the least recently used").toEqual(["b"]);
    expect([...cache.keys()], "least recently used first").toEqual(["a", "c"]);
    expect(cache.stats()).toEqual({ size: 2, capacity: 2, hits: 1, misses: 0, evictions: 1 });
    expect(cache.evictions, "the getter counts what stats() does").toBe(1);
  });

  it("peek and has neither refresh nor count; delete and clear are not evictions", () => {
    const evicted: string[] = [];
    const cache = new LruCache<string, number>(2, { onEvict: (k) => evicted.push(k) });
    cache.set("a", 1);
    cache.set("b", 2);
    expect(cache.peek("a")).toBe(1);
    expect(cache.has("a")).toBe(true);
    cache.set("c", 3);
    expect(evicted, "a was not refreshed by peek/has").toEqual(["a"]);
    expect(cache.delete("b")).toBe(true);
    cache.clear();
    expect(cache.stats(), "no hit or miss counted; one eviction").toEqual({ size: 0, capacity: 2, hits: 0, misses: 0, evictions: 1 });
  });

  it("getOrCreate creates on a miss, reuses on a hit, and stores nothing when create throws", () => {
    const cache = new LruCache<number, string>(4);
    let created = 0;
    for (const k of [1, 2, 1, 1]) cache.getOrCreate(k, () => `v${created++}`);
    expect(created).toBe(2);
    expect(() => cache.getOrCreate(9, () => { throw new Error("boom"); })).toThrow("boom");
    expect(cache.has(9)).toBe(false);
    expect(cache.stats()).toMatchObject({ size: 2, hits: 2, misses: 3 });
  });

  it("a million distinct keys keep the size at the capacity", () => {
    const cache = new LruCache<number, number>(100);
    for (let i = 0; i < 1_000_000; i++) cache.getOrCreate(i, () => i);
    expect(cache.stats()).toMatchObject({ size: 100, evictions: 1_000_000 - 100 });
  });

  it("matches a reference LRU over 20,000 random gets, sets, peeks and deletes", () => {
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed % n;
    };
    const evicted: number[] = [];
    const cache = new LruCache<number, number>(7, { onEvict: (k) => evicted.push(k) });
    const reference: number[] = []; // keys, least recently used first
    const values = new Map<number, number>();
    const referenceEvicted: number[] = [];
    for (let step = 0; step < 20_000; step++) {
      const key = rand(12);
      const kind = rand(4);
      if (kind === 0) {
        const at = reference.indexOf(key);
        expect(cache.get(key)).toBe(at >= 0 ? values.get(key) : undefined);
        if (at >= 0) reference.push(...reference.splice(at, 1));
      } else if (kind === 1) {
        cache.set(key, step);
        values.set(key, step);
        const at = reference.indexOf(key);
        if (at >= 0) reference.splice(at, 1);
        reference.push(key);
        while (reference.length > 7) referenceEvicted.push(reference.shift() as number);
      } else if (kind === 2) {
        expect(cache.peek(key)).toBe(reference.includes(key) ? values.get(key) : undefined);
      } else {
        const at = reference.indexOf(key);
        expect(cache.delete(key)).toBe(at >= 0);
        if (at >= 0) reference.splice(at, 1);
      }
      expect([...cache.keys()]).toEqual(reference);
    }
    expect(evicted).toEqual(referenceEvicted);
    expect([...cache.values()]).toEqual(reference.map((k) => values.get(k)));
  });

  it("shrinking the capacity evicts at once; a bad capacity is refused", () => {
    const cache = new LruCache<number, number>(4);
    for (let i = 0; i < 4; i++) cache.set(i, i);
    cache.capacity = 1;
    expect([...cache.keys()]).toEqual([3]);
    expect(() => new LruCache(0)).toThrow(RangeError);
    expect(() => { cache.capacity = 1.5; }).toThrow(/positive integer/);
  });
});
