/**
 * A CPU device for the package's own tests (the engine and fusers of `@weft/backend-cpu`),
 * without going through the entry package.
 *
 * @module
 */
import { createCpuRuntime } from "@weft/backend-cpu";
import { FusionDevice } from "@weft/fusion";
import { Device } from "@weft/tensor";

/** A fused (default) or unfused CPU device. */
export function cpuDevice(options: { fusion?: boolean } = {}): Device {
  const fusion = options.fusion ?? true;
  return new Device(new FusionDevice(createCpuRuntime({ fusion })), { label: fusion ? "cpu" : "cpu unfused" });
}
