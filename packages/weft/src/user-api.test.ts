/**
 * The small parts of the user API a newcomer reaches for, on a real (CPU) device: `scalar`, the
 * functional forms computing what the methods compute, `toString` (sync, no read) and `print`,
 * and device-mismatch errors that tell two devices of one backend apart.
 */
import { describe, expect, it } from "vitest";
import { createCpuDevice } from "./device/backends.js";
import * as weft from "./index.js";

describe("weft.scalar", () => {
  it("is a rank-0 tensor: f32 by default, bool for a boolean, any dtype asked for", async () => {
    const device = createCpuDevice();
    const s = weft.scalar(2.5, { device });
    expect([s.shape, s.dtype, await s.item()]).toEqual([[], "f32", 2.5]);
    const b = weft.scalar(true, { device });
    expect([b.dtype, await b.item()]).toEqual(["bool", true]);
    const i = weft.scalar(-3, { device, dtype: "i32" });
    expect([i.dtype, await i.item()]).toEqual(["i32", -3]);
    expect(() => weft.scalar([1] as unknown as number, { device }), "arrays go to weft.tensor").toThrow(/scalar: expects a number or a boolean.*weft\.tensor/);
    weft.dispose([s, b, i]);
    expect(device.memory().liveTensors).toBe(0);
  });
});

describe("functional forms", () => {
  it("compute what the methods compute", async () => {
    const device = createCpuDevice();
    await weft.scope(async () => {
      const x = weft.tensor([[1, -2], [3, -4]], { device });
      const pairs: [weft.Tensor, weft.Tensor][] = [
        [weft.exp(x), x.exp()],
        [weft.abs(x), x.abs()],
        [weft.sum(x, 0, { keepDims: true }), x.sum(0, { keepDims: true })],
        [weft.max(x), x.max()],
        [weft.argmin(x, 1), x.argmin(1)],
        [weft.square(x), x.square()],
        [weft.clamp(x, 0), x.clamp(0)],
        [weft.variance(x), x.variance()],
        [weft.not(weft.gt(x, 0)), x.gt(0).not()],
      ];
      for (const [f, m] of pairs) expect(await f.array()).toEqual(await m.array());
    });
    expect(device.memory().liveTensors, "the scope disposed every tensor").toBe(0);
  });
});

describe("toString and print", () => {
  it("toString says shape, dtype and device without reading; print writes it and the values", async () => {
    const device = createCpuDevice();
    const t = weft.tensor([[1, 2], [3, 4.5]], { device });
    expect(String(t)).toBe(`Tensor([2,2], f32, ${device.name})`);
    let printed = "";
    await t.print({ log: (text) => (printed = text) });
    expect(printed).toBe(`Tensor([2,2], f32, ${device.name})\n[[  1,   2],\n [  3, 4.5]]`);
    const big = weft.arange(2000, undefined, 1, { device });
    await big.print({ log: (text) => (printed = text) });
    expect(printed, "large tensors are summarized").toBe(`Tensor([2000], f32, ${device.name})\n[   0,    1,    2, ..., 1997, 1998, 1999]`);
    weft.dispose([t, big]);
    expect(String(t), "a disposed tensor says so").toContain(", disposed)");
    await expect(t.print()).rejects.toThrow(/print: .*already disposed/);
  });
});

describe("mixed devices", () => {
  it("the error names the two devices distinctly, even of one backend", () => {
    const a = createCpuDevice();
    const b = createCpuDevice();
    expect(a.name).not.toBe(b.name);
    expect(a.name).toMatch(/^cpu#\d+$/);
    const x = weft.ones([2], { device: a });
    const y = weft.ones([2], { device: b });
    expect(() => x.add(y)).toThrow(`add: operands live on two devices (${a.name} and ${b.name})`);
    weft.dispose([x, y]);
  });
});
