/**
 * The elementwise interpreter: runs a program without generating code, for realms that refuse
 * `new Function` (a Content-Security-Policy without `'unsafe-eval'`). Each element loads its
 * inputs into a scratch array of registers and calls one closure per step — the same step
 * functions the generated code calls, so both paths agree bit for bit.
 *
 * @module
 */
import type { ElementwiseBody, ElementwiseProgram, ElementwiseStep } from "./elementwise-kernel.js";
import { stepFunctions } from "./elementwise-kernel.js";
import type { TypedArray } from "@weft/fusion";
import { forEachRun, type LoopPlan } from "./strided-loop.js";

/** One step as a closure over the register file and the uniforms. */
type StepClosure = (r: Float64Array, u: Float64Array) => number;

function closure(step: ElementwiseStep): StepClosure {
  const { fn, cv } = stepFunctions(step);
  const f1 = fn as (a: number) => number;
  const f2 = fn as (a: number, b: number) => number;
  const f3 = fn as (a: number, b: number, c: number) => number;
  const c = cv ?? ((v: number) => v);
  switch (step.kind) {
    case "unary":
      return (r) => c(f1(r[step.x] as number));
    case "binary":
      return (r) => c(f2(r[step.a] as number, r[step.b] as number));
    case "binary-scalar":
      return step.scalarFirst
        ? (r, u) => c(f2(u[step.uniform] as number, r[step.x] as number))
        : (r, u) => c(f2(r[step.x] as number, u[step.uniform] as number));
    case "clamp":
      return (r, u) => f3(r[step.x] as number, u[step.lo] as number, u[step.hi] as number);
    case "cast":
      return (r) => f1(r[step.x] as number);
    case "where":
      return (r) => c(f3(r[step.condition] as number, r[step.a] as number, r[step.b] as number));
    default:
      return step satisfies never;
  }
}

/** `program` as a runnable body that interprets its steps per element (see the module doc). */
export function interpretElementwise(program: ElementwiseProgram, plan: LoopPlan): ElementwiseBody {
  const steps = program.steps.map(closure);
  const outs = program.steps.map((s) => s.out);
  const nIn = program.inputs.length;
  const registers = [...program.inputs, ...program.outputs].map((o) => o.register);
  const rank = plan.rank;
  return (arrays, offsets, _dims, strides, uniforms) => {
    const r = new Float64Array(Math.max(1, program.registers));
    const inner = new Float64Array(arrays.length);
    for (let k = 0; k < arrays.length; k++) inner[k] = strides[k * rank + rank - 1] as number;
    forEachRun(plan, offsets, (start, count) => {
      for (let i = 0; i < count; i++) {
        for (let k = 0; k < nIn; k++) r[registers[k] as number] = arrays[k]?.[(start[k] as number) + i * (inner[k] as number)] as number;
        for (let j = 0; j < steps.length; j++) r[outs[j] as number] = (steps[j] as StepClosure)(r, uniforms);
        for (let k = nIn; k < arrays.length; k++) (arrays[k] as TypedArray)[(start[k] as number) + i * (inner[k] as number)] = r[registers[k] as number] as number;
      }
    });
  };
}
