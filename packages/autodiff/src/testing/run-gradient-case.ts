/**
 * The vitest-free core of the gradient kit: check one case's analytic gradient on a device against
 * central finite differences computed on the oracle (see `cases.ts` for the method and the
 * tolerances).
 *
 * @module
 */
import { type Device, type Tensor, tensor, tidy } from "@weft/tensor";
import { hashName, prng } from "@weft/tensor/testing/core";
import { grad } from "../transform/grad.js";
import { type GradientCase, type GradientInput, SMOOTH } from "./cases.js";

/** What {@link runGradientCase} found. `ok: false` carries a message naming the input, element, values and tolerance. */
export type GradientResult =
  | { readonly ok: true; readonly skipped?: string; readonly message?: undefined }
  | { readonly ok: false; readonly message: string };

/** Host values of one input, drawn from its kind with `next` (`index` is the input's position). */
export function generateInput(spec: GradientInput, index: number, next: () => number): number[] {
  const n = spec.shape.reduce((a, d) => a * d, 1);
  const normal = (): number => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  const kind = spec.kind ?? "normal";
  if (kind === "distinct") {
    const order = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [order[i], order[j]] = [order[j] as number, order[i] as number];
    }
    const offset = index % 2 === 0 ? 0.11 : 0.01;
    return order.map((k) => offset + 0.2 * (k - Math.floor(n / 2)));
  }
  return Array.from({ length: n }, () => {
    switch (kind) {
      case "normal":
        return normal();
      case "positive":
        return 0.5 + 1.5 * next();
      case "away":
        return (0.3 + 1.2 * next()) * (next() < 0.5 ? -1 : 1);
      case "unit":
        return 1.8 * next() - 0.9;
      case "offgrid":
        return Math.floor(next() * 7) - 3 + 0.2 + 0.1 * next();
      case "bool":
        return next() < 0.5 ? 1 : 0;
      case "index":
        return Math.floor(next() * (spec.max ?? 1));
      default:
        return kind satisfies never;
    }
  });
}

function dtypeOf(spec: GradientInput): Tensor["dtype"] {
  return spec.dtype ?? (spec.kind === "bool" ? "bool" : spec.kind === "index" ? "i32" : "f32");
}

/** Whether the gradient is taken with respect to this input (float inputs; never conditions or indices). */
export function isDifferentiated(spec: GradientInput): boolean {
  const dtype = dtypeOf(spec);
  return (dtype === "f32" || dtype === "f16") && spec.kind !== "bool" && spec.kind !== "index";
}

function upload(spec: GradientInput, values: readonly number[], device: Device): Tensor {
  const dtype = dtypeOf(spec);
  return tensor(dtype === "bool" ? values.map((v) => v !== 0) : [...values], { device, shape: spec.shape, dtype });
}

/** Runs the case on `device` with `values` and returns its output's values and shape; disposes everything. */
async function evaluate(c: GradientCase, values: readonly (readonly number[])[], device: Device): Promise<{ shape: readonly number[]; data: Float32Array }> {
  const inputs = c.inputs.map((spec, i) => upload(spec, values[i] ?? [], device));
  try {
    const y = tidy(() => c.run(inputs).cast("f32"));
    try {
      return { shape: y.shape, data: Float32Array.from(await y.data()) };
    } finally {
      y.dispose();
    }
  } finally {
    for (const t of inputs) t.dispose();
  }
}

/**
 * Checks `c` on `device`: uploads the case's inputs (a PRNG seeded by the case name, so every
 * device sees the same values), takes `grad(Σ w·run(inputs))` with respect to every float input,
 * and compares each element with the central difference computed on `oracle`. Disposes every
 * tensor it created, whether the case passed, failed or threw.
 */
export async function runGradientCase(c: GradientCase, device: Device, oracle: Device): Promise<GradientResult> {
  if (c.requires !== undefined && (!device.supports(c.requires) || !oracle.supports(c.requires))) {
    return { ok: true, skipped: `${c.requires} is not stored by ${device.supports(c.requires) ? oracle.label : device.label}` };
  }
  const next = prng(hashName(c.name));
  const values = c.inputs.map((spec, i) => generateInput(spec, i, next));
  const base = await evaluate(c, values, oracle);
  const weights = Array.from(base.data, () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()));
  const wrt = c.inputs.map((spec, i) => (isDifferentiated(spec) ? i : -1)).filter((i) => i >= 0);
  const h = c.step ?? 1e-2;

  // Central differences on the oracle, in float64 on the host from the f32 outputs.
  const fd: number[][] = [];
  for (const i of wrt) {
    const x = values[i] ?? [];
    const row: number[] = [];
    for (let j = 0; j < x.length; j++) {
      const xj = x[j] ?? 0;
      const plus = Math.fround(xj + h);
      const minus = Math.fround(xj - h);
      const at = (v: number): number[][] => values.map((vs, k) => (k === i ? vs.map((e, m) => (m === j ? v : e)) : [...vs]));
      const yp = (await evaluate(c, at(plus), oracle)).data;
      const ym = (await evaluate(c, at(minus), oracle)).data;
      let sum = 0;
      for (let k = 0; k < weights.length; k++) sum += (weights[k] ?? 0) * ((yp[k] ?? 0) - (ym[k] ?? 0));
      row.push(sum / (plus - minus));
    }
    fd.push(row);
  }

  // The analytic gradient on the device under test.
  const inputs = c.inputs.map((spec, i) => upload(spec, values[i] ?? [], device));
  const w = tensor(weights, { device, shape: base.shape, dtype: "f32" });
  let analytic: Float32Array[];
  try {
    const loss = (...xs: Tensor[]): Tensor => c.run(xs).cast("f32").mul(w).sum();
    const grads = grad(loss, { argnums: wrt })(...inputs) as unknown as Tensor[];
    try {
      analytic = await Promise.all(grads.map(async (g) => Float32Array.from(await g.data())));
    } finally {
      for (const g of grads) g.dispose();
    }
  } catch (error) {
    return { ok: false, message: `${c.name}: grad threw on ${device.label}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}` };
  } finally {
    w.dispose();
    for (const t of inputs) t.dispose();
  }

  const tol = c.tolerance ?? SMOOTH;
  const problems: string[] = [];
  wrt.forEach((input, k) => {
    const got = analytic[k] ?? new Float32Array();
    const want = fd[k] ?? [];
    let bad = 0;
    let worst = -1;
    let worstExcess = 0;
    for (let j = 0; j < want.length; j++) {
      const a = got[j] ?? Number.NaN;
      const b = want[j] ?? Number.NaN;
      const excess = Math.abs(a - b) - (tol.atol + tol.rtol * Math.abs(b));
      if (!(excess <= 0)) {
        bad++;
        if (worst < 0 || !(excess <= worstExcess)) {
          worst = j;
          worstExcess = excess;
        }
      }
    }
    if (got.length !== want.length) problems.push(`input ${input}: gradient has ${got.length} elements, expected ${want.length}`);
    else if (bad > 0) {
      problems.push(`input ${input} [${c.inputs[input]?.shape.join(",") ?? ""}]: ${bad} of ${want.length} elements differ beyond rtol ${tol.rtol}, atol ${tol.atol}; worst at flat index ${worst} (x = ${String(values[input]?.[worst])}): grad ${String(got[worst])}, central difference ${String(want[worst])}`);
    }
  });
  if (problems.length > 0) return { ok: false, message: `${c.name} on ${device.label}: ${problems.join("; ")}` };
  return { ok: true };
}
