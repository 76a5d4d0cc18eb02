import { describe, expect, it } from "vitest";
import { createTestDevice, fromValues, scalar, unary } from "../testing/index.js";

describe("FusionInspector", () => {
  it("the block log keeps exactly the newest maxLoggedBlocks blocks while counting them all", async () => {
    const { device } = createTestDevice("none", { maxLoggedBlocks: 4 });
    const x = fromValues(device, [1]);
    let t = x;
    for (let i = 0; i < 10; i++) {
      const next = i % 2 === 0 ? unary(device, "neg", t) : scalar(device, "mul", t, 2);
      await next.read();
      t = next;
    }
    expect(device.inspector.executedCount, "init + 10 unary blocks were executed").toBe(11);
    expect(device.inspector.executedBlocks, "only the newest 4 are kept").toHaveLength(4);
    expect(device.inspector.composition(), "oldest dropped first: the last four ops (i = 6..9), in order").toEqual([
      "unfused unary[unary]",
      "unfused binary-scalar[binary-scalar]",
      "unfused unary[unary]",
      "unfused binary-scalar[binary-scalar]",
    ]);
  });

  it("the ring wraps many times, clearLog empties it, and 0 logs nothing while still counting", async () => {
    const { device } = createTestDevice("none", { maxLoggedBlocks: 3 });
    let t = fromValues(device, [1]);
    for (let i = 0; i < 10; i++) {
      t = scalar(device, "mul", t, 2);
      await t.read();
    }
    expect(device.inspector.composition(), "the newest three, oldest first").toEqual(Array(3).fill("unfused binary-scalar[binary-scalar]"));
    device.inspector.clearLog();
    expect(device.inspector.executedBlocks).toEqual([]);
    t = unary(device, "neg", t);
    await t.read();
    expect(device.inspector.composition(), "after a clear the ring starts again").toEqual(["unfused unary[unary]"]);
    expect(device.inspector.executedCount).toBe(1);

    const none = createTestDevice("none", { maxLoggedBlocks: 0 }).device;
    const x = unary(none, "neg", fromValues(none, [1]));
    await x.read();
    expect(none.inspector.executedBlocks, "a log of 0 keeps nothing").toEqual([]);
    expect(none.inspector.executedCount, "init and neg were still counted").toBe(2);
  });

  it("maxLoggedBlocks must be a non-negative integer (a fraction would never wrap the ring)", () => {
    for (const bad of [-1, 2.5, Number.NaN]) expect(() => createTestDevice("none", { maxLoggedBlocks: bad }), String(bad)).toThrow(/maxLoggedBlocks/);
  });
});
