/**
 * The gradient table is complete and says what it does at the points where a derivative does not
 * exist: every op of the API has a finite-difference case or is declared not differentiable, every
 * table entry is a rule or a documented absence, and the JAX conventions at kinks and ties hold
 * exactly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as api from "@weft/tensor";
import { type Device, Tensor, memory, setDevice, tensor, tidy } from "@weft/tensor";
import { NOT_AN_OP, NOT_DIFFERENTIABLE, gradientCases } from "../testing/cases.js";
import { cpuDevice } from "../testing/cpu-device.support.js";
import { grad } from "../transform/grad.js";
import { isRule } from "./rule.js";
import { GRADIENTS } from "./table.js";

let device: Device;
beforeAll(() => {
  device = cpuDevice();
  setDevice(device);
});
afterAll(() => setDevice(undefined));

const values = (t: Tensor): number[] => Array.from(t.dataSync());
/** The gradient of `sum(f(x))` at `x`, read back. */
const gradOf = (f: (x: Tensor) => Tensor, x: number[]): number[] =>
  tidy(() => values(grad((v: Tensor) => f(v).sum())(tensor(x))));

describe("the gradient table", () => {
  it("accounts for every op of the API: a finite-difference case, or declared not differentiable", () => {
    const covered = new Set(gradientCases().flatMap((c) => c.covers));
    const names = new Set([...Object.keys(api), ...Object.getOwnPropertyNames(Tensor.prototype)]);
    const missing = [...names].filter((n) => !covered.has(n) && !(n in NOT_DIFFERENTIABLE) && !(n in NOT_AN_OP)).sort();
    expect(
      missing,
      "these API names have no gradient case in @weft/autodiff's src/testing/cases.ts and are not listed in NOT_DIFFERENTIABLE or NOT_AN_OP there: add a case (and a GRADIENTS entry in src/gradients/table.ts) or declare them",
    ).toEqual([]);
    const stale = [...covered, ...Object.keys(NOT_DIFFERENTIABLE)].filter((n) => !names.has(n)).sort();
    expect(stale, "names the kit lists that the API no longer has").toEqual([]);
  });

  it("has a rule or a documented reason for every key", () => {
    for (const [key, entry] of Object.entries(GRADIENTS)) {
      if (isRule(entry as never)) continue;
      const reason = "zero" in entry ? entry.zero : (entry as { nonDifferentiable: string }).nonDifferentiable;
      expect(reason.length, `${key} must say why no cotangent flows`).toBeGreaterThan(10);
    }
  });
});

describe("non-differentiable points follow JAX", () => {
  it("relu at 0 is 0, abs at 0 is +1", () => {
    expect(gradOf((x) => x.relu(), [-1, 0, 2])).toEqual([0, 0, 1]);
    expect(gradOf((x) => x.abs(), [-1, 0, 2])).toEqual([-1, 1, 1]);
  });

  it("maximum/minimum split ties evenly; clamp gives half on a bound", () => {
    tidy(() => {
      const [ga, gb] = grad((a: Tensor, b: Tensor) => a.maximum(b).sum(), { argnums: [0, 1] })(tensor([1, 2, 3]), tensor([1, 5, 0]));
      expect(values(ga)).toEqual([0.5, 0, 1]);
      expect(values(gb)).toEqual([0.5, 1, 0]);
      const [gm] = grad((a: Tensor, b: Tensor) => a.minimum(b).sum(), { argnums: [0] })(tensor([1, 2]), tensor([1, 5]));
      expect(values(gm)).toEqual([0.5, 1]);
    });
    expect(gradOf((x) => x.maximum(1), [0, 1, 2])).toEqual([0, 0.5, 1]);
    expect(gradOf((x) => x.clamp(-1, 1), [-2, -1, 0, 1, 2])).toEqual([0, 0.5, 1, 0.5, 0]);
    expect(gradOf((x) => x.clamp(1, 1), [1])).toEqual([0.25]);
  });

  it("max/min reductions split ties evenly among the tied elements", () => {
    expect(gradOf((x) => x.max(), [3, 1, 3, 3])).toEqual([1 / 3, 0, 1 / 3, 1 / 3].map(Math.fround));
    expect(gradOf((x) => x.reshape([2, 2]).min(1), [2, 2, 1, 4])).toEqual([0.5, 0.5, 1, 0]);
  });

  it("floor, ceil, round and sign have zero derivative; compares and argmax pass nothing", () => {
    expect(gradOf((x) => x.floor().add(x.ceil()).add(x.round()).add(x.sign()), [-1.5, 0, 0.5, 2])).toEqual([0, 0, 0, 0]);
    expect(gradOf((x) => x.gt(0).cast("f32").add(x.argmax().cast("f32")), [1, -1])).toEqual([0, 0]);
  });

  it("pow at zero: ∂/∂x is 0 where the exponent is 0, ∂/∂y is 0 where the base is 0", () => {
    tidy(() => {
      const [gx, gy] = grad((x: Tensor, y: Tensor) => x.pow(y).sum(), { argnums: [0, 1] })(tensor([0, 0, 2]), tensor([0, 2, 3]));
      expect(values(gx)).toEqual([0, 0, 12]);
      expect(values(gy)).toEqual([0, 0, Math.fround(8 * Math.log(2))]);
    });
    expect(gradOf((x) => x.pow(0), [0, 3])).toEqual([0, 0]);
  });

  it("prod with zeros is the product of the other elements", () => {
    expect(gradOf((x) => x.prod(), [2, 0, 3])).toEqual([0, 6, 0]);
    expect(gradOf((x) => x.prod(), [0, 0, 3])).toEqual([0, 0, 0]);
    expect(gradOf((x) => x.prod(), [2, 5, 3])).toEqual([15, 6, 10]);
  });

  it("sqrt at 0 is +Inf, as the formula gives", () => {
    expect(gradOf((x) => x.sqrt(), [0, 4])).toEqual([Infinity, 0.25]);
  });

  it("leaves nothing alive", () => {
    expect(memory().liveTensors).toBe(0);
  });
});
