import { describe, expect, it } from "vitest";
import type { ComputeServer } from "@weft/server";
import type { WgslKernel } from "@weft/backend-webgpu";
import { PeakMeter } from "./weft.js";

/** A server stand-in whose bytes in use follow `empty` / `free` calls. */
class CountingServer {
  inUse = 0;
  empty(size: number): { size: number } {
    this.inUse += size;
    return { size };
  }
  free(size: number): void {
    this.inUse -= size;
  }
  launch(): void {}
  memoryUsage(): { bytesInUse: number; bytesReserved: number; pages: number; slices: number; liveAllocations: number } {
    return { bytesInUse: this.inUse, bytesReserved: this.inUse, pages: 0, slices: 0, liveAllocations: 0 };
  }
}

describe("PeakMeter", () => {
  it("keeps the highest bytes in use seen after allocations, even once they are freed", () => {
    const server = new CountingServer();
    const meter = new PeakMeter(server as unknown as ComputeServer<WgslKernel>);
    const wrapped = meter.wrap() as unknown as CountingServer;
    meter.reset();
    wrapped.empty(100);
    wrapped.empty(50);
    wrapped.free(150);
    wrapped.launch();
    expect(meter.peak, "the intermediate high-water mark must survive the frees").toBe(150);
    expect(server.inUse, "the wrapper forwards to the real server").toBe(0);
  });

  it("starts a new measurement from the bytes in use at reset", () => {
    const server = new CountingServer();
    const meter = new PeakMeter(server as unknown as ComputeServer<WgslKernel>);
    const wrapped = meter.wrap() as unknown as CountingServer;
    wrapped.empty(1000);
    wrapped.free(1000);
    meter.reset();
    wrapped.empty(10);
    expect(meter.peak, "an earlier peak must not leak into the next measurement").toBe(10);
  });
});
