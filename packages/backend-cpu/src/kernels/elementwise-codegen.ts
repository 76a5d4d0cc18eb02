/**
 * Elementwise programs compiled into JavaScript: one straight-line loop nest per program
 * structure, over typed arrays, with every step a call of its numerics function (which V8
 * inlines) and every register a local — no per-element closure, array or allocation.
 *
 * @remarks
 * **What the code depends on** is exactly the program's structural key (`programKey`): the
 * steps, the dtypes, the register wiring, the collapsed loop's rank and each operand's innermost
 * step class (`unit`: `a[p + i]`, `zero`: loaded once per run, `strided`: `a[p + i * s]`).
 * Sizes, strides, offsets and scalar values are arguments, so serving new shapes or scalars
 * compiles nothing.
 * **Bounded.** Compiled functions live in an {@link ElementwiseCache} of at most
 * {@link ELEMENTWISE_CACHE_CAPACITY} entries with least-recently-used eviction.
 *
 * @example The body generated for `relu(x * s)` over a dense f32 input (rank 1; the first line
 * names the steps, so programs that differ only in their ops never share V8's type feedback):
 * ```js
 * // s:mul:f32>f32(0,u0)1 u:relu:f32>f32(1)2
 * const a0 = A[0], a1 = A[1];
 * const u0 = U[0];
 * const d0 = D[0];
 * const p0_0 = O[0], p1_0 = O[1];
 * for (let i = 0; i < d0; i++) {
 *   const r0 = a0[p0_0 + i];
 *   const r1 = c0(f0(r0, u0));
 *   const r2 = c1(f1(r1));
 *   a1[p1_0 + i] = r2;
 * }
 * ```
 *
 * @module
 */
import { LruCache } from "@weft/environment";
import type { ElementwiseBody, ElementwiseProgram, ElementwiseStep, ProgramOperand } from "./elementwise-kernel.js";
import { stepFunctions, stepKey } from "./elementwise-kernel.js";
import { innerStep, type LoopPlan } from "./strided-loop.js";
import { portableSource, type PortableProgram } from "./elementwise-threads.js";

/**
 * Most compiled elementwise functions one runtime keeps. A serving process sees a handful of block
 * structures (one per distinct model segment); 512 covers many models at once while bounding the
 * memory to a few MB of code.
 */
export const ELEMENTWISE_CACHE_CAPACITY = 512;

/**
 * Compiled elementwise functions by structural key, least recently used evicted first.
 *
 * **Bounded.** At most `capacity` entries (an `LruCache`: a hit, every launch, relinks one entry
 * and allocates nothing); counters only grow.
 */
export class ElementwiseCache {
  readonly #entries: LruCache<string, ElementwiseBody>;
  /** Programs compiled (misses). */
  compiled = 0;

  constructor(capacity: number = ELEMENTWISE_CACHE_CAPACITY) {
    this.#entries = new LruCache(Math.max(1, capacity));
  }

  /** The most entries held. */
  get capacity(): number {
    return this.#entries.capacity;
  }

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Launches served by an already compiled function. */
  get hits(): number {
    return this.#entries.stats().hits;
  }

  /** Entries dropped to stay within `capacity`. */
  get evictions(): number {
    return this.#entries.stats().evictions;
  }

  /** The function for `key`, compiling it with `compile` on a miss. */
  getOrCompile(key: string, compile: () => ElementwiseBody): ElementwiseBody {
    return this.#entries.getOrCreate(key, () => {
      const body = compile();
      this.compiled++;
      return body;
    });
  }
}

/** The compiled function of `program` (structure `key`, iterated by `plan`), from `cache` or compiled now. */
export function compiledElementwise(cache: ElementwiseCache, key: string, program: ElementwiseProgram, plan: LoopPlan): ElementwiseBody {
  return cache.getOrCompile(key, () => compileElementwise(program, plan));
}

/** Compiles `program` for loops shaped like `plan` (see the module doc for what is baked in). */
export function compileElementwise(program: ElementwiseProgram, plan: LoopPlan): ElementwiseBody {
  const fns = program.steps.map((s) => stepFunctions(s));
  const source = elementwiseSource(program, plan);
  const factory = new Function("F", "C", source) as (f: unknown[], c: unknown[]) => ElementwiseBody;
  return factory(fns.map((f) => f.fn), fns.map((f) => f.cv));
}

/**
 * `program`'s compiled form as text for another thread (`elementwise-threads.ts`): the source
 * {@link compileElementwise} compiles and each step function's portable text, or `undefined` when
 * a step's function is not portable (it reads its module's scope).
 */
export function portableElementwise(program: ElementwiseProgram, plan: LoopPlan): PortableProgram | undefined {
  const fns: string[] = [];
  const cvs: (string | null)[] = [];
  for (const step of program.steps) {
    const { fn, cv } = stepFunctions(step);
    const text = portableSource(fn as (...args: number[]) => number, fn.length);
    if (text === undefined) return undefined;
    fns.push(text);
    if (cv === undefined) cvs.push(null);
    else {
      const cvText = portableSource(cv, 1);
      if (cvText === undefined) return undefined;
      cvs.push(cvText);
    }
  }
  return { source: elementwiseSource(program, plan), fns, cvs };
}

/** Lines with indentation (jax-js's `WgslBuilder` shape, for JavaScript). */
class Lines {
  readonly #out: string[] = [];
  #depth = 0;

  line(text: string): this {
    this.#out.push(`${"  ".repeat(this.#depth)}${text}`);
    return this;
  }

  block(open: string, inner: () => void): this {
    this.line(`${open} {`);
    this.#depth++;
    inner();
    this.#depth--;
    return this.line("}");
  }

  text(): string {
    return this.#out.join("\n");
  }
}

function stepExpression(step: ElementwiseStep, j: number): string {
  const call = (args: string): string => (stepFunctions(step).cv === undefined ? `f${j}(${args})` : `c${j}(f${j}(${args}))`);
  switch (step.kind) {
    case "unary":
      return call(`r${step.x}`);
    case "binary":
      return call(`r${step.a}, r${step.b}`);
    case "binary-scalar":
      return call(step.scalarFirst ? `u${step.uniform}, r${step.x}` : `r${step.x}, u${step.uniform}`);
    case "clamp":
      return call(`r${step.x}, u${step.lo}, u${step.hi}`);
    case "cast":
      return call(`r${step.x}`);
    case "where":
      return call(`r${step.condition}, r${step.a}, r${step.b}`);
    default:
      return step satisfies never;
  }
}

function uniformsOf(step: ElementwiseStep): number[] {
  switch (step.kind) {
    case "binary-scalar":
      return [step.uniform];
    case "clamp":
      return [step.lo, step.hi];
    default:
      return [];
  }
}

/** The source of the function {@link compileElementwise} builds (exported for tests and inspection). */
export function elementwiseSource(program: ElementwiseProgram, plan: LoopPlan): string {
  const operands: readonly ProgramOperand[] = [...program.inputs, ...program.outputs];
  const nIn = program.inputs.length;
  const rank = plan.rank;
  const inner = rank - 1;
  const classes = operands.map((_, k) => innerStep(plan, k));
  const w = new Lines();
  w.line(`"use strict";`);
  // The steps' ops, which the code below names only as `f0`, `f1`, …: two programs that differ
  // only in their ops would otherwise have the same text, and V8 gives closures compiled from the
  // same text one shared type feedback — `add+gelu` and `sub+exp` would make each other's calls
  // polymorphic, never inlined (2.2× slower per element, 17.8 against 8.2 µs for a 1,024-element
  // gelu loop on the 2-core machine, 2026-11-30).
  w.line(`// ${program.steps.map(stepKey).join(" ")}`);
  program.steps.forEach((s, j) => w.line(`const f${j} = F[${j}]${stepFunctions(s).cv === undefined ? "" : `, c${j} = C[${j}]`};`));
  w.block("return function elementwise(A, O, D, S, U)", () => {
    w.line(`const ${operands.map((_, k) => `a${k} = A[${k}]`).join(", ")};`);
    const uniforms = [...new Set(program.steps.flatMap(uniformsOf))].sort((a, b) => a - b);
    if (uniforms.length > 0) w.line(`const ${uniforms.map((u) => `u${u} = U[${u}]`).join(", ")};`);
    w.line(`const ${Array.from({ length: rank }, (_, d) => `d${d} = D[${d}]`).join(", ")};`);
    const strides: string[] = [];
    for (let k = 0; k < operands.length; k++) {
      for (let d = 0; d < rank; d++) if (d < inner || classes[k] === "strided") strides.push(`s${k}_${d} = S[${k * rank + d}]`);
    }
    if (strides.length > 0) w.line(`const ${strides.join(", ")};`);
    w.line(`const ${operands.map((_, k) => `p${k}_0 = O[${k}]`).join(", ")};`);
    const innermost = (): void => {
      const p = (k: number): string => `p${k}_${inner}`;
      const at = (k: number): string => (classes[k] === "unit" ? `${p(k)} + i` : classes[k] === "zero" ? p(k) : `${p(k)} + i * s${k}_${inner}`);
      // Inputs that do not move along the run are loaded once per run.
      for (let k = 0; k < nIn; k++) if (classes[k] === "zero") w.line(`const r${operands[k]?.register} = a${k}[${p(k)}];`);
      w.block(`for (let i = 0; i < d${inner}; i++)`, () => {
        for (let k = 0; k < nIn; k++) if (classes[k] !== "zero") w.line(`const r${operands[k]?.register} = a${k}[${at(k)}];`);
        program.steps.forEach((s, j) => w.line(`const r${s.out} = ${stepExpression(s, j)};`));
        for (let k = nIn; k < operands.length; k++) w.line(`a${k}[${at(k)}] = r${operands[k]?.register};`);
      });
    };
    const level = (d: number): void => {
      if (d === inner) {
        innermost();
        return;
      }
      w.block(`for (let i${d} = 0; i${d} < d${d}; i${d}++)`, () => {
        w.line(`const ${operands.map((_, k) => `p${k}_${d + 1} = p${k}_${d} + i${d} * s${k}_${d}`).join(", ")};`);
        level(d + 1);
      });
    };
    level(0);
  });
  return w.text();
}
