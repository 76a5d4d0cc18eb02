import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Device, type Tensor, memory, setDevice, tensor, tidy } from "@weft/tensor";
import { cpuDevice } from "../testing/cpu-device.support.js";
import { openTapes } from "../tape/recorder.js";
import { grad, stopGradient, valueAndGrad } from "./grad.js";

let device: Device;
beforeAll(() => {
  device = cpuDevice();
  setDevice(device);
});
afterAll(() => setDevice(undefined));

const values = (t: Tensor): number[] => Array.from(t.dataSync());

describe("grad", () => {
  it("differentiates a polynomial and frees everything", () => {
    const before = memory().liveTensors;
    const x = tensor([1, 2, 3]);
    const g = grad((v: Tensor) => v.square().mul(3).add(v).sum())(x);
    expect(values(g)).toEqual([7, 13, 19]);
    g.dispose();
    x.dispose();
    expect(memory().liveTensors).toBe(before);
    expect(openTapes()).toBe(0);
  });

  it("broadcasts, matmuls and reduces", () => {
    tidy(() => {
      const w = tensor([[1, 2], [3, 4], [5, 6]]);
      const b = tensor([0.5, -0.5]);
      const x = tensor([[1, 0, -1], [2, 1, 0]]);
      const [gw, gb] = grad((w: Tensor, b: Tensor) => x.matmul(w).add(b).sum(), { argnums: [0, 1] })(w, b);
      // d/dw sum(x @ w) = xᵀ · 1 → column sums of x repeated
      expect(values(gw)).toEqual([3, 3, 1, 1, -1, -1]);
      expect(values(gb)).toEqual([2, 2]);
    });
    expect(memory().liveTensors).toBe(0);
  });

  it("valueAndGrad with trees and aux", () => {
    tidy(() => {
      const params = { a: tensor([2]), nested: [tensor([3])] };
      const [[loss, aux], g] = valueAndGrad((p: typeof params) => {
        const prod = p.a.mul(p.nested[0] as Tensor).sum();
        return [prod, { note: "hi" }] as const;
      }, { hasAux: true })(params);
      expect(values(loss)).toEqual([6]);
      expect(aux).toEqual({ note: "hi" });
      expect(values(g.a)).toEqual([3]);
      expect(values(g.nested[0] as Tensor)).toEqual([2]);
    });
    expect(memory().liveTensors).toBe(0);
  });

  it("leaks nothing when f throws", () => {
    const x = tensor([1, 2]);
    expect(() => grad((v: Tensor) => {
      v.exp().log();
      throw new Error("boom");
    })(x)).toThrow("boom");
    x.dispose();
    expect(memory().liveTensors).toBe(0);
    expect(openTapes()).toBe(0);
  });

  it("grad of grad", () => {
    tidy(() => {
      const x = tensor(3);
      const d1 = (v: Tensor) => grad((u: Tensor) => u.pow(3))(v);
      const d2 = grad((v: Tensor) => d1(v))(x);
      expect(values(d2)).toEqual([18]); // d²/dx² x³ = 6x
      // perturbation confusion: d/dx [x · d/dy (x·y)](x) = d/dx x² = 2x
      const pc = grad((v: Tensor) => v.mul(grad((y: Tensor) => v.mul(y))(v)))(x);
      expect(values(pc)).toEqual([6]);
    });
    expect(memory().liveTensors).toBe(0);
  });

  it("stopGradient blocks the flow", () => {
    tidy(() => {
      const x = tensor(2);
      const g = grad((v: Tensor) => v.mul(stopGradient(v)))(x);
      expect(values(g)).toEqual([2]);
    });
  });

  it("async f", async () => {
    const x = tensor([1, 2]);
    const g = await grad(async (v: Tensor) => {
      const y = v.exp();
      await Promise.resolve();
      return y.sum();
    })(x);
    expect(values(g)).toEqual(values(x.exp()).map((v) => v));
    g.dispose();
    x.dispose();
  });
});
