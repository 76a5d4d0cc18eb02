/// <reference types="@webgpu/types" preserve="true" />
import { describe, expect, it } from "vitest";
import { BindGroupCache } from "./bind-group-cache.js";

/** A device that only makes (and counts) bind groups: the cache needs nothing else. */
function fakeDevice(): { device: GPUDevice; made: GPUBindGroupDescriptor[] } {
  const made: GPUBindGroupDescriptor[] = [];
  const device = { createBindGroup: (d: GPUBindGroupDescriptor) => (made.push(d), { label: `group ${made.length}` }) } as unknown as GPUDevice;
  return { device, made };
}
const buffer = (name: string): GPUBuffer => ({ label: name }) as unknown as GPUBuffer;
const layout = (name: string): GPUBindGroupLayout => ({ label: name }) as unknown as GPUBindGroupLayout;

describe("BindGroupCache", () => {
  it("hits exactly the same layout, buffers, offsets, sizes and uniform arena; anything else is a new group", () => {
    const { device, made } = fakeDevice();
    const cache = new BindGroupCache(device);
    const [l1, l2] = [layout("l1"), layout("l2")];
    const [a, b, u] = [buffer("a"), buffer("b"), buffer("u")];
    const g = cache.get(l1, [{ buffer: a, offset: 0, size: 64 }, { buffer: b, offset: 256, size: 64 }]);
    expect(cache.get(l1, [{ buffer: a, offset: 0, size: 64 }, { buffer: b, offset: 256, size: 64 }]), "same key").toBe(g);
    const others = [
      cache.get(l2, [{ buffer: a, offset: 0, size: 64 }, { buffer: b, offset: 256, size: 64 }]),
      cache.get(l1, [{ buffer: b, offset: 0, size: 64 }, { buffer: a, offset: 256, size: 64 }]),
      cache.get(l1, [{ buffer: a, offset: 4, size: 64 }, { buffer: b, offset: 256, size: 64 }]),
      cache.get(l1, [{ buffer: a, offset: 0, size: 68 }, { buffer: b, offset: 256, size: 64 }]),
      cache.get(l1, [{ buffer: a, offset: 0, size: 64 }, { buffer: b, offset: 256, size: 64 }], { buffer: u, size: 16 }),
      cache.get(l1, [{ buffer: a, offset: 0, size: 64 }, { buffer: b, offset: 256, size: 64 }], { buffer: u, size: 32 }),
      cache.get(l1, [{ buffer: a, offset: 0, size: 64 }]),
      cache.get(l1, [{ buffer: a, offset: 2 ** 32, size: 64 }, { buffer: b, offset: 256, size: 64 }]),
    ];
    expect(new Set([g, ...others]).size, "every different key is its own group").toBe(9);
    expect([cache.hits, cache.misses, made.length, cache.size]).toEqual([1, 9, 9, 9]);
    expect(cache.get(l1, [{ buffer: a, offset: 0, size: 64 }, { buffer: b, offset: 256, size: 64 }], { buffer: u, size: 16 }), "a uniform key hits").toBe(others[4]);
  });

  it("forgets the groups of a destroyed buffer and of an evicted layout; keeps at most its limit, least recently used out first", () => {
    const { device } = fakeDevice();
    const cache = new BindGroupCache(device, 3);
    const [l1, l2] = [layout("l1"), layout("l2")];
    const [a, b, c, d] = ["a", "b", "c", "d"].map(buffer) as [GPUBuffer, GPUBuffer, GPUBuffer, GPUBuffer];
    const ga = cache.get(l1, [{ buffer: a, offset: 0, size: 4 }]);
    cache.get(l1, [{ buffer: b, offset: 0, size: 4 }]);
    cache.get(l2, [{ buffer: c, offset: 0, size: 4 }]);
    expect(cache.get(l1, [{ buffer: a, offset: 0, size: 4 }]), "a hit refreshes a").toBe(ga);
    cache.get(l1, [{ buffer: d, offset: 0, size: 4 }]);
    expect([cache.size, cache.evictions], "b, the least recently used, went").toEqual([3, 1]);
    const misses = cache.misses;
    cache.get(l1, [{ buffer: a, offset: 0, size: 4 }]);
    expect(cache.misses, "a stayed").toBe(misses);
    cache.forget(a);
    expect(cache.size).toBe(2);
    expect(cache.get(l1, [{ buffer: a, offset: 0, size: 4 }]), "a forgotten buffer's group is made again").not.toBe(ga);
    cache.forgetLayout(l2);
    expect(cache.size, "c's group (layout l2) went with its layout").toBe(2);
    cache.clear();
    expect(cache.size).toBe(0);
  });

  it("a hot group survives any number of misses although a hit moves it only once per quarter of the limit", () => {
    const { device, made } = fakeDevice();
    const cache = new BindGroupCache(device, 16);
    const l = layout("l");
    const hot = buffer("hot");
    const g = cache.get(l, [{ buffer: hot, offset: 0, size: 4 }]);
    // One hit of the hot group per miss of a fresh group: the cache evicts on every miss once full.
    for (let i = 0; i < 200; i++) {
      expect(cache.get(l, [{ buffer: hot, offset: 0, size: 4 }]), `the hot group, hit ${i}`).toBe(g);
      cache.get(l, [{ buffer: buffer(`cold ${i}`), offset: 0, size: 4 }]);
    }
    expect([made.length, cache.size, cache.evictions], "made once; the cold ones came and went").toEqual([201, 16, 185]);
    // A group used once and never again is evicted within `limit` misses, like LRU.
    const once = buffer("once");
    cache.get(l, [{ buffer: once, offset: 0, size: 4 }]);
    for (let i = 0; i < 16; i++) cache.get(l, [{ buffer: buffer(`later ${i}`), offset: 0, size: 4 }]);
    const before = made.length;
    cache.get(l, [{ buffer: once, offset: 0, size: 4 }]);
    expect(made.length, "it was made again").toBe(before + 1);
  });
});
