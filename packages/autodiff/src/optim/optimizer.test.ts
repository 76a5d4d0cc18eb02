import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Device, type Tensor, ValueError, keep, memory, randn, scope, setDevice, tensor, tidy } from "@weft/tensor";
import { cpuDevice } from "../testing/cpu-device.support.js";
import { valueAndGrad } from "../transform/grad.js";
import { optim } from "./index.js";
import type { OptimizerState } from "./optimizer.js";

let device: Device;
beforeAll(() => {
  device = cpuDevice();
  setDevice(device);
});
afterAll(() => setDevice(undefined));

const values = (t: Tensor): number[] => Array.from(t.dataSync());
const close = (got: readonly number[], want: readonly number[], rtol = 1e-5): void => {
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => expect(Math.abs(g - (want[i] ?? 0)), `element ${i}: ${g} vs ${want[i]}`).toBeLessThanOrEqual(rtol * (1 + Math.abs(want[i] ?? 0))));
};

/** A float64 reference of PyTorch's Adam/AdamW/SGD for one parameter vector. */
function reference(kind: "adam" | "adamw" | "sgd", p0: number[], gradsPerStep: number[][], h: Record<string, number | boolean>): number[] {
  const p = [...p0];
  const m = p.map(() => 0);
  const v = p.map(() => 0);
  let buf: number[] | undefined;
  gradsPerStep.forEach((g, s) => {
    const t = s + 1;
    if (kind === "sgd") {
      const wd = h["weightDecay"] as number;
      const mu = h["momentum"] as number;
      const d = g.map((gi, i) => gi + wd * (p[i] ?? 0));
      let step = d;
      if (mu !== 0) {
        buf = buf === undefined ? [...d] : buf.map((b, i) => mu * b + (d[i] ?? 0));
        step = h["nesterov"] === true ? d.map((di, i) => di + mu * (buf?.[i] ?? 0)) : buf;
      }
      step.forEach((di, i) => (p[i] = (p[i] ?? 0) - (h["lr"] as number) * di));
      return;
    }
    const [lr, b1, b2, eps, wd] = [h["lr"], h["beta1"], h["beta2"], h["eps"], h["weightDecay"]] as number[];
    g.forEach((gi, i) => {
      const d = kind === "adam" ? gi + (wd ?? 0) * (p[i] ?? 0) : gi;
      if (kind === "adamw") p[i] = (p[i] ?? 0) * (1 - (lr ?? 0) * (wd ?? 0));
      m[i] = (b1 ?? 0) * (m[i] ?? 0) + (1 - (b1 ?? 0)) * d;
      v[i] = (b2 ?? 0) * (v[i] ?? 0) + (1 - (b2 ?? 0)) * d * d;
      const denom = Math.sqrt(v[i] ?? 0) / Math.sqrt(1 - (b2 ?? 0) ** t) + (eps ?? 0);
      p[i] = (p[i] ?? 0) - ((lr ?? 0) / (1 - (b1 ?? 0) ** t)) * ((m[i] ?? 0) / denom);
    });
  });
  return p;
}

describe("optimizers match a float64 reference of PyTorch's update", () => {
  const p0 = [0.5, -1.25, 2, 0.1, -0.3, 0.7];
  const gs = [
    [0.1, -0.2, 0.3, -0.4, 0.5, -0.6],
    [0.3, 0.1, -0.2, 0.05, -0.5, 0.2],
    [-0.2, 0.4, 0.1, 0.3, 0.2, -0.1],
  ];
  const run = (opt: ReturnType<typeof optim.adam> | ReturnType<typeof optim.sgd>): number[] => {
    const p = tensor(p0);
    for (const g of gs) tidy(() => opt.step(p, tensor(g)));
    const out = values(p);
    p.dispose();
    opt.dispose();
    return out;
  };
  it("adam (with L2 weight decay)", () => {
    const h = { lr: 0.05, beta1: 0.8, beta2: 0.99, eps: 1e-6, weightDecay: 0.1 };
    close(run(optim.adam(h)), reference("adam", p0, gs, h));
  });
  it("adamw (decoupled weight decay)", () => {
    const h = { lr: 0.05, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.2 };
    close(run(optim.adamw(h)), reference("adamw", p0, gs, h));
  });
  it("sgd: plain, momentum, Nesterov, weight decay", () => {
    for (const h of [
      { lr: 0.1, momentum: 0, nesterov: false, weightDecay: 0 },
      { lr: 0.1, momentum: 0.9, nesterov: false, weightDecay: 0.01 },
      { lr: 0.1, momentum: 0.9, nesterov: true, weightDecay: 0 },
    ]) {
      close(run(optim.sgd(h)), reference("sgd", p0, gs, h));
    }
    expect(memory().liveTensors).toBe(0);
  });
});

describe("in-place updates", () => {
  it("the caller's tensors see the new values; clones keep the old ones; a step inside tidy keeps the parameters", () => {
    const params = { w: tensor([[1, 2], [3, 4]]), b: [tensor([0.5])] };
    const old = params.w.clone();
    const opt = optim.sgd({ lr: 0.5 });
    tidy(() => opt.step(params, { w: tensor([[1, 1], [1, 1]]), b: [tensor([1])] }));
    expect(values(params.w)).toEqual([0.5, 1.5, 2.5, 3.5]);
    expect(values(params.b[0] as Tensor)).toEqual([0]);
    expect(values(old)).toEqual([1, 2, 3, 4]);
    for (const t of [params.w, params.b[0] as Tensor, old]) t.dispose();
    expect(memory().liveTensors).toBe(0);
  });

  it("a parameter a scope owns is still disposed by that scope after updates", async () => {
    const opt = optim.adam({ lr: 0.1 });
    await scope(async () => {
      const w = randn([3]);
      for (let i = 0; i < 3; i++) tidy(() => opt.step(w, w.mul(2)));
      await w.data();
    });
    opt.dispose();
    expect(memory().liveTensors).toBe(0);
  });

  it("an update is one fused kernel per parameter (or fewer)", async () => {
    const params = { w: randn([16, 8]), b: randn([8]), v: randn([5]) };
    const grads = keep(tidy(() => ({ w: randn([16, 8]), b: randn([8]), v: randn([5]) })));
    const opt = optim.adam({ lr: 0.01 });
    await device.syncAll();
    for (let step = 0; step < 3; step++) {
      device.fusion.inspector?.clearLog();
      tidy(() => opt.step(params, grads));
      await device.syncAll();
      const blocks = device.fusion.inspector?.executedBlocks ?? [];
      expect(blocks.length).toBeGreaterThan(0);
      expect(blocks.length).toBeLessThanOrEqual(3);
      for (const b of blocks) expect(b.fused, `${b.name}: ${b.kinds.join(",")}`).toBe(true);
    }
    for (const t of [...Object.values(params), ...Object.values(grads)]) t.dispose();
    opt.dispose();
    expect(memory().liveTensors).toBe(0);
  });
});

describe("state", () => {
  it("saves to plain data (through JSON) and loads into a fresh optimizer: training continues identically", async () => {
    const mk = (): { w: Tensor; b: Tensor } => ({ w: tensor([[0.5, -0.5], [1, 2]]), b: tensor([0.1, -0.1]) });
    const loss = (p: { w: Tensor; b: Tensor }): Tensor => p.w.matmul(tensor([[1], [-1]])).add(p.b).square().sum();
    const step = (opt: ReturnType<typeof optim.adam>, p: { w: Tensor; b: Tensor }): void =>
      tidy(() => {
        const [, g] = valueAndGrad(loss)(p);
        opt.step(p, g);
      });
    const a = mk();
    const optA = optim.adam({ lr: 0.05 });
    for (let i = 0; i < 3; i++) step(optA, a);
    const saved = JSON.parse(JSON.stringify(await optA.state())) as OptimizerState;
    expect(saved.kind).toBe("adam");
    expect(saved.steps).toBe(3);
    expect(saved.slots).toHaveLength(2);
    const b = { w: a.w.clone(), b: a.b.clone() };
    const optB = optim.adam({ lr: 0.05 }).load(saved);
    for (let i = 0; i < 2; i++) {
      step(optA, a);
      step(optB, b);
    }
    expect(values(b.w)).toEqual(values(a.w));
    expect(values(b.b)).toEqual(values(a.b));
    expect(() => optim.sgd({ lr: 1 }).load(saved)).toThrow(ValueError);
    for (const t of [a.w, a.b, b.w, b.b]) t.dispose();
    optA.dispose();
    optB.dispose();
    expect(memory().liveTensors).toBe(0);
  });
});

describe("bad input is refused before anything changes", () => {
  it("mismatched trees, shapes and hyper-parameters", () => {
    const w = tensor([1, 2]);
    const opt = optim.sgd({ lr: 0.1 });
    tidy(() => {
      expect(() => opt.step({ w }, { v: tensor([1, 1]) })).toThrow(/structure/);
      expect(() => opt.step(w, tensor([1, 1, 1]))).toThrow(ValueError);
      expect(() => opt.step([w, w], [tensor([1, 1]), tensor([1, 1])])).toThrow(/twice/);
    });
    expect(values(w)).toEqual([1, 2]);
    expect(() => optim.adam({ lr: -1 })).toThrow(ValueError);
    expect(() => optim.sgd({ lr: 0.1, nesterov: true })).toThrow(/Nesterov/);
    opt.lr = Number.NaN;
    expect(() => tidy(() => opt.step(w, tensor([1, 1])))).toThrow(/lr/);
    w.dispose();
    expect(memory().liveTensors).toBe(0);
  });
});

describe("a training loop stays flat", () => {
  it("1,000 steps of valueAndGrad + adam keep live tensors and bytes constant", async () => {
    const x = randn([32, 4], { seed: 1 });
    const y = tidy(() => x.matmul(tensor([[1], [-2], [0.5], [3]])).add(0.25));
    const params = { w: tidy(() => randn([4, 1], { seed: 2 }).mul(0.1)), b: tensor([0]) };
    const opt = optim.adam({ lr: 0.05 });
    const loss = (p: typeof params): Tensor => x.matmul(p.w).add(p.b).sub(y).square().mean();
    let first: { liveTensors: number; bytesInUse: number } | undefined;
    let last = Infinity;
    for (let i = 0; i < 1000; i++) {
      const l = tidy(() => {
        const [value, g] = valueAndGrad(loss)(params);
        opt.step(params, g);
        return value;
      });
      if (i % 100 === 99) last = (await l.data())[0] ?? Infinity;
      l.dispose();
      if (i === 9) {
        await device.syncAll();
        first = { liveTensors: memory().liveTensors, bytesInUse: memory().bytesInUse };
      }
    }
    await device.syncAll();
    expect(memory().liveTensors).toBe(first?.liveTensors);
    expect(memory().bytesInUse).toBe(first?.bytesInUse);
    expect(last).toBeLessThan(1e-4);
    for (const t of [x, y, params.w, params.b]) t.dispose();
    opt.dispose();
    await device.syncAll();
    expect(memory().liveTensors).toBe(0);
    expect(memory().bytesInUse).toBe(0);
  });
});
