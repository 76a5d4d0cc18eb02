import type { WebGpuDevice } from "@weft/backend-webgpu";
import { describe, expect, it } from "vitest";
import { repeatsFor, sizesFor } from "./context.js";

/** Only the limits `sizesFor` reads. */
const gpu = (bytes: number): WebGpuDevice => ({ limits: { maxStorageBufferBindingSize: bytes, maxBufferSize: bytes } }) as unknown as WebGpuDevice;

describe("repeatsFor", () => {
  it("full mode holds up to 4 GiB of outputs per throughput sample, 50 iterations at most", () => {
    const sizes = sizesFor(false, gpu(4 * 1024 ** 3));
    expect(sizes.throughputBytes).toBe(4 * 1024 ** 3);
    // A reduction's 4-byte output: 50 iterations per sample (2 when the byte budget overflowed to 0).
    expect(repeatsFor(false, sizes, 4).iterations).toBe(50);
    // The 2^24 chain's 64 MiB output: 50; the 2^28 chain's 1 GiB output: 4.
    expect(repeatsFor(false, sizes, 4 << 24).iterations).toBe(50);
    expect(repeatsFor(false, sizes, 4 << 28).iterations).toBe(4);
    // Past the budget a sample still runs 2 iterations.
    expect(repeatsFor(false, sizes, 8 * 1024 ** 3).iterations).toBe(2);
  });

  it("quick mode holds up to 64 MiB per sample, 8 iterations at most", () => {
    const sizes = sizesFor(true, gpu(1 << 27));
    expect(repeatsFor(true, sizes, 4).iterations).toBe(8);
    expect(repeatsFor(true, sizes, 16 << 20).iterations).toBe(4);
  });
});
