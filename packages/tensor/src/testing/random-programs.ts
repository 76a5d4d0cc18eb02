/**
 * The seeded random-program differential test: a generator of random programs over the Tensor API,
 * a runner, a comparison with stated tolerances and a reproducer printer with a minimiser. Every
 * backend runs the same programs as the CPU oracle (unfused), and fused and unfused runs of one
 * backend are compared too (`docs/semantics.md`, "Where each row is tested").
 *
 * @remarks
 * **What a program is.** A list of {@link Step}s, each producing one value from earlier ones:
 * host inputs (normal, positive, small-integer, special — NaN, ±Inf, ±0 — bool and index data),
 * creation ops (`full`, `arange`, `rand`), elementwise unary/binary/scalar ops with broadcasting,
 * compares, logical ops, `where`, `clamp`, casts, reductions and the composites (`variance`,
 * `softmax`, …), `matmul`, layout ops (reshape, permute, slice with steps, expand, concat, pad,
 * squeeze), `gather` (sometimes with out-of-range indices), plus `dispose` and mid-program `read`
 * steps. Shapes are random (rank 0–4, empty dims, size-1 dims that broadcast); several
 * independent chains are interleaved at random.
 * **Why a value model.** Backends legitimately differ in rounding (an f32 tree sum against the
 * oracle's f64 loop, WGSL's transcendental error bounds, a contracted multiply-add), and an op
 * with a discontinuity (`floor`, a compare, a cast to int, `argmax`, `mod`) turns a last-bit
 * difference into a different answer. So the generator tracks, per value, an interval bounding
 * its finite elements and a bound on the absolute difference any conforming backend may show
 * ({@link Facts}); it applies discontinuous ops only to *exact* values (inputs, integer
 * arithmetic, exact float ops on small integers, layout ops …), keeps transcendentals inside
 * well-conditioned domains, and compares every read with that bound. Integers, bools, NaN
 * positions, infinities and errors are compared exactly.
 * **Failures** print a minimal reproducer: the program, with every step the failure does not
 * need removed, as TypeScript over the public API.
 *
 * @module
 */
import type { DType, UnaryOp } from "@weft/fusion";
import { tidy } from "@weft/fusion";
import type { Device } from "../device/device.js";
import { arange, full, rand, randn, tensor } from "../ops/creation.js";
import { binary, where } from "../ops/elementwise.js";
import { concat, gather } from "../ops/layout.js";
import type { DataArray, Tensor } from "../tensor/tensor.js";
import { prng } from "./host-data.js";

/** Bounds the generator keeps to (every field has a default). */
export interface ProgramOptions {
  /** Steps per program (default 14). */
  readonly steps?: number;
  /** Largest element count of any value (default 600). */
  readonly maxElements?: number;
  /** Include NaN, ±Inf, ±0 data and special scalars (default true). */
  readonly specialValues?: boolean;
}

/** Host data kinds of an input. */
export type InputData = "normal" | "positive" | "int" | "special" | "bool" | "index" | "i32" | "u32";

/** One step of a program; `x`, `y`, `c` name earlier values by their step index. */
export type Step =
  | { readonly kind: "input"; readonly shape: readonly number[]; readonly data: InputData; readonly values: readonly number[]; readonly dtype: DType }
  | { readonly kind: "full"; readonly shape: readonly number[]; readonly value: number; readonly dtype: DType }
  | { readonly kind: "arange"; readonly start: number; readonly step: number; readonly n: number; readonly dtype: "f32" | "i32" }
  | { readonly kind: "rand"; readonly shape: readonly number[]; readonly seed: number; readonly normal: boolean }
  | { readonly kind: "unary"; readonly op: UnaryOp; readonly x: number }
  | { readonly kind: "binary"; readonly op: BinaryName; readonly x: number; readonly y: number }
  | { readonly kind: "scalar"; readonly op: BinaryName; readonly x: number; readonly value: number; readonly first: boolean }
  | { readonly kind: "where"; readonly c: number; readonly x: number; readonly y: number }
  | { readonly kind: "clamp"; readonly x: number; readonly lo: number; readonly hi: number }
  | { readonly kind: "cast"; readonly x: number; readonly dtype: DType }
  | { readonly kind: "reduce"; readonly op: ReduceName; readonly x: number; readonly axes: readonly number[] | undefined; readonly keepDims: boolean }
  | { readonly kind: "arg"; readonly op: "argmax" | "argmin"; readonly x: number; readonly axis: number | undefined; readonly keepDims: boolean }
  | { readonly kind: "composite"; readonly op: "variance" | "std" | "softmax" | "logSoftmax" | "logSumExp"; readonly x: number; readonly axis: number }
  | { readonly kind: "matmul"; readonly x: number; readonly y: number }
  | { readonly kind: "reshape"; readonly x: number; readonly shape: readonly number[] }
  | { readonly kind: "permute"; readonly x: number; readonly axes: readonly number[] }
  | { readonly kind: "slice"; readonly x: number; readonly specs: readonly (readonly [number, number, number])[] }
  | { readonly kind: "expand"; readonly x: number; readonly shape: readonly number[] }
  | { readonly kind: "concat"; readonly x: number; readonly y: number; readonly axis: number }
  | { readonly kind: "pad"; readonly x: number; readonly padding: readonly (readonly [number, number])[]; readonly value: number }
  | { readonly kind: "gather"; readonly x: number; readonly indices: number; readonly axis: number }
  | { readonly kind: "dispose"; readonly x: number }
  | { readonly kind: "read"; readonly x: number };

/** The binary ops programs use. */
export type BinaryName = "add" | "sub" | "mul" | "div" | "pow" | "maximum" | "minimum" | "mod" | "floorDiv" | "atan2" | "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "and" | "or" | "xor";
/** The reductions programs use. */
export type ReduceName = "sum" | "mean" | "max" | "min" | "prod" | "any" | "all";

/**
 * What the generator knows about a value (see the module doc).
 *
 * @remarks
 * `lo`/`hi` bound every finite element (for floats and integers); `err` bounds the absolute
 * difference between conforming backends on finite elements (0: bit-exact everywhere, the only
 * values discontinuous ops may read); `integral`: every finite element is an integer;
 * `special`: elements may be NaN or ±Inf (whose positions are always exact); `fails`: a read
 * rejects (it was computed from an out-of-range gather).
 */
export interface Facts {
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly lo: number;
  readonly hi: number;
  readonly err: number;
  readonly integral: boolean;
  readonly special: boolean;
  readonly fails: boolean;
}

/** A generated program: its steps, what it reads at the end, and the facts of every value. */
export interface Program {
  readonly seed: number;
  readonly steps: readonly Step[];
  /** Values read at the end, in order (mid-program `read` steps are reads too). */
  readonly outputs: readonly number[];
  /** Facts of each step's value (`undefined` for `dispose`/`read`). */
  readonly facts: readonly (Facts | undefined)[];
}

/** One read of a run: values, or the error it rejected (or threw) with. */
export type ReadResult =
  | { readonly ok: true; readonly shape: readonly number[]; readonly dtype: string; readonly data: readonly number[] }
  | { readonly ok: false; readonly error: string; readonly index: boolean };

/** What running a program on a device gave: one result per read, in order, and leaked tensors. */
export interface ProgramRun {
  readonly reads: readonly { readonly value: number; readonly result: ReadResult }[];
  /** Live tensors left on the device after the program disposed everything (must be 0). */
  readonly leaked: number;
}

const U = 2 ** -23;
const EXACT_INT = 2 ** 24;

const SIZES = [0, 1, 1, 2, 3, 4, 5, 7, 8, 13, 16, 33];

/**
 * Generates the program of `seed` (the same seed gives the same program on every machine).
 */
export function generateProgram(seed: number, options: ProgramOptions = {}): Program {
  return new Generator(seed >>> 0, options).run();
}

class Generator {
  readonly #next: () => number;
  readonly #maxElements: number;
  readonly #special: boolean;
  readonly #stepsWanted: number;
  readonly steps: Step[] = [];
  readonly facts: (Facts | undefined)[] = [];
  /** Values not disposed yet (step indices). */
  readonly live: number[] = [];
  readonly #seed: number;

  constructor(seed: number, options: ProgramOptions) {
    this.#seed = seed;
    this.#next = prng(seed ^ 0x9e3779b9);
    this.#maxElements = options.maxElements ?? 600;
    this.#special = options.specialValues ?? true;
    this.#stepsWanted = options.steps ?? 14;
  }

  rnd(): number {
    return this.#next();
  }
  int(n: number): number {
    return Math.floor(this.#next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }
  chance(p: number): boolean {
    return this.#next() < p;
  }

  run(): Program {
    // Two to three independent chains, their steps interleaved: each chain starts from inputs.
    const target = this.#stepsWanted;
    for (let guard = 0; this.steps.length < target && guard < target * 20; guard++) {
      if (this.live.length < 2 || this.chance(0.18)) this.#addInput();
      else this.#addOp();
    }
    const outputs = this.live.filter((v) => this.facts[v] !== undefined && this.chance(0.7));
    if (outputs.length === 0 && this.live.length > 0) outputs.push(this.live[this.live.length - 1] as number);
    return { seed: this.#seed, steps: this.steps, outputs, facts: this.facts };
  }

  #push(step: Step, given: Facts | undefined): number {
    // A model that lost track (0 · ∞: the sum of an empty set of unbounded values) bounds nothing,
    // and a NaN bound would fail every comparison: such a value is computed but never read or used.
    const facts = given === undefined || Number.isNaN(given.lo) || Number.isNaN(given.hi) || Number.isNaN(given.err) ? undefined : given;
    this.steps.push(step);
    this.facts.push(facts);
    const id = this.steps.length - 1;
    if (facts !== undefined) this.live.push(id);
    return id;
  }

  #shape(maxRank = 4): number[] {
    const rank = this.pick([0, 1, 1, 2, 2, 2, 3, 3, 4].filter((r) => r <= maxRank));
    const shape: number[] = [];
    for (let d = 0; d < rank; d++) shape.push(this.pick(SIZES));
    while (numel(shape) > this.#maxElements) shape[this.int(shape.length)] = this.pick([1, 2, 3]);
    return shape;
  }

  #addInput(): void {
    const r = this.rnd();
    if (r < 0.08) {
      const shape = this.#shape();
      const dtype = this.pick<DType>(["f32", "f32", "i32", "bool"]);
      const value = dtype === "bool" ? this.int(2) : dtype === "i32" ? this.int(11) - 5 : this.pick([0, 1, -2.5, 0.5, ...(this.#special ? [Number.NaN, Infinity] : [])]);
      this.#push({ kind: "full", shape, value, dtype }, fullFacts(shape, dtype, value));
      return;
    }
    if (r < 0.13) {
      const n = this.pick([0, 1, 5, 17, 64]);
      const dtype = this.pick<"f32" | "i32">(["f32", "i32"]);
      const start = this.int(9) - 4;
      const step = dtype === "i32" ? this.pick([1, 2, -1, 3]) : this.pick([1, 0.5, -0.25, 2]);
      const ends = [start, start + (n - 1) * step].filter(() => n > 0);
      const lo = Math.min(...ends, 0);
      const hi = Math.max(...ends, 0);
      this.#push({ kind: "arange", start, step, n, dtype }, { shape: [n], dtype, lo, hi, err: 0, integral: dtype === "i32" || Number.isInteger(step), special: false, fails: false });
      return;
    }
    if (r < 0.18) {
      const shape = this.#shape(3);
      const normal = this.chance(0.5);
      // The oracle computes the generator in f64, WebGPU in f32 (and Box–Muller through WGSL's
      // cos: atol 3e-3, see the conformance kit's RANDN).
      this.#push({ kind: "rand", shape, seed: this.int(1 << 30), normal }, { shape, dtype: "f32", lo: normal ? -6 : 0, hi: normal ? 6 : 1, err: normal ? 4e-3 : 1e-6, integral: false, special: false, fails: false });
      return;
    }
    const shape = this.#shape();
    const kinds: InputData[] = ["normal", "normal", "positive", "int", "int", "i32", "u32", "bool", ...(this.#special ? (["special", "special"] as const) : [])];
    const data = this.pick(kinds);
    const values = hostValues(data, numel(shape), () => this.rnd());
    const dtype: DType = data === "bool" ? "bool" : data === "i32" ? "i32" : data === "u32" ? "u32" : "f32";
    this.#push({ kind: "input", shape, data, values, dtype }, inputFacts(shape, dtype, data, values));
  }

  /** A live value satisfying `ok`, or `undefined`. */
  #choose(ok: (f: Facts) => boolean): number | undefined {
    const candidates = this.live.filter((v) => {
      const f = this.facts[v];
      return f !== undefined && ok(f);
    });
    return candidates.length === 0 ? undefined : this.pick(candidates);
  }

  #addOp(): void {
    const r = this.rnd();
    if (r < 0.05 && this.live.length > 3) {
      const x = this.pick(this.live);
      this.live.splice(this.live.indexOf(x), 1);
      this.#push({ kind: "dispose", x }, undefined);
      return;
    }
    if (r < 0.09) {
      const x = this.pick(this.live);
      this.#push({ kind: "read", x }, undefined);
      return;
    }
    const family = this.pick(["unary", "unary", "binary", "binary", "binary", "scalar", "scalar", "compare", "where", "clamp", "cast", "reduce", "reduce", "arg", "composite", "matmul", "layout", "layout", "layout", "concat", "gather"] as const);
    switch (family) {
      case "unary":
        return this.#unary();
      case "binary":
        return this.#binary();
      case "scalar":
        return this.#scalar();
      case "compare":
        return this.#compare();
      case "where":
        return this.#where();
      case "clamp":
        return this.#clamp();
      case "cast":
        return this.#cast();
      case "reduce":
        return this.#reduce();
      case "arg":
        return this.#arg();
      case "composite":
        return this.#composite();
      case "matmul":
        return this.#matmul();
      case "layout":
        return this.#layout();
      case "concat":
        return this.#concat();
      case "gather":
        return this.#gather();
      default:
        return family satisfies never;
    }
  }

  #unary(): void {
    const x = this.#choose((f) => f.dtype !== "bool");
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const float = f.dtype === "f32";
    const ops: UnaryOp[] = ["neg", "abs", "relu", "square", "exp", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "gelu", "silu", "erf", "floor", "ceil", "round", "sign", "reciprocal"];
    for (let tries = 0; tries < 6; tries++) {
      const op = this.pick(ops);
      if (f.dtype === "u32" && op === "neg") continue;
      const out = unaryFacts(op, float ? f : { ...f, dtype: "f32" }, f);
      if (out === undefined) continue;
      this.#push({ kind: "unary", op, x }, out);
      return;
    }
  }

  #partner(f: Facts, dtype?: DType): number | undefined {
    return this.#choose((g) => (dtype === undefined || g.dtype === dtype) && broadcast(f.shape, g.shape) !== undefined && numel(broadcast(f.shape, g.shape) ?? []) <= this.#maxElements);
  }

  #binary(): void {
    const x = this.#choose((f) => f.dtype !== "bool");
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const y = this.#partner(f, this.chance(0.8) ? f.dtype : undefined);
    if (y === undefined) return;
    const g = this.facts[y] as Facts;
    if (g.dtype === "bool") return;
    const ops: BinaryName[] = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod", "floorDiv", "atan2"];
    for (let tries = 0; tries < 6; tries++) {
      const op = this.pick(ops);
      const out = binaryFacts(op, f, g);
      if (out === undefined) continue;
      this.#push({ kind: "binary", op, x, y }, out);
      return;
    }
  }

  #scalar(): void {
    const x = this.#choose((f) => f.dtype !== "bool");
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const specials = this.#special ? [0, -0, Number.NaN, Infinity, -Infinity, 1e30] : [0];
    const ints = [0, 1, -1, 2, 3, 7];
    for (let tries = 0; tries < 6; tries++) {
      const op = this.pick<BinaryName>(["add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod", "floorDiv"]);
      const value = f.dtype === "f32" ? this.pick([...ints, 0.5, -1.5, 2.5, ...specials]) : f.dtype === "u32" ? this.pick([0, 1, 2, 7]) : this.pick(ints);
      const first = this.chance(0.25) && op !== "pow";
      const g = scalarFacts(value, f.dtype === "f32" || op === "div" || op === "pow" || !Number.isInteger(value) ? "f32" : f.dtype);
      const out = first ? binaryFacts(op, { ...g, shape: f.shape }, f) : binaryFacts(op, f, { ...g, shape: [] });
      if (out === undefined) continue;
      this.#push({ kind: "scalar", op, x, value, first }, { ...out, shape: f.shape });
      return;
    }
  }

  #compare(): void {
    if (this.chance(0.3)) {
      const x = this.#choose((f) => f.dtype === "bool");
      if (x === undefined) return;
      const f = this.facts[x] as Facts;
      const y = this.#partner(f, "bool");
      if (y === undefined) return;
      const op = this.pick<BinaryName>(["and", "or", "xor"]);
      this.#push({ kind: "binary", op, x, y }, boolFacts(broadcast(f.shape, (this.facts[y] as Facts).shape) ?? f.shape, f, this.facts[y] as Facts));
      return;
    }
    const x = this.#choose((f) => f.dtype !== "bool" && f.err === 0);
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const op = this.pick<BinaryName>(["eq", "ne", "lt", "le", "gt", "ge"]);
    if (this.chance(0.5)) {
      const y = this.#partner(f, f.dtype);
      if (y === undefined || (this.facts[y] as Facts).err !== 0) return;
      this.#push({ kind: "binary", op, x, y }, boolFacts(broadcast(f.shape, (this.facts[y] as Facts).shape) ?? f.shape, f, this.facts[y] as Facts));
      return;
    }
    const value = f.dtype === "f32" ? this.pick([0, 1, -1, 0.5, ...(this.#special ? [Number.NaN, Infinity] : [])]) : this.pick([0, 1, 3]);
    this.#push({ kind: "scalar", op, x, value, first: this.chance(0.3) }, boolFacts(f.shape, f));
  }

  #where(): void {
    const c = this.#choose((f) => f.dtype === "bool");
    if (c === undefined) return;
    const cf = this.facts[c] as Facts;
    const x = this.#partner(cf);
    if (x === undefined) return;
    const xf = this.facts[x] as Facts;
    const s1 = broadcast(cf.shape, xf.shape) ?? [];
    const y = this.#choose((g) => g.dtype === xf.dtype && broadcast(s1, g.shape) !== undefined && numel(broadcast(s1, g.shape) ?? []) <= this.#maxElements);
    if (y === undefined) return;
    const yf = this.facts[y] as Facts;
    const shape = broadcast(s1, yf.shape) ?? s1;
    this.#push({ kind: "where", c, x, y }, { ...merge(xf, yf, cf), shape, dtype: xf.dtype });
  }

  #clamp(): void {
    const x = this.#choose((f) => f.dtype === "f32" || f.dtype === "i32");
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const lo = f.dtype === "i32" ? this.int(5) - 4 : this.pick([-1, -0.5, 0, -3]);
    const hi = lo + (f.dtype === "i32" ? this.int(6) : this.pick([0, 0.5, 1, 4]));
    this.#push({ kind: "clamp", x, lo, hi }, { ...f, lo: Math.min(Math.max(f.lo, lo), hi), hi: Math.max(Math.min(f.hi, hi), lo) });
  }

  #cast(): void {
    const x = this.#choose(() => true);
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const dtype = this.pick<DType>(["f32", "i32", "u32", "bool"].filter((d) => d !== f.dtype) as DType[]);
    const out = castFacts(f, dtype);
    if (out !== undefined) this.#push({ kind: "cast", x, dtype }, out);
  }

  #axes(f: Facts): readonly number[] | undefined {
    if (f.shape.length === 0 || this.chance(0.25)) return undefined;
    const axes = f.shape.map((_, d) => d).filter(() => this.chance(0.5));
    return axes.length === 0 ? [this.int(f.shape.length) - (this.chance(0.3) ? f.shape.length : 0)] : axes;
  }

  #reduce(): void {
    const x = this.#choose(() => true);
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const op = this.pick<ReduceName>(["sum", "sum", "mean", "max", "min", "prod", "any", "all"]);
    const axes = this.#axes(f);
    const keepDims = this.chance(0.3);
    const out = reduceFacts(op, f, axes, keepDims);
    if (out !== undefined) this.#push({ kind: "reduce", op, x, axes, keepDims }, out);
  }

  #arg(): void {
    const x = this.#choose((f) => f.err === 0 && f.dtype !== "bool" && numel(f.shape) > 0);
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const axis = f.shape.length === 0 || this.chance(0.3) ? undefined : this.int(f.shape.length);
    if (axis !== undefined && f.shape[axis] === 0) return;
    const keepDims = this.chance(0.3);
    const shape = axis === undefined ? (keepDims ? f.shape.map(() => 1) : []) : reduced(f.shape, [axis], keepDims);
    const extent = axis === undefined ? numel(f.shape) : (f.shape[axis] ?? 1);
    this.#push({ kind: "arg", op: this.pick(["argmax", "argmin"] as const), x, axis, keepDims }, { shape, dtype: "i32", lo: 0, hi: Math.max(0, extent - 1), err: 0, integral: true, special: false, fails: f.fails });
  }

  #composite(): void {
    const x = this.#choose((f) => f.dtype === "f32" && f.shape.length > 0 && !f.special && f.err <= 1e-3 && Math.max(-f.lo, f.hi) <= 30);
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const axis = this.int(f.shape.length);
    const op = this.pick(["variance", "std", "softmax", "logSoftmax", "logSumExp"] as const);
    const k = f.shape[axis] ?? 1;
    if ((op === "logSumExp" || op === "variance" || op === "std") && k === 0) return;
    const width = f.hi - f.lo;
    const e = f.err;
    let out: Facts;
    switch (op) {
      case "variance":
        out = { ...f, shape: reduced(f.shape, [axis], false), lo: 0, hi: width * width, err: 2 * width * e + 1e-5 * (1 + width * width), integral: false, special: k <= 0 };
        break;
      case "std":
        out = { ...f, shape: reduced(f.shape, [axis], false), lo: 0, hi: width, err: Math.sqrt(2 * width * e) + 1e-4 * (1 + width), integral: false };
        break;
      case "softmax":
        out = { ...f, lo: 0, hi: 1, err: 2 * e + 1e-5, integral: false };
        break;
      case "logSoftmax":
        out = { ...f, lo: -width - Math.log(Math.max(k, 1)) - 1, hi: 0, err: 2 * e + 1e-5 * (1 + width), integral: false };
        break;
      case "logSumExp":
        out = { ...f, shape: reduced(f.shape, [axis], false), lo: f.lo, hi: f.hi + Math.log(Math.max(k, 1)), err: e + 1e-5 * (1 + Math.abs(f.hi) + Math.abs(f.lo)), integral: false };
        break;
      default:
        return op satisfies never;
    }
    this.#push({ kind: "composite", op, x, axis }, out);
  }

  #matmul(): void {
    const x = this.#choose((f) => (f.dtype === "f32" || f.dtype === "i32") && f.shape.length >= 1 && f.shape.length <= 3 && !f.special && Number.isFinite(f.err) && mag(f) <= 1e6);
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const kdim = f.shape[f.shape.length - 1] ?? 1;
    const n = this.pick([1, 2, 3, 5, 8, 17]);
    const shape = f.shape.length === 1 ? [kdim, n] : [...(this.chance(0.5) ? [] : f.shape.slice(0, -2)), kdim, n];
    if (numel(shape) > this.#maxElements) return;
    // The right-hand side is a fresh input of the same dtype (so both sides are known).
    const data: InputData = f.dtype === "i32" ? "i32" : this.pick(["normal", "int"] as const);
    const values = hostValues(data, numel(shape), () => this.rnd());
    const y = this.#push({ kind: "input", shape, data, values, dtype: f.dtype }, inputFacts(shape, f.dtype, data, values));
    const g = this.facts[y] as Facts;
    const outShape = matmulShape(f.shape, shape);
    if (outShape === undefined || numel(outShape) > this.#maxElements) return;
    const k = kdim;
    const m1 = mag(f);
    const m2 = mag(g);
    const bound = k * m1 * m2;
    const exact = f.err === 0 && g.err === 0 && (f.dtype === "i32" || (f.integral && g.integral && bound < EXACT_INT));
    const err = exact ? 0 : k * (f.err * m2 + g.err * m1) + (Math.log2(Math.max(k, 1)) + 2) * U * bound * 4;
    // Integers compute in f32 at the API (matmul of integers is a float product).
    this.#push({ kind: "matmul", x, y }, { shape: outShape, dtype: "f32", lo: -bound, hi: bound, err: f.dtype === "i32" && bound >= EXACT_INT ? err + bound * U : err, integral: f.integral && g.integral, special: false, fails: f.fails || g.fails });
  }

  #layout(): void {
    const x = this.#choose(() => true);
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const r = this.rnd();
    const rank = f.shape.length;
    if (r < 0.25) {
      // reshape: a random factorisation of the element count (or -1 for one dim).
      const n = numel(f.shape);
      const shape = n === 0 ? this.pick([[0], [2, 0], [0, 3]]) : factorize(n, () => this.rnd());
      if (numel(shape) !== n) return;
      this.#push({ kind: "reshape", x, shape }, { ...f, shape });
      return;
    }
    if (r < 0.45 && rank >= 2) {
      const axes = f.shape.map((_, d) => d);
      for (let i = axes.length - 1; i > 0; i--) {
        const j = this.int(i + 1);
        [axes[i], axes[j]] = [axes[j] as number, axes[i] as number];
      }
      this.#push({ kind: "permute", x, axes }, { ...f, shape: axes.map((a) => f.shape[a] ?? 1) });
      return;
    }
    if (r < 0.7 && rank >= 1) {
      const specs: [number, number, number][] = f.shape.map((size) => {
        const step = this.pick([1, 1, 2, 3]);
        const start = size === 0 ? 0 : this.int(size);
        const end = start + this.int(size - start + 1);
        return [start, end, step];
      });
      const shape = specs.map(([s, e, st]) => Math.max(0, Math.ceil((e - s) / st)));
      this.#push({ kind: "slice", x, specs }, { ...f, shape });
      return;
    }
    if (r < 0.85) {
      // expand a size-1 dim (or add a leading one).
      const ones = f.shape.map((s, d) => (s === 1 ? d : -1)).filter((d) => d >= 0);
      const shape = [...f.shape];
      if (ones.length > 0) shape[this.pick(ones)] = this.pick([2, 3, 5]);
      else shape.unshift(this.pick([2, 3]));
      if (numel(shape) > this.#maxElements || shape.length > 5) return;
      this.#push({ kind: "expand", x, shape }, { ...f, shape });
      return;
    }
    const padding: [number, number][] = f.shape.map(() => [this.int(3), this.int(2)]);
    const value = f.dtype === "f32" ? this.pick([0, -1, 2.5, ...(this.#special ? [Number.NaN] : [])]) : f.dtype === "bool" ? this.int(2) : this.int(5);
    const shape = f.shape.map((s, d) => s + (padding[d]?.[0] ?? 0) + (padding[d]?.[1] ?? 0));
    if (numel(shape) > this.#maxElements || rank === 0) return;
    const v = fullFacts([], f.dtype, value);
    this.#push({ kind: "pad", x, padding, value }, { ...merge(f, v), shape, dtype: f.dtype });
  }

  #concat(): void {
    const x = this.#choose((f) => f.shape.length >= 1);
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const axis = this.int(f.shape.length);
    const y = this.#choose((g) => g.dtype === f.dtype && g.shape.length === f.shape.length && g.shape.every((d, i) => i === axis || d === f.shape[i]));
    if (y === undefined) return;
    const g = this.facts[y] as Facts;
    const shape = f.shape.map((d, i) => (i === axis ? d + (g.shape[i] ?? 0) : d));
    if (numel(shape) > this.#maxElements) return;
    this.#push({ kind: "concat", x, y, axis }, { ...merge(f, g), shape, dtype: f.dtype });
  }

  #gather(): void {
    const x = this.#choose((f) => f.shape.length >= 1);
    if (x === undefined) return;
    const f = this.facts[x] as Facts;
    const axis = this.int(f.shape.length);
    const n = f.shape[axis] ?? 0;
    // Same-rank indices (torch semantics): each other dim ≤ the input's.
    const shape = f.shape.map((d, i) => (i === axis ? this.pick([1, 2, 4, 7]) : Math.min(d, this.pick([d, 1]))));
    const outOfRange = n === 0 || this.chance(0.15);
    const values = Array.from({ length: numel(shape) }, () => (n === 0 ? 0 : this.int(2 * n) - n));
    if (outOfRange && values.length > 0) values[this.int(values.length)] = this.pick([n, n + 3, -n - 1]);
    const idx = this.#push({ kind: "input", shape, data: "index", values, dtype: "i32" }, { shape, dtype: "i32", lo: -n - 1, hi: n + 3, err: 0, integral: true, special: false, fails: false });
    const fails = f.fails || (outOfRange && values.length > 0);
    this.#push({ kind: "gather", x, indices: idx, axis }, { ...f, shape, fails });
  }
}

// ----- the value model ---------------------------------------------------------------------------

function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function mag(f: Facts): number {
  return Math.max(Math.abs(f.lo), Math.abs(f.hi));
}

function merge(...fs: Facts[]): Facts {
  const first = fs[0] as Facts;
  return {
    shape: first.shape,
    dtype: first.dtype,
    lo: Math.min(...fs.map((f) => f.lo)),
    hi: Math.max(...fs.map((f) => f.hi)),
    err: Math.max(...fs.map((f) => f.err)),
    integral: fs.every((f) => f.integral),
    special: fs.some((f) => f.special),
    fails: fs.some((f) => f.fails),
  };
}

function broadcast(a: readonly number[], b: readonly number[]): number[] | undefined {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    const x = a[a.length - rank + i] ?? 1;
    const y = b[b.length - rank + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) return undefined;
    out.push(x === 1 ? y : x);
  }
  return out;
}

function reduced(shape: readonly number[], axes: readonly number[], keepDims: boolean): number[] {
  const norm = axes.map((a) => (a < 0 ? a + shape.length : a));
  return keepDims ? shape.map((s, d) => (norm.includes(d) ? 1 : s)) : shape.filter((_, d) => !norm.includes(d));
}

function matmulShape(a: readonly number[], b: readonly number[]): number[] | undefined {
  const a2 = a.length === 1 ? [1, ...a] : a;
  const batchA = a2.slice(0, -2);
  const batchB = b.slice(0, -2);
  const batch = broadcast(batchA, batchB);
  if (batch === undefined) return undefined;
  const out = [...batch, a2[a2.length - 2] ?? 1, b[b.length - 1] ?? 1];
  return a.length === 1 ? out.filter((_, i) => i !== out.length - 2) : out;
}

function factorize(n: number, rnd: () => number): number[] {
  const out: number[] = [];
  let rest = n;
  for (let d = 2; d <= rest && out.length < 3; d++) {
    while (rest % d === 0 && rnd() < 0.6 && out.length < 3) {
      out.push(d);
      rest /= d;
    }
  }
  out.push(rest);
  return out.filter((d, i) => d !== 1 || i === out.length - 1 || rnd() < 0.3);
}

function hostValues(data: InputData, n: number, rnd: () => number): number[] {
  const out: number[] = [];
  const normal = (): number => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  for (let i = 0; i < n; i++) {
    switch (data) {
      case "normal":
        out.push(Math.fround(Math.max(-8, Math.min(8, 2 * normal()))));
        break;
      case "positive":
        out.push(Math.fround(0.1 + 3.9 * rnd()));
        break;
      case "int":
      case "i32":
        out.push(Math.floor(rnd() * 17) - 8);
        break;
      case "u32":
        out.push(Math.floor(rnd() * 17));
        break;
      case "bool":
        out.push(rnd() < 0.5 ? 1 : 0);
        break;
      case "index":
        out.push(0);
        break;
      case "special": {
        const specials = [Number.NaN, Infinity, -Infinity, 0, -0];
        out.push(rnd() < 0.3 ? (specials[Math.floor(rnd() * specials.length)] as number) : Math.fround(Math.max(-8, Math.min(8, 2 * normal()))));
        break;
      }
      default:
        data satisfies never;
    }
  }
  return out;
}

function inputFacts(shape: readonly number[], dtype: DType, data: InputData, values: readonly number[]): Facts {
  const finite = values.filter((v) => Number.isFinite(v));
  return {
    shape,
    dtype,
    lo: finite.length === 0 ? 0 : Math.min(...finite),
    hi: finite.length === 0 ? 0 : Math.max(...finite),
    err: 0,
    integral: data !== "normal" && data !== "positive" && data !== "special",
    special: data === "special",
    fails: false,
  };
}

function fullFacts(shape: readonly number[], dtype: DType, value: number): Facts {
  const finite = Number.isFinite(value);
  const v = dtype === "f32" ? Math.fround(value) : value;
  return { shape, dtype, lo: finite ? v : 0, hi: finite ? v : 0, err: 0, integral: !finite || Number.isInteger(v), special: !finite, fails: false };
}

function scalarFacts(value: number, dtype: DType): Facts {
  return fullFacts([], dtype, value);
}

function boolFacts(shape: readonly number[], ...from: Facts[]): Facts {
  return { shape, dtype: "bool", lo: 0, hi: 1, err: 0, integral: true, special: false, fails: from.some((f) => f.fails) };
}

/** Relative accuracy of WGSL transcendentals and of f32 rounding, generously. */
const REL = 4e-6;

/** Facts of `op(x)`; `undefined` when the op would leave its well-conditioned domain. */
function unaryFacts(op: UnaryOp, f: Facts, original: Facts): Facts | undefined {
  const m = mag(f);
  const e = f.err;
  const base = { ...f, dtype: "f32" as DType, special: f.special };
  const isInt = original.dtype !== "f32";
  const exactIn = e === 0;
  switch (op) {
    case "neg":
      return { ...original, lo: -f.hi, hi: -f.lo };
    case "abs":
      return { ...original, lo: f.lo >= 0 ? f.lo : 0, hi: m };
    case "relu":
      return { ...original, lo: Math.max(0, f.lo), hi: Math.max(0, f.hi) };
    case "square": {
      const hi = m * m;
      if (isInt) return { ...original, lo: 0, hi: Math.min(hi, 2 ** 31), err: 0, integral: true };
      const exact = exactIn && f.integral && hi < EXACT_INT;
      return { ...original, lo: 0, hi, err: exact ? 0 : 2 * m * e + e * e + U * hi, integral: f.integral };
    }
    case "floor":
    case "ceil":
    case "round":
    case "sign":
      if (!exactIn) return undefined;
      return { ...original, lo: Math.floor(f.lo) - 1, hi: Math.ceil(f.hi) + 1, integral: true };
    case "exp":
      if (f.hi > 40) return undefined;
      return { ...base, lo: 0, hi: Math.exp(f.hi), err: Math.exp(f.hi) * (e + REL * (3 + 2 * m)), integral: false };
    case "expm1":
      if (f.hi > 40) return undefined;
      return { ...base, lo: -1, hi: Math.exp(f.hi), err: Math.exp(f.hi) * (e + REL * (3 + 2 * m)) + 1e-6, integral: false };
    case "log":
      if (f.lo >= 1e-2) return { ...base, lo: Math.log(f.lo), hi: Math.log(Math.max(f.hi, f.lo)), err: e / f.lo + 1e-5 * (1 + Math.abs(Math.log(f.lo))), integral: false };
      // Near or below 0 only exact inputs: -Inf at ±0 and NaN below are exact, the rest is the
      // built-in's relative accuracy (an opaque value, see compareRuns).
      if (!exactIn) return undefined;
      return { ...base, lo: -Infinity, hi: Infinity, err: Infinity, integral: false, special: true };
    case "log2":
      if (f.lo >= 1e-2) return { ...base, lo: Math.log2(f.lo), hi: Math.log2(Math.max(f.hi, f.lo)), err: e / (f.lo * Math.LN2) + 1e-5 * (1 + Math.abs(Math.log2(f.lo))), integral: false };
      if (!exactIn) return undefined;
      return { ...base, lo: -Infinity, hi: Infinity, err: Infinity, integral: false, special: true };
    case "log1p":
      if (f.lo < -0.99 && !exactIn) return undefined;
      return { ...base, lo: Math.log1p(Math.max(f.lo, -1 + 1e-7)), hi: Math.log1p(Math.max(f.hi, f.lo)), err: e / Math.max(1 + f.lo, 1e-2) + 1e-5, integral: false, special: f.special || f.lo <= -1 };
    case "sqrt":
      if (f.lo < 0 && !exactIn) return undefined;
      return { ...base, lo: 0, hi: Math.sqrt(Math.max(m, 0)), err: Math.min(e / (2 * Math.sqrt(Math.max(f.lo, 1e-30))), Math.sqrt(e)) + REL * (1 + Math.sqrt(m)), integral: false, special: f.special || f.lo < 0 };
    case "rsqrt":
    case "reciprocal": {
      const away = f.lo > 0.05 || f.hi < -0.05;
      if (!away && !exactIn) return undefined;
      const minAbs = away ? Math.min(Math.abs(f.lo), Math.abs(f.hi)) : 1e-30;
      const hi = op === "rsqrt" ? 1 / Math.sqrt(Math.max(minAbs, 1e-30)) : 1 / minAbs;
      if (!away) return { ...base, lo: -1e30, hi: 1e30, err: Infinity, integral: false, special: true };
      return { ...base, lo: -hi, hi, err: e * hi * hi + 4 * REL * hi, integral: false, special: f.special || (op === "rsqrt" && f.lo < 0) };
    }
    case "sin":
    case "cos":
      // Any magnitude the argument reduction covers (docs/semantics.md, "Precision": TRIG for every
      // finite f32); only an input already off by more than 0.05 would make the bound meaningless.
      if (m > 1e7 || e > 0.05) return undefined;
      return { ...base, lo: -1, hi: 1, err: e + 2e-3, integral: false };
    case "tan":
      // Keep well inside (-π/2, π/2): no pole.
      if (m > 1.3) return undefined;
      return { ...base, lo: -4, hi: 4, err: e * 17 + 2e-3 * 17, integral: false };
    case "tanh":
      return { ...base, lo: -1, hi: 1, err: e + 2e-5, integral: false };
    case "sigmoid":
      return { ...base, lo: 0, hi: 1, err: e / 4 + 2e-5, integral: false };
    case "silu":
      return { ...base, lo: -0.3, hi: Math.max(m, 0), err: e * 1.1 + 2e-5 * (1 + m), integral: false };
    case "gelu":
      return { ...base, lo: -0.2, hi: Math.max(m, 0), err: e * 1.2 + 2e-3 * (1 + m), integral: false };
    case "erf":
      return { ...base, lo: -1, hi: 1, err: 1.2 * e + 2e-3, integral: false };
    case "not":
      return undefined;
    default:
      return op satisfies never;
  }
}

/** Facts of `op(f, g)` (either may be a scalar's facts); `undefined` outside the safe domain. */
function binaryFacts(op: BinaryName, f: Facts, g: Facts): Facts | undefined {
  const shape = broadcast(f.shape, g.shape);
  if (shape === undefined) return undefined;
  const dtype: DType = op === "div" || op === "pow" || op === "atan2" ? "f32" : f.dtype === g.dtype ? f.dtype : f.dtype === "f32" || g.dtype === "f32" ? "f32" : "i32";
  const fails = f.fails || g.fails;
  const special = f.special || g.special;
  const integer = dtype === "i32" || dtype === "u32";
  const m1 = mag(f);
  const m2 = mag(g);
  const exact = f.err === 0 && g.err === 0;
  const base = { shape, dtype, fails, special };
  if (integer) {
    // Wrapping integer arithmetic is exact on every backend; the interval only bounds the domain.
    switch (op) {
      case "add":
      case "sub":
      case "mul":
      case "maximum":
      case "minimum":
        return { ...base, lo: -(2 ** 31), hi: 2 ** 32, err: 0, integral: true, special: false };
      case "mod":
        return { ...base, lo: -m2, hi: m2, err: 0, integral: true, special: false };
      case "floorDiv":
        // Floored, x // 0 = 0, MIN // -1 wraps: exact on every backend.
        return { ...base, lo: -(2 ** 31), hi: 2 ** 31, err: 0, integral: true, special: false };
      default:
        return undefined;
    }
  }
  // Specials meet only exact operands in products and quotients (a sign or zero decided by an
  // inexact value would flip Inf to -Inf or to NaN).
  if (special && !exact && op !== "add" && op !== "sub" && op !== "maximum" && op !== "minimum") return undefined;
  switch (op) {
    case "add":
    case "sub": {
      const hi = m1 + m2;
      if (hi > 1e30 && !exact) return undefined;
      const integral = f.integral && g.integral && hi < EXACT_INT;
      const err = exact && integral ? 0 : f.err + g.err + 2 * U * hi;
      return { ...base, lo: -hi, hi, err, integral };
    }
    case "mul": {
      const hi = m1 * m2;
      if (hi > 1e30 && !exact) return undefined;
      const integral = f.integral && g.integral && hi < EXACT_INT;
      const err = exact && integral ? 0 : f.err * m2 + g.err * m1 + f.err * g.err + 2 * U * hi;
      return { ...base, lo: -hi, hi, err, integral };
    }
    case "div": {
      const away = g.lo > 0.1 || g.hi < -0.1;
      if (!away) {
        // x / 0 and x / ±tiny: exact operands only, the result is compared as exact specials.
        if (!exact) return undefined;
        return { ...base, lo: -Infinity, hi: Infinity, err: Infinity, integral: false, special: true };
      }
      const minAbs = Math.min(Math.abs(g.lo), Math.abs(g.hi));
      const hi = m1 / minAbs;
      return { ...base, lo: -hi, hi, err: (f.err + hi * g.err) / minAbs + 4 * U * hi, integral: false };
    }
    case "pow": {
      // Positive bases bounded away from 0, small exponents: exp2(y·log2 x) stays conditioned.
      if (!(f.lo >= 0.1 && m2 <= 3 && f.hi <= 8)) return exact && f.special ? { ...base, lo: -Infinity, hi: Infinity, err: Infinity, integral: false, special: true } : undefined;
      const hi = Math.max(f.hi ** m2, f.lo ** -m2, 1);
      const lg = Math.max(Math.abs(Math.log(f.lo)), Math.abs(Math.log(f.hi)));
      return { ...base, lo: 0, hi, err: hi * (m2 * f.err / f.lo + lg * g.err + 1e-5 * (1 + m2 * lg)), integral: false };
    }
    case "maximum":
    case "minimum":
      return { ...base, lo: Math.min(f.lo, g.lo), hi: Math.max(f.hi, g.hi), err: Math.max(f.err, g.err), integral: f.integral && g.integral };
    case "mod":
      // Floored modulo is discontinuous: exact small integers only (then it is exact).
      if (!(exact && f.integral && g.integral && m1 < EXACT_INT && m2 < EXACT_INT)) return undefined;
      return { ...base, lo: -m2, hi: m2, err: 0, integral: true };
    case "floorDiv": {
      // NumPy's floor_divide, exact on every backend (docs/semantics.md) but discontinuous: exact
      // operands only. A divisor that may be 0 (or specials) gives ±Inf/NaN, compared exactly.
      if (!exact) return undefined;
      const away = g.lo > 0 || g.hi < 0;
      if (!away || special) return { ...base, lo: -Infinity, hi: Infinity, err: 0, integral: true, special: true };
      const hi = m1 / Math.min(Math.abs(g.lo), Math.abs(g.hi)) + 1;
      return { ...base, lo: -hi, hi, err: 0, integral: true };
    }
    case "atan2":
      if (!exact && (g.lo < 0.1 && g.hi > -0.1)) return undefined;
      return { ...base, lo: -Math.PI, hi: Math.PI, err: exact ? 2e-3 : 2e-3 + (f.err + g.err) / Math.max(0.1, Math.min(Math.abs(g.lo), Math.abs(g.hi))), integral: false };
    default:
      return undefined;
  }
}

function castFacts(f: Facts, dtype: DType): Facts | undefined {
  if (dtype === "bool") return f.err === 0 ? boolFacts(f.shape, f) : undefined;
  if (f.dtype === "bool") return { ...f, dtype, lo: 0, hi: 1, integral: true };
  if (dtype === "f32") return { ...f, dtype, err: f.err + (mag(f) >= EXACT_INT ? mag(f) * U : 0) };
  // To an integer: truncation is discontinuous, exact input only; NaN → 0, ±Inf saturate — so a
  // special input's integers reach the saturation bounds, whatever its finite range (program
  // 3169985020 of seed 111317, H200, 2026-11-30: ±Inf cast to ±2^31, then a float matmul of them
  // was held to the finite range's exact bound and f32 rounding was reported as a failure).
  if (f.err !== 0) return undefined;
  const lo = dtype === "u32" ? 0 : f.special ? -(2 ** 31) : Math.max(-(2 ** 31), Math.trunc(f.lo));
  const hi = f.special ? (dtype === "u32" ? 2 ** 32 : 2 ** 31) : Math.min(dtype === "u32" ? 2 ** 32 : 2 ** 31, Math.trunc(f.hi) + 1);
  return { ...f, dtype, lo, hi, integral: true, special: false };
}

function reduceFacts(op: ReduceName, f: Facts, axes: readonly number[] | undefined, keepDims: boolean): Facts | undefined {
  const rank = f.shape.length;
  const all = axes === undefined ? f.shape.map((_, d) => d) : axes.map((a) => (a < 0 ? a + rank : a));
  const shape = axes === undefined ? (keepDims ? f.shape.map(() => 1) : []) : reduced(f.shape, all, keepDims);
  const k = numel(all.map((d) => f.shape[d] ?? 1));
  const m = mag(f);
  const fails = f.fails;
  if (op === "any" || op === "all") {
    if (f.err !== 0) return undefined;
    return boolFacts(shape, f);
  }
  if ((op === "max" || op === "min") && f.dtype === "bool") return undefined;
  // max/min of an empty axis is a typed error at the call: every backend throws the same.
  if (op === "max" || op === "min") return { ...f, shape };
  const integer = f.dtype === "i32" || f.dtype === "u32" || f.dtype === "bool";
  if (op === "sum") {
    if (integer) return { ...f, shape, dtype: f.dtype === "bool" ? "i32" : f.dtype, lo: -(2 ** 31), hi: 2 ** 32, err: 0, integral: true, special: false };
    const hi = k * m;
    if (!(hi <= 1e30) || !Number.isFinite(f.err)) return undefined; // NaN for an empty sum of unbounded values
    const exact = f.err === 0 && f.integral && hi < EXACT_INT;
    return { ...f, shape, lo: -hi, hi, err: exact ? 0 : k * f.err + (Math.log2(Math.max(k, 1)) + 2) * 2 * U * hi, fails };
  }
  if (op === "mean") {
    if (!Number.isFinite(f.err) || m > 1e30) return undefined;
    if (k === 0) return { ...f, shape, dtype: "f32", lo: 0, hi: 0, err: 0, integral: false, special: true };
    const sumErr = (f.dtype === "f32" ? f.err : 0) + (Math.log2(Math.max(k, 1)) + 2) * 2 * U * m;
    return { ...f, shape, dtype: "f32", lo: f.lo, hi: f.hi, err: sumErr + 2 * U * m + (integer && m * k >= EXACT_INT ? m * U * 4 : 0), integral: false };
  }
  // prod: small magnitudes only (a product of k values grows like m^k).
  if (integer) return { ...f, shape, dtype: f.dtype === "bool" ? "i32" : f.dtype, lo: -(2 ** 31), hi: 2 ** 32, err: 0, integral: true, special: false };
  if (m > 2 || k > 24) return undefined;
  const hi = Math.max(1, m ** k);
  const exact = f.err === 0 && f.integral && hi < EXACT_INT;
  return { ...f, shape, lo: -hi, hi, err: exact ? 0 : k * f.err * Math.max(1, m ** Math.max(k - 1, 0)) + k * 2 * U * hi, fails };
}

// ----- running ---------------------------------------------------------------------------------

/** Whether `error` (or one of its causes) is an index error (`kind` "index-out-of-range"). */
function isIndexError(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = (e as Error).cause) {
    if ((e as { kind?: unknown }).kind === "index-out-of-range") return true;
  }
  return false;
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Records step `step` on `device` given the values so far; throws what the API throws. */
function apply(step: Step, values: readonly (Tensor | undefined)[], device: Device): Tensor {
  const v = (i: number): Tensor => {
    const t = values[i];
    if (t === undefined) throw new Error(`internal: value v${i} is not available`);
    return t;
  };
  switch (step.kind) {
    case "input":
      return tensor(step.dtype === "bool" ? step.values.map((x) => x !== 0) : [...step.values], { device, shape: step.shape, dtype: step.dtype });
    case "full":
      return full(step.shape, step.dtype === "bool" ? step.value !== 0 : step.value, { device, dtype: step.dtype });
    case "arange":
      return arange(step.start, step.start + step.n * step.step, step.step, { device, dtype: step.dtype });
    case "rand":
      return step.normal ? randn(step.shape, { device, seed: step.seed }) : rand(step.shape, { device, seed: step.seed });
    case "unary":
      return v(step.x).unary(step.op);
    case "binary":
      return binary(step.op, v(step.x), v(step.y));
    case "scalar":
      return step.first ? binary(step.op, step.value, v(step.x)) : binary(step.op, v(step.x), step.value);
    case "where":
      return where(v(step.c), v(step.x), v(step.y));
    case "clamp":
      return v(step.x).clamp(step.lo, step.hi);
    case "cast":
      return v(step.x).cast(step.dtype);
    case "reduce":
      return v(step.x)[step.op](step.axes, { keepDims: step.keepDims });
    case "arg":
      return v(step.x)[step.op](step.axis, { keepDims: step.keepDims });
    case "composite":
      return step.op === "softmax" || step.op === "logSoftmax" ? v(step.x)[step.op](step.axis) : v(step.x)[step.op](step.axis);
    case "matmul":
      return v(step.x).matmul(v(step.y));
    case "reshape":
      return v(step.x).reshape(step.shape);
    case "permute":
      return v(step.x).permute(step.axes);
    case "slice":
      return v(step.x).slice(step.specs.map(([a, b, c]) => [a, b, c] as const));
    case "expand":
      return v(step.x).expand(step.shape);
    case "concat":
      return concat([v(step.x), v(step.y)], step.axis);
    case "pad":
      return v(step.x).pad(step.padding, step.value);
    case "gather":
      return gather(v(step.x), v(step.indices), step.axis);
    case "dispose":
    case "read":
      throw new Error(`internal: ${step.kind} produces no value`);
    default:
      return step satisfies never;
  }
}

async function readValue(t: Tensor | undefined, callError: unknown): Promise<ReadResult> {
  if (t === undefined) return { ok: false, error: describe(callError), index: isIndexError(callError) };
  try {
    const data: DataArray = await t.data();
    return { ok: true, shape: [...t.shape], dtype: t.dtype, data: Array.from(data as ArrayLike<number>) };
  } catch (error) {
    return { ok: false, error: describe(error), index: isIndexError(error) };
  }
}

/**
 * Runs `program` on `device`: records every step (an op the API refuses becomes an error value,
 * and so does everything computed from it), reads the `read` steps' values when reached and the
 * outputs at the end, disposes everything and counts the tensors left alive.
 */
export async function runProgram(program: Program, device: Device, keep?: ReadonlySet<number>): Promise<ProgramRun> {
  const baseline = device.memory().liveTensors;
  const values: (Tensor | undefined)[] = [];
  const callErrors: unknown[] = [];
  const reads: { value: number; result: ReadResult }[] = [];
  for (let i = 0; i < program.steps.length; i++) {
    const step = program.steps[i] as Step;
    if (keep !== undefined && !keep.has(i)) {
      values.push(undefined);
      callErrors.push(undefined);
      continue;
    }
    if (step.kind === "dispose") {
      values[step.x]?.dispose();
      values[step.x] = undefined;
      values.push(undefined);
      callErrors.push(undefined);
      continue;
    }
    if (step.kind === "read") {
      if (values[step.x] !== undefined || callErrors[step.x] !== undefined) reads.push({ value: step.x, result: await readValue(values[step.x], callErrors[step.x]) });
      values.push(undefined);
      callErrors.push(undefined);
      continue;
    }
    const inputs = stepInputs(step);
    const failed = inputs.find((x) => values[x] === undefined);
    if (failed !== undefined) {
      values.push(undefined);
      callErrors.push(callErrors[failed] ?? new Error(`v${failed} was disposed`));
      continue;
    }
    try {
      values.push(tidy(() => apply(step, values, device)));
      callErrors.push(undefined);
    } catch (error) {
      values.push(undefined);
      callErrors.push(error);
    }
  }
  for (const o of program.outputs) {
    if (keep !== undefined && !keep.has(o)) continue;
    if (values[o] === undefined && callErrors[o] === undefined) continue;
    reads.push({ value: o, result: await readValue(values[o], callErrors[o]) });
  }
  for (const t of values) t?.dispose();
  await device.syncAll();
  return { reads, leaked: device.memory().liveTensors - baseline };
}

/** The values a step reads. */
export function stepInputs(step: Step): number[] {
  switch (step.kind) {
    case "input":
    case "full":
    case "arange":
    case "rand":
      return [];
    case "binary":
    case "matmul":
    case "concat":
      return [step.x, step.y];
    case "where":
      return [step.c, step.x, step.y];
    case "gather":
      return [step.x, step.indices];
    default:
      return [step.x];
  }
}

// ----- comparing -------------------------------------------------------------------------------

/** How close a run must be to the reference run. */
export type Closeness =
  /** Bit-identical up to the sign of zero (the CPU fused against the CPU unfused). */
  | "exact"
  /** Within each value's modelled bound (another backend, or another fusion of one). */
  | "modelled";

/**
 * Compares `got` with `want` (the same program on two devices): the same reads in the same order,
 * both errors or both values, index errors on both or neither, shapes and dtypes equal, integers
 * and bools exact, NaN and ±Inf positions exact, finite floats within the value's bound (or
 * exactly). Returns one line per difference (empty when they agree).
 */
export function compareRuns(program: Program, got: ProgramRun, want: ProgramRun, closeness: Closeness): string[] {
  const problems: string[] = [];
  if (got.leaked !== 0) problems.push(`the device under test left ${got.leaked} tensors alive after disposing everything`);
  if (got.reads.length !== want.reads.length) {
    problems.push(`${got.reads.length} reads against the reference's ${want.reads.length}`);
    return problems;
  }
  got.reads.forEach((g, i) => {
    const w = want.reads[i];
    if (w === undefined) return;
    const name = `read ${i} (v${g.value})`;
    if (!w.result.ok || !g.result.ok) {
      if (w.result.ok !== g.result.ok) {
        problems.push(`${name}: ${g.result.ok ? "got values" : `got ${g.result.error}`}, the reference ${w.result.ok ? "got values" : `got ${w.result.error}`}`);
      } else if (!w.result.ok && !g.result.ok && w.result.index !== g.result.index) {
        problems.push(`${name}: index error ${g.result.index ? "here" : "only in the reference"}: ${g.result.error} / ${w.result.error}`);
      }
      return;
    }
    const facts = program.facts[g.value];
    if (g.result.dtype !== w.result.dtype || g.result.shape.join() !== w.result.shape.join()) {
      problems.push(`${name}: ${g.result.dtype}[${g.result.shape.join(", ")}] against ${w.result.dtype}[${w.result.shape.join(", ")}]`);
      return;
    }
    const float = g.result.dtype === "f32" || g.result.dtype === "f16";
    // An unbounded absolute error (a value spanning any magnitude, such as 1/x of exact x near 0)
    // is held to a relative bound instead: such values come from one well-conditioned op.
    const bound = closeness === "exact" || !float ? 0 : (facts?.err ?? Infinity);
    let bad = 0;
    let first = -1;
    g.result.data.forEach((a, k) => {
      const b = w.result.ok ? (w.result.data[k] ?? 0) : 0;
      let ok: boolean;
      if (Number.isNaN(a) || Number.isNaN(b)) ok = Number.isNaN(a) === Number.isNaN(b);
      else if (!Number.isFinite(a) || !Number.isFinite(b)) ok = a === b;
      else if (bound === Infinity) ok = Math.abs(a - b) <= 1e-3 * Math.abs(b) + 1e-30;
      else ok = Math.abs(a - b) <= 4 * bound + (bound === 0 ? 0 : 1e-6 * (1 + Math.abs(b)));
      if (!ok) {
        bad++;
        if (first < 0) first = k;
      }
    });
    if (bad > 0) {
      const a = g.result.data[first];
      const b = w.result.ok ? w.result.data[first] : undefined;
      problems.push(`${name} (${g.result.dtype}[${g.result.shape.join(", ")}]): ${bad} elements differ; first at ${first}: got ${String(a)}, reference ${String(b)} (bound ${bound === 0 ? "exact" : bound === Infinity ? "rtol 1e-3" : (4 * bound).toExponential(2)})`);
    }
  });
  return problems;
}

// ----- reporting -------------------------------------------------------------------------------

/**
 * The smallest set of steps (a subset of `program`'s, closed under dependencies) for which
 * `fails(keep)` still holds: a greedy pass that drops one step (and everything depending on it)
 * at a time. `fails` runs the kept steps on the devices and compares.
 */
export async function minimize(program: Program, fails: (keep: ReadonlySet<number>) => Promise<boolean>): Promise<Set<number>> {
  let keep = new Set(program.steps.map((_, i) => i));
  for (let i = program.steps.length - 1; i >= 0; i--) {
    if (!keep.has(i)) continue;
    const without = new Set(keep);
    // Drop i and everything reading it (transitively).
    const gone = new Set([i]);
    for (let j = i + 1; j < program.steps.length; j++) {
      if (stepInputs(program.steps[j] as Step).some((x) => gone.has(x))) gone.add(j);
    }
    for (const g of gone) without.delete(g);
    const readsLeft = program.outputs.some((o) => without.has(o)) || program.steps.some((s, j) => without.has(j) && s.kind === "read");
    if (!readsLeft) continue;
    if (await fails(without)) keep = without;
  }
  return keep;
}

/** The reproducer's import (quoted): the entry package a user runs it with, not a dependency of this one. */
const ENTRY_PACKAGE = JSON.stringify("@weft/weft");

/** TypeScript over the public API reproducing `program` (restricted to `keep`), reads included. */
export function formatProgram(program: Program, keep?: ReadonlySet<number>): string {
  const lines: string[] = [`// random program, seed ${program.seed}`, `import * as weft from ${ENTRY_PACKAGE};`, `await weft.init();`];
  const num = (x: number): string => (Number.isNaN(x) ? "NaN" : x === Infinity ? "Infinity" : x === -Infinity ? "-Infinity" : Object.is(x, -0) ? "-0" : String(x));
  const arr = (xs: readonly number[]): string => `[${xs.map(num).join(", ")}]`;
  program.steps.forEach((step, i) => {
    if (keep !== undefined && !keep.has(i)) return;
    const v = (x: number): string => `v${x}`;
    let expr: string;
    switch (step.kind) {
      case "input":
        expr = `weft.tensor(${step.dtype === "bool" ? `[${step.values.map((x) => String(x !== 0)).join(", ")}]` : arr(step.values)}, { shape: ${arr(step.shape)}, dtype: "${step.dtype}" })`;
        break;
      case "full":
        expr = `weft.full(${arr(step.shape)}, ${step.dtype === "bool" ? String(step.value !== 0) : num(step.value)}, { dtype: "${step.dtype}" })`;
        break;
      case "arange":
        expr = `weft.arange(${num(step.start)}, ${num(step.start + step.n * step.step)}, ${num(step.step)}, { dtype: "${step.dtype}" })`;
        break;
      case "rand":
        expr = `weft.${step.normal ? "randn" : "rand"}(${arr(step.shape)}, { seed: ${step.seed} })`;
        break;
      case "unary":
        expr = `${v(step.x)}.${step.op}()`;
        break;
      case "binary":
        expr = `${v(step.x)}.${step.op}(${v(step.y)})`;
        break;
      case "scalar":
        expr = step.first ? `weft.${step.op}(${num(step.value)}, ${v(step.x)})` : `${v(step.x)}.${step.op}(${num(step.value)})`;
        break;
      case "where":
        expr = `weft.where(${v(step.c)}, ${v(step.x)}, ${v(step.y)})`;
        break;
      case "clamp":
        expr = `${v(step.x)}.clamp(${num(step.lo)}, ${num(step.hi)})`;
        break;
      case "cast":
        expr = `${v(step.x)}.cast("${step.dtype}")`;
        break;
      case "reduce":
        expr = `${v(step.x)}.${step.op}(${step.axes === undefined ? "undefined" : arr(step.axes)}, { keepDims: ${step.keepDims} })`;
        break;
      case "arg":
        expr = `${v(step.x)}.${step.op}(${step.axis === undefined ? "undefined" : step.axis}, { keepDims: ${step.keepDims} })`;
        break;
      case "composite":
        expr = `${v(step.x)}.${step.op}(${step.axis})`;
        break;
      case "matmul":
        expr = `${v(step.x)}.matmul(${v(step.y)})`;
        break;
      case "reshape":
        expr = `${v(step.x)}.reshape(${arr(step.shape)})`;
        break;
      case "permute":
        expr = `${v(step.x)}.permute(${arr(step.axes)})`;
        break;
      case "slice":
        expr = `${v(step.x)}.slice([${step.specs.map((s) => arr(s)).join(", ")}])`;
        break;
      case "expand":
        expr = `${v(step.x)}.expand(${arr(step.shape)})`;
        break;
      case "concat":
        expr = `weft.concat([${v(step.x)}, ${v(step.y)}], ${step.axis})`;
        break;
      case "pad":
        expr = `${v(step.x)}.pad([${step.padding.map((p) => arr(p)).join(", ")}], ${num(step.value)})`;
        break;
      case "gather":
        expr = `weft.gather(${v(step.x)}, ${v(step.indices)}, ${step.axis})`;
        break;
      case "dispose":
        lines.push(`${v(step.x)}.dispose();`);
        return;
      case "read":
        lines.push(`console.log("v${step.x}", await ${v(step.x)}.data());`);
        return;
      default:
        return step satisfies never;
    }
    lines.push(`const v${i} = ${expr};`);
  });
  for (const o of program.outputs) if (keep === undefined || keep.has(o)) lines.push(`console.log("v${o}", await v${o}.data());`);
  return lines.join("\n");
}

// ----- the differential run ----------------------------------------------------------------------

/** A device a differential run compares with the reference, and how closely. */
export interface DifferentialTarget {
  /** A short name for reports (`"webgpu (fused)"`). */
  readonly name: string;
  readonly device: Device;
  readonly closeness: Closeness;
}

/** Options of {@link runDifferential}. */
export interface DifferentialOptions extends ProgramOptions {
  /** The first program's seed; program `i` uses {@link programSeed}(seed, i). */
  readonly seed: number;
  /** How many programs to run. */
  readonly programs: number;
  /** The reference: the CPU oracle run unfused. */
  readonly reference: Device;
  readonly targets: readonly DifferentialTarget[];
  /** Shrink each failure to a minimal reproducer (default true; costs re-runs). */
  readonly minimize?: boolean;
  /** Called after each program (progress), with the failures found so far. */
  readonly onProgram?: (index: number, failures: number) => void;
}

/** One program on which a target disagreed with the reference. */
export interface DifferentialFailure {
  readonly seed: number;
  readonly target: string;
  readonly problems: readonly string[];
  /** TypeScript over the public API reproducing the (minimised) program. */
  readonly reproducer: string;
}

/** What {@link runDifferential} found. */
export interface DifferentialReport {
  /** Programs run on every target. */
  readonly programs: number;
  /** Reads compared per target, summed. */
  readonly reads: number;
  readonly failures: readonly DifferentialFailure[];
}

/** The seed of program `i` of a run started at `seed` (distinct and well mixed). */
export function programSeed(seed: number, i: number): number {
  let h = (seed ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  return (h ^ (h >>> 13)) >>> 0;
}

/**
 * Generates `programs` programs from `seed`, runs each on the reference and on every target,
 * compares ({@link compareRuns}) and collects the failures, each with a minimal reproducer.
 * Never throws for a disagreement; an exception escaping a device is reported as one.
 */
export async function runDifferential(options: DifferentialOptions): Promise<DifferentialReport> {
  const failures: DifferentialFailure[] = [];
  let reads = 0;
  for (let i = 0; i < options.programs; i++) {
    const seed = programSeed(options.seed, i);
    const program = generateProgram(seed, options);
    const want = await runProgram(program, options.reference);
    for (const target of options.targets) {
      let problems: string[];
      try {
        const got = await runProgram(program, target.device);
        reads += got.reads.length;
        problems = compareRuns(program, got, want, target.closeness);
      } catch (error) {
        problems = [`the run threw ${describe(error)}`];
      }
      if (problems.length === 0) continue;
      let keep: ReadonlySet<number> | undefined;
      if (options.minimize ?? true) {
        keep = await minimize(program, async (k) => {
          try {
            const [g, w] = [await runProgram(program, target.device, k), await runProgram(program, options.reference, k)];
            return compareRuns(program, g, w, target.closeness).length > 0;
          } catch {
            return true;
          }
        });
      }
      failures.push({ seed, target: target.name, problems, reproducer: formatProgram(program, keep) });
    }
    options.onProgram?.(i, failures.length);
  }
  return { programs: options.programs, reads, failures };
}

/** One report line per failure: the target, the seed, the problems and the reproducer. */
export function formatFailure(f: DifferentialFailure): string {
  return [`FAIL ${f.target}, program seed ${f.seed}:`, ...f.problems.map((p) => `  ${p}`), "  reproducer:", ...f.reproducer.split("\n").map((l) => `    ${l}`)].join("\n");
}
