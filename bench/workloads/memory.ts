/**
 * Workload 7: device memory.
 *
 * 1. A fused chain's footprint: on a *fresh* Weft device (fresh pools), upload the input, run the
 *    8-op chain, and compare the memory report with the bytes of the input plus the output.
 *    The peak `bytesInUse` while the chain runs (sampled by the `PeakMeter` around the server after
 *    every allocation and launch) must equal inputs + outputs when fused, and so must the bytes in
 *    use afterwards. The unfused device shows what fusion saves.
 * 2. Sharing: a materialised tensor is used from 8 other streams (each records a sum of it and
 *    keeps the scalar); `bytesInUse` may grow by the eight scalar outputs only — never by a copy
 *    of the tensor.
 *
 * @module
 */
import { Stream, StreamId } from "@weft/environment";
import { type Tensor, tensor } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { hostData, sizeText, sumRef } from "../harness/data.js";
import { errorText } from "../harness/measure.js";
import { weftChain } from "./chain.js";

/** Runs workload 7. */
export async function runMemory(ctx: BenchContext): Promise<void> {
  const r = ctx.report;
  const n = ctx.sizes.memory;
  const bytes = n * 4;
  const host = hostData(n, 71);
  const size = sizeText(n);
  if (!ctx.weft.ok) {
    r.add({ workload: "memory", variant: "weft", method: "count", size, status: `unavailable: ${ctx.weft.reason}` });
    return;
  }

  for (const fusion of [true, false]) {
    const variant = fusion ? "weft fused" : "weft unfused";
    try {
      const w = await ctx.freshWeft(fusion);
      const m0 = w.device.memory();
      const x = tensor(host, { device: w.device, shape: [n] });
      await w.device.sync();
      w.meter.reset();
      const y = weftChain(x);
      await w.device.sync();
      const m1 = w.device.memory();
      w.meter.stop();
      const peak = w.meter.peak - m0.bytesInUse;
      const inUse = m1.bytesInUse - m0.bytesInUse;
      r.add({ workload: "memory", variant: `${variant}: peak bytesInUse during the chain`, method: "count", size, status: "ok", value: peak, unit: "bytes" });
      r.add({ workload: "memory", variant: `${variant}: bytesInUse after the chain`, method: "count", size, status: "ok", value: inUse, unit: "bytes" });
      r.addRatio({
        workload: "memory",
        id: fusion ? "memory-fused-peak" : "memory-unfused-peak",
        name: `${variant}: peak bytes / (inputs + outputs)`,
        value: peak / (2 * bytes),
        target: fusion ? "= 1" : "info",
        ...(fusion ? { meets: Math.abs(peak / (2 * bytes) - 1) < 0.01 } : {}),
      });
      r.addRatio({
        workload: "memory",
        name: `${variant}: bytes in use after / (inputs + outputs)`,
        value: inUse / (2 * bytes),
        target: "= 1",
        meets: Math.abs(inUse / (2 * bytes) - 1) < 0.01,
      });
      y.dispose();
      x.dispose();
      await w.device.syncAll();
    } catch (error) {
      r.add({ workload: "memory", variant, method: "count", size, status: `failed: ${errorText(error)}` });
    }
  }

  // Sharing one tensor with 8 streams.
  try {
    const w = await ctx.freshWeft(true);
    const x = tensor(host, { device: w.device, shape: [n] });
    await w.device.sync();
    const before = w.device.memory().bytesInUse;
    const sums: Tensor[] = [];
    await Promise.all(
      Array.from({ length: 8 }, () =>
        Stream.run(StreamId.allocate(), async () => {
          const s = x.sum();
          sums.push(s);
          await w.device.sync();
        }),
      ),
    );
    const delta = w.device.memory().bytesInUse - before;
    const expected = sumRef(host);
    const values = await Promise.all(sums.map(async (s) => ((await s.data()) as Float32Array)[0] as number));
    const wrong = values.find((v) => !(Math.abs(v - expected) <= 1e-3 * Math.max(1, Math.abs(expected))));
    const check = wrong === undefined ? "ok (8 sums agree with float64)" : `WRONG: a stream's sum is ${wrong}, expected ${expected}`;
    r.add({ workload: "memory", variant: "share to 8 streams: bytesInUse growth", method: "count", size, status: "ok", value: delta, unit: "bytes", check });
    r.addRatio({
      workload: "memory",
      id: "memory-shared-copies",
      name: "share to 8 streams: growth / bytes of the tensor",
      value: delta / bytes,
      target: "< 1",
      meets: delta < bytes && check.startsWith("ok"),
      note: "the growth is the 8 scalar outputs; one copy of the tensor would be ≥ 1",
    });
    for (const s of sums) s.dispose();
    x.dispose();
    await w.device.syncAll();
  } catch (error) {
    r.add({ workload: "memory", variant: "share to 8 streams", method: "count", size, status: `failed: ${errorText(error)}` });
  }
}
