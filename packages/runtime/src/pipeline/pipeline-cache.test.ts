import { describe, expect, it } from "vitest";
import { PipelineCache } from "./pipeline-cache.js";

describe("PipelineCache", () => {
  it("a kernel compiles once per (source, features); the feature order does not matter", () => {
    const cache = new PipelineCache<{ id: number }>();
    let created = 0;
    const create = () => ({ id: created++ });
    const a = cache.getOrCreate("fn main() {}", ["shader-f16", "subgroups"], create);
    const b = cache.getOrCreate("fn main() {}", ["subgroups", "shader-f16"], create);
    expect(b, "same canonical key: the cached pipeline").toBe(a);
    cache.getOrCreate("fn main() {}", [], create);
    expect(created, "other features compile anew").toBe(2);
    expect([cache.hits, cache.misses, cache.size], "hits, misses, size").toEqual([1, 2, 2]);
    cache.clear();
    expect([cache.hits, cache.misses, cache.size], "clear resets everything").toEqual([0, 0, 0]);
  });

  it("a lookup by the kept canonical key shares the entries, counts and recency of getOrCreate; peek touches nothing", () => {
    const cache = new PipelineCache<{ id: number }>({ capacity: 2 });
    let created = 0;
    const create = () => ({ id: created++ });
    const full = PipelineCache.canonicalKey("k1", ["subgroups", "shader-f16"]);
    const a = cache.getOrCreateCanonical(full, create);
    expect(cache.getOrCreate("k1", ["shader-f16", "subgroups"], create), "the same entry by either path").toBe(a);
    cache.getOrCreate("k2", [], create);
    expect(cache.getOrCreateCanonical(full, create), "a hit refreshes k1's recency").toBe(a);
    expect(cache.peek("k2", []), "peek finds k2").toBeDefined();
    cache.getOrCreate("k3", [], create); // evicts the least recently used: k2 (peek did not refresh it)
    expect(cache.peek("k2", []), "k2 was evicted").toBeUndefined();
    expect(cache.peek("k1", ["shader-f16", "subgroups"]), "k1 stayed").toBe(a);
    expect([cache.hits, cache.misses, created], "hits, misses, creations").toEqual([2, 3, 3]);
  });

  it("a failing create caches nothing, so the next request tries again", () => {
    const cache = new PipelineCache<string>();
    expect(() => cache.getOrCreate("k", [], () => {
      throw new Error("compile error");
    })).toThrow("compile error");
    expect(cache.size, "nothing cached").toBe(0);
    expect(cache.getOrCreate("k", [], () => "ok"), "retried").toBe("ok");
  });

  it("concurrent async requests of one key share one creation; a rejection is forgotten", async () => {
    const cache = new PipelineCache<string>();
    let created = 0;
    const create = async () => {
      created++;
      await Promise.resolve();
      return "pipeline";
    };
    const [a, b] = await Promise.all([cache.getOrCreateAsync("k", [], create), cache.getOrCreateAsync("k", [], create)]);
    expect([a, b, created], "one creation, shared").toEqual(["pipeline", "pipeline", 1]);
    await expect(cache.getOrCreateAsync("bad", [], () => Promise.reject(new Error("rejected")))).rejects.toThrow("rejected");
    expect(cache.has("bad", []), "a rejected creation is removed").toBe(false);
  });

  it("holds at most `capacity` pipelines: the least recently used is evicted, counted, and created again on its next request", () => {
    const evicted: string[] = [];
    const cache = new PipelineCache<string>({ capacity: 2, onEvict: (p) => evicted.push(p) });
    for (const k of ["a", "b", "a", "c"]) cache.getOrCreate(k, [], () => `pipeline ${k}`);
    expect(evicted, "b was the least recently used").toEqual(["pipeline b"]);
    expect(cache.stats()).toEqual({ size: 2, capacity: 2, hits: 1, misses: 3, evictions: 1 });
    cache.getOrCreate("b", [], () => "pipeline b again");
    expect(cache.stats(), "a re-creation is a miss; the size stays at the capacity").toMatchObject({ size: 2, misses: 4, evictions: 2 });
    for (let i = 0; i < 1000; i++) cache.getOrCreate(`shape ${i}`, [], () => `p${i}`);
    expect(cache.size, "a thousand new kernels hold two pipelines").toBe(2);
  });
});

