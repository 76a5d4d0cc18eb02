/**
 * The short, fixed-seed soak CI runs (the long one is `npm run soak`): 20,000 ops of mixed
 * shapes, scalars, seeds and borrowing tasks on the CPU stay flat — live handles back to zero,
 * every cache within its capacity, no borrowed view left, reserved bytes not growing after
 * warm-up. Counts and states only; the report's timings are not asserted.
 */
import { describe, expect, it } from "vitest";
import { createCpuDevice } from "../device/backends.js";
import { runSoak } from "./soak.js";

describe("weft soak (short, CI)", () => {
  it("20,000 ops of new shapes, scalars, seeds and tasks on the CPU: everything stays flat", async () => {
    const device = createCpuDevice();
    const lines: string[] = [];
    const report = await runSoak({ device, ops: 20_000, shapes: 48, out: { write: (s: string) => void lines.push(s) } });
    expect(report.problems, lines.join("")).toEqual([]);
    expect(report.ops).toBeGreaterThanOrEqual(20_000);
    expect(report.tasks, "a quarter of the steps are borrowing tasks").toBeGreaterThan(400);
    const first = report.samples[0];
    const last = report.samples[report.samples.length - 1];
    expect(last?.plans, "plans do not grow with shapes or scalars").toBe(first?.plans);
    expect(device.stats().viewsReleased, "every task's borrowed view was freed by the task").toBeGreaterThanOrEqual(report.tasks);
    device.dispose();
  });
});
