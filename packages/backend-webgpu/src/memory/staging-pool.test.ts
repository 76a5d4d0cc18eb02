/**
 * The readback staging pool on a real device: reuse by size class, bounded retention, purge.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestWebGpuDevice, type WebGpuDevice } from "../device/request-device.js";
import { StagingPool } from "./staging-pool.js";

let gpu: WebGpuDevice;

beforeAll(async () => {
  gpu = await requestWebGpuDevice({ backend: "auto" });
});

afterAll(() => gpu?.device.destroy());

describe("StagingPool", () => {
  it("hands back a released buffer for any request of the same size class, and a new one otherwise", () => {
    const pool = new StagingPool(gpu.device);
    const first = pool.acquire(1000);
    expect(first.size, "a buffer is its request's size class").toBe(pool.sizeClass(1000));
    expect(first.size, "and never smaller than the request").toBeGreaterThanOrEqual(1000);
    pool.release(first);
    const again = pool.acquire(1001);
    expect(again, "a request of the same class reuses the kept buffer").toBe(first);
    const other = pool.acquire(4096);
    expect(other, "another class gets a new buffer").not.toBe(first);
    expect(pool.stats(), "two created, one reused, nothing kept while both are out").toEqual({ created: 2, reused: 1, destroyed: 0, retainedBytes: 0 });
    pool.release(again);
    pool.release(other);
    pool.purge();
    expect(pool.stats().destroyed, "purge destroys every kept buffer").toBe(2);
    expect(pool.stats().retainedBytes, "and keeps none").toBe(0);
  });

  it("keeps at most maxBuffers and maxBytes, destroying the oldest first", () => {
    const pool = new StagingPool(gpu.device, { maxBuffers: 2, maxBytes: 3 * 4096 });
    const buffers = [1, 2, 3].map((k) => pool.acquire(k * 4096));
    for (const b of buffers) pool.release(b);
    const kept = pool.stats();
    expect(kept.retainedBytes, "the byte budget holds after every release").toBeLessThanOrEqual(3 * 4096);
    expect(kept.destroyed, "the two oldest went: 4K+8K+12K exceeds the budget, and then 8K+12K still does").toBe(2);
    expect(pool.acquire(3 * 4096), "the newest (12K) is the one kept").toBe(buffers[2]);
  });
});
