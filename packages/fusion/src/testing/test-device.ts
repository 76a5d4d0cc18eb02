import { FusionDevice } from "../device/fusion-device.js";
import type { FusionDeviceOptions } from "../device/fusion-device.js";
import type { OperationFuser, Optimization } from "../runtime/fusion-runtime.js";
import { ElementwiseFuser, NeverReadyFuser } from "./fusers.js";
import type { TestHandle } from "./test-runtime.js";
import { TestRuntime } from "./test-runtime.js";

/** Which fusers each stream of a test device gets. */
export type TestFusers = "elementwise" | "never-ready" | "elementwise+never-ready" | "none";

/** A `FusionDevice` over a fresh {@link TestRuntime}, and that runtime. */
export function createTestDevice(
  fusers: TestFusers = "elementwise",
  options: FusionDeviceOptions = {},
): { device: FusionDevice<TestHandle>; runtime: TestRuntime } {
  const runtime = new TestRuntime({
    fusers: (rt) => {
      const list: OperationFuser<Optimization<TestHandle>>[] = [];
      if (fusers.includes("elementwise")) list.push(new ElementwiseFuser(rt));
      if (fusers.includes("never-ready")) list.push(new NeverReadyFuser());
      return list;
    },
  });
  return { device: new FusionDevice<TestHandle>(runtime, options), runtime };
}
