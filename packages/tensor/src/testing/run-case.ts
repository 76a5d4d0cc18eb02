/**
 * The vitest-free core of the conformance kit: run one case on a device under test and on the
 * oracle, compare, and say what differed. {@link describeBackend} (vitest) and the browser entry
 * (the WebGPU harness's page registry) are both thin wrappers over {@link runConformanceCase}.
 *
 * @module
 */
import { UnsupportedError } from "@weft/environment";
import { tidy } from "@weft/fusion";
import type { Device } from "../device/device.js";
import { tensor } from "../ops/creation.js";
import { type DataArray, Tensor } from "../tensor/tensor.js";
import { type ConformanceCase, inputDType } from "./cases.js";
import { EXACT, compareArrays, generate, hashName, prng } from "./host-data.js";

/** One output of a case as read back from a device. */
export interface CaseOutput {
  readonly shape: readonly number[];
  readonly dtype: string;
  readonly data: DataArray;
}

/**
 * What {@link runConformanceCase} found.
 *
 * @remarks
 * `ok: false` always carries a `message` a person can act on: the case, the output index, and
 * either the first (worst) element mismatch with the tolerance, or the error the backend threw.
 */
export type ConformanceResult =
  | { readonly ok: true; readonly message?: undefined }
  | { readonly ok: false; readonly message: string };

/** Options of {@link runConformanceCase}. */
export interface RunCaseOptions {
  /**
   * The case needs a capability this device genuinely lacks: the device under test must throw
   * {@link UnsupportedError} (anything else, including success, fails the case), and the oracle is
   * not consulted.
   */
  readonly expectUnsupported?: boolean;
}

/**
 * Uploads the host inputs of `c` to `device` (a seeded PRNG per case name, so both devices see the
 * same values), runs the case inside `tidy`, reads every output and disposes every tensor it
 * created — inputs and outputs included — whether the case succeeded or threw.
 */
export async function evaluateCase(c: ConformanceCase, device: Device): Promise<CaseOutput[]> {
  const next = prng(hashName(c.name));
  const host = c.inputs.map((spec) => ({ spec, values: generate(spec, next) }));
  const inputs: Tensor[] = [];
  try {
    for (const { spec, values } of host) {
      inputs.push(tensor(spec.dtype === "bool" ? values.map((v) => v !== 0) : values, { device, shape: spec.shape, dtype: inputDType(spec) }));
    }
    const outputs = tidy(() => {
      const r = c.run(inputs, device);
      return r instanceof Tensor ? [r] : [...r];
    });
    try {
      const results: CaseOutput[] = [];
      for (const o of outputs) results.push({ shape: o.shape, dtype: o.dtype, data: await o.data() });
      return results;
    } finally {
      for (const o of outputs) o.dispose();
    }
  } finally {
    for (const t of inputs) t.dispose();
  }
}

const describeError = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/**
 * Compares outputs of the device under test with the oracle's: count, then per output shape,
 * dtype (both decided by the API, so exact) and values within `c.tolerance` (default exact).
 * Returns every disagreeing output, one line each (so a report shows the whole pattern, not just
 * the first symptom), or `undefined` when all agree.
 */
export function compareOutputs(c: ConformanceCase, got: readonly CaseOutput[], want: readonly CaseOutput[]): string | undefined {
  if (got.length !== want.length) return `"${c.name}": the backend produced ${got.length} outputs, the oracle ${want.length}`;
  const problems: string[] = [];
  for (let i = 0; i < got.length; i++) {
    const g = got[i];
    const w = want[i];
    if (g === undefined || w === undefined) continue;
    if (g.shape.length !== w.shape.length || g.shape.some((d, k) => d !== w.shape[k])) {
      problems.push(`output ${i}: shape [${g.shape.join(", ")}] differs from the oracle's [${w.shape.join(", ")}] (shapes are decided by the API)`);
      continue;
    }
    if (g.dtype !== w.dtype) {
      problems.push(`output ${i}: dtype ${g.dtype} differs from the oracle's ${w.dtype} (dtypes are decided by the API)`);
      continue;
    }
    const mismatch = compareArrays(g.data, w.data, c.tolerance ?? EXACT);
    if (mismatch !== undefined) problems.push(`output ${i} (shape [${g.shape.join(", ")}], ${g.dtype}): ${mismatch}`);
  }
  return problems.length === 0 ? undefined : `"${c.name}":\n  ${problems.join("\n  ")}`;
}

/**
 * Runs `c` on `device` and on `oracle` and compares the results (see {@link compareOutputs}).
 * Never throws for a failing case: an error thrown by either device becomes `{ ok: false }` with
 * the device named, so a runner without `expect` (the browser page) reports it like a mismatch.
 */
export async function runConformanceCase(c: ConformanceCase, device: Device, oracle: Device, options: RunCaseOptions = {}): Promise<ConformanceResult> {
  let got: CaseOutput[];
  try {
    got = await evaluateCase(c, device);
  } catch (error) {
    if (options.expectUnsupported === true && error instanceof UnsupportedError) return { ok: true };
    return { ok: false, message: `"${c.name}": the device under test (${device.label}) threw ${describeError(error)}` };
  }
  if (options.expectUnsupported === true) {
    return { ok: false, message: `"${c.name}" is declared unsupported on ${device.label}, but it ran: remove it from the unsupported list` };
  }
  let want: CaseOutput[];
  try {
    want = await evaluateCase(c, oracle);
  } catch (error) {
    return { ok: false, message: `"${c.name}": the oracle (${oracle.label}) threw ${describeError(error)}` };
  }
  const mismatch = compareOutputs(c, got, want);
  return mismatch === undefined ? { ok: true } : { ok: false, message: mismatch };
}

/** Which cases a run covers: `only`/`skip`/`unsupported` match by substring of the case name. */
export interface CaseSelection {
  /** Run only the cases whose name contains one of these strings. */
  readonly only?: readonly string[];
  /** Skip the cases whose name contains one of these strings. */
  readonly skip?: readonly string[];
  /** Cases whose capability the device lacks: they must throw `UnsupportedError`. */
  readonly unsupported?: readonly string[];
}

/** How a {@link CaseSelection} treats one case. */
export type CasePlan = "run" | "skip" | "expect-unsupported";

/** Decides how `selection` treats the case named `name` (skip wins over unsupported, which wins over run). */
export function planCase(name: string, selection: CaseSelection): CasePlan {
  if (selection.only !== undefined && !selection.only.some((s) => name.includes(s))) return "skip";
  if ((selection.skip ?? []).some((s) => name.includes(s))) return "skip";
  if ((selection.unsupported ?? []).some((s) => name.includes(s))) return "expect-unsupported";
  return "run";
}

/**
 * After every case ran: whether `device` still holds exactly `baseline` live tensors (the kit
 * disposes every input, intermediate and output, so any extra wrapper is a leak).
 */
export async function checkReleased(device: Device, baseline: number): Promise<ConformanceResult> {
  await device.syncAll();
  const live = device.memory().liveTensors;
  return live === baseline
    ? { ok: true }
    : { ok: false, message: `${device.label} holds ${live} live tensors after the suite, ${baseline} before: every input, intermediate and output was disposed, so ${live - baseline} leaked` };
}
