/**
 * Reading an operation a client sent: every field checked, every input resolved in the session,
 * and the output's shape and dtype checked against what the operation computes from its inputs.
 *
 * @remarks
 * **Why.** A server runs operations from clients it does not trust. The backends assume the
 * invariants the user API establishes (`@weft/tensor` validates every call): a `binary` whose
 * output is not the broadcast of its inputs, a `reshape` that changes the element count, or a
 * `slice` past the end would make a kernel read or write out of bounds. So the server establishes
 * them again here, per operation kind, and refuses a frame that breaks one (`SessionViolation`,
 * which ends that session only). Dtype rules that only decide *which* values are computed (type
 * promotion) stay the backends': they throw typed errors that reach the client's read.
 * **One table.** The switch is exhaustive over `OperationIr["kind"]` (`satisfies never`): a new
 * operation kind does not compile until the server knows how to check it.
 *
 * @module
 */
import type { BinaryOp, DType, OperationIr, ReduceOp, ScanOp, ScatterOp, SliceRange, SortOutput, TensorIr, UnaryOp } from "@weft/fusion";
import {
  ArangeOpIr,
  BinaryOpIr,
  CastOpIr,
  ClampOpIr,
  ConcatOpIr,
  ExpandOpIr,
  FullOpIr,
  GatherOpIr,
  MatmulOpIr,
  PadOpIr,
  PermuteOpIr,
  RandomOpIr,
  ReduceOpIr,
  ReshapeOpIr,
  ScalarOpIr,
  ScanOpIr,
  ScatterOpIr,
  SliceOpIr,
  SortOpIr,
  UnaryOpIr,
  WhereOpIr,
  numElements,
  sliceRange,
  tensorIr,
} from "@weft/fusion";
import { DTYPES } from "@weft/tensor";
import { SessionViolation, check } from "./violation.js";

/** What the server knows about an input id of the session. */
export interface InputInfo {
  readonly shape: readonly number[];
  readonly dtype: DType;
}

/** The bounds every tensor a client names must respect. */
export interface ShapeBounds {
  /** Largest rank. */
  readonly maxRank: number;
  /** Largest element count of one tensor. */
  readonly maxElements: number;
}

/** Looks an input id up in the session; throws a `protocol` violation for an unknown id. */
export type InputLookup = (id: number) => InputInfo;

const UNARY: Readonly<Record<UnaryOp, true>> = {
  neg: true, abs: true, exp: true, log: true, log2: true, log1p: true, expm1: true, sqrt: true, rsqrt: true,
  sin: true, cos: true, tan: true, tanh: true, sigmoid: true, relu: true, gelu: true, silu: true, erf: true,
  floor: true, ceil: true, round: true, sign: true, reciprocal: true, square: true, not: true,
};

/** Binary ops and whether they produce `bool` (compares) rather than their operands' dtype. */
const BINARY: Readonly<Record<BinaryOp, "same" | "bool">> = {
  add: "same", sub: "same", mul: "same", div: "same", pow: "same", maximum: "same", minimum: "same", mod: "same", floorDiv: "same", atan2: "same",
  eq: "bool", ne: "bool", lt: "bool", le: "bool", gt: "bool", ge: "bool",
  and: "same", or: "same", xor: "same",
};

const REDUCE: Readonly<Record<ReduceOp, true>> = {
  sum: true, mean: true, max: true, min: true, prod: true, argmax: true, argmin: true, any: true, all: true,
};

const SORT_OUTPUT: Readonly<Record<SortOutput, true>> = { values: true, indices: true };
const SCAN: Readonly<Record<ScanOp, true>> = { sum: true, prod: true };
const SCATTER: Readonly<Record<ScatterOp, true>> = { assign: true, add: true };

type Raw = Record<string, unknown>;

function isRecord(v: unknown): v is Raw {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function record(v: unknown, what: string): Raw {
  check(isRecord(v), () => `${what} must be a map`);
  return v;
}

function num(r: Raw, key: string, what: string): number {
  const v = r[key];
  check(typeof v === "number", () => `${what}.${key} must be a number`);
  return v;
}

function int(r: Raw, key: string, what: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const v = r[key];
  check(typeof v === "number" && Number.isInteger(v) && v >= min && v <= max, () => `${what}.${key} must be an integer in [${min}, ${max}]`);
  return v;
}

function bool(r: Raw, key: string, what: string): boolean {
  const v = r[key];
  check(typeof v === "boolean", () => `${what}.${key} must be a boolean`);
  return v;
}

function oneOf<T extends string>(r: Raw, key: string, table: Readonly<Record<T, unknown>>, what: string): T {
  const v = r[key];
  check(typeof v === "string" && Object.hasOwn(table, v), () => `${what}.${key} ${JSON.stringify(v)} is not one of ${Object.keys(table).join(", ")}`);
  return v as T;
}

/** A shape: an array of non-negative safe integers within `bounds`. */
export function readShape(v: unknown, what: string, bounds: ShapeBounds): number[] {
  check(Array.isArray(v) && v.length <= bounds.maxRank, () => `${what} must be an array of at most ${bounds.maxRank} dimensions`);
  const shape: number[] = [];
  for (const d of v as unknown[]) {
    check(typeof d === "number" && Number.isSafeInteger(d) && d >= 0, () => `${what} has a dimension that is not a non-negative integer`);
    shape.push(d);
  }
  const n = numElements(shape);
  if (n > bounds.maxElements) {
    throw new SessionViolation("limit", `${what} [${shape.join(", ")}] has ${n} elements, more than ${bounds.maxElements}`, "maxSessionBytes");
  }
  return shape;
}

/** A dtype name. */
export function readDType(v: unknown, what: string): DType {
  check(typeof v === "string" && (DTYPES as readonly string[]).includes(v), () => `${what} ${JSON.stringify(v)} is not a dtype (${DTYPES.join(", ")})`);
  return v as DType;
}

function same(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

function fmt(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

/** NumPy broadcasting of several shapes, or `undefined` when they do not broadcast. */
function broadcast(...shapes: (readonly number[])[]): number[] | undefined {
  const rank = Math.max(...shapes.map((s) => s.length));
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    let d = 1;
    for (const s of shapes) {
      const k = s[s.length - rank + i] ?? 1;
      if (k === 1) continue;
      if (d !== 1 && d !== k) return undefined;
      d = k;
    }
    out.push(d);
  }
  return out;
}

/**
 * Checks `raw` (a decoded `op` item) against the session and the bounds; returns a clean
 * `OperationIr` whose inputs carry the session's shapes and dtypes (status `ReadOnly`) and whose
 * output is `{ id, shape, dtype, status: "NotInit" }` — built as the op classes and `tensorIr`
 * build them in `@weft/tensor`, not as literals (a served request's ops: docs/performance.md#allocation-sites).
 * @throws SessionViolation for anything that does not hold.
 */
export function validateOperation(raw: unknown, lookup: InputLookup, bounds: ShapeBounds): OperationIr {
  const r = record(raw, "op");
  const kind = r["kind"];
  check(typeof kind === "string", "op.kind must be a string");
  const what = `op ${kind}`;
  const input = (key: string, value: unknown = r[key]): TensorIr => {
    const t = record(value, `${what}.${key}`);
    const id = int(t, "id", `${what}.${key}`, 1);
    const known = lookup(id);
    const shape = readShape(t["shape"], `${what}.${key}.shape`, bounds);
    const dtype = readDType(t["dtype"], `${what}.${key}.dtype`);
    check(same(shape, known.shape) && dtype === known.dtype, () => `${what}.${key}: tensor ${id} is ${fmt(known.shape)} ${known.dtype}, the operation says ${fmt(shape)} ${dtype}`);
    return tensorIr(id as TensorIr["id"], known.shape, known.dtype, "ReadOnly");
  };
  const output = (): TensorIr => {
    const t = record(r["out"], `${what}.out`);
    const id = int(t, "id", `${what}.out`, 1);
    return tensorIr(id as TensorIr["id"], readShape(t["shape"], `${what}.out.shape`, bounds), readDType(t["dtype"], `${what}.out.dtype`), "NotInit");
  };
  const expect = (out: TensorIr, shape: readonly number[] | undefined, dtype: DType | undefined, why: string): void => {
    check(shape !== undefined, () => `${what}: ${why}`);
    check(same(out.shape, shape), () => `${what}: the output is ${fmt(out.shape)}, the inputs give ${fmt(shape)} (${why})`);
    check(dtype === undefined || out.dtype === dtype, () => `${what}: the output dtype is ${out.dtype}, expected ${String(dtype)}`);
  };
  const k = kind as OperationIr["kind"];
  switch (k) {
    case "init":
    case "drop":
      throw new SessionViolation("protocol", `${kind} never travels as an op (use an upload or a drop item)`);
    case "full": {
      const out = output();
      return new FullOpIr(out, num(r, "value", what));
    }
    case "arange": {
      const out = output();
      check(out.shape.length === 1, `${what}: the output must be 1-D`);
      return new ArangeOpIr(out, num(r, "start", what), num(r, "step", what));
    }
    case "random": {
      const out = output();
      const distribution = oneOf(r, "distribution", { uniform: true, normal: true }, what);
      return new RandomOpIr(out, distribution, int(r, "seed", what, 0, 2 ** 32 - 1), num(r, "a", what), num(r, "b", what));
    }
    case "unary": {
      const op = oneOf(r, "op", UNARY, what);
      const x = input("input");
      const out = output();
      expect(out, x.shape, x.dtype, "an elementwise function keeps shape and dtype");
      return new UnaryOpIr(op, x, out);
    }
    case "binary": {
      const op = oneOf(r, "op", BINARY, what);
      const lhs = input("lhs");
      const rhs = input("rhs");
      check(lhs.dtype === rhs.dtype, () => `${what}: operands are ${lhs.dtype} and ${rhs.dtype} (the client casts them to one dtype)`);
      const out = output();
      expect(out, broadcast(lhs.shape, rhs.shape), BINARY[op] === "bool" ? "bool" : lhs.dtype, `${fmt(lhs.shape)} and ${fmt(rhs.shape)} must broadcast`);
      return new BinaryOpIr(op, lhs, rhs, out);
    }
    case "binary-scalar": {
      const op = oneOf(r, "op", BINARY, what);
      const lhs = input("lhs");
      const out = output();
      expect(out, lhs.shape, BINARY[op] === "bool" ? "bool" : lhs.dtype, "a scalar op keeps the tensor's shape");
      return new ScalarOpIr(op, lhs, num(r, "scalar", what), bool(r, "scalarFirst", what), out);
    }
    case "clamp": {
      const x = input("input");
      const out = output();
      expect(out, x.shape, x.dtype, "clamp keeps shape and dtype");
      return new ClampOpIr(x, num(r, "min", what), num(r, "max", what), out);
    }
    case "cast": {
      const x = input("input");
      const out = output();
      expect(out, x.shape, undefined, "cast keeps the shape");
      return new CastOpIr(x, out);
    }
    case "where": {
      const condition = input("condition");
      const lhs = input("lhs");
      const rhs = input("rhs");
      check(condition.dtype === "bool", `${what}: the condition must be bool`);
      check(lhs.dtype === rhs.dtype, () => `${what}: branches are ${lhs.dtype} and ${rhs.dtype}`);
      const out = output();
      expect(out, broadcast(condition.shape, lhs.shape, rhs.shape), lhs.dtype, "condition and branches must broadcast");
      return new WhereOpIr(condition, lhs, rhs, out);
    }
    case "reduce": {
      const op = oneOf(r, "op", REDUCE, what);
      const x = input("input");
      const axes = readAxes(r["axes"], x.shape.length, what);
      check(axes.length > 0, `${what}: axes must not be empty`);
      const keepDims = bool(r, "keepDims", what);
      const out = output();
      const shape = keepDims ? x.shape.map((d, i) => (axes.includes(i) ? 1 : d)) : x.shape.filter((_, i) => !axes.includes(i));
      expect(out, shape, op === "argmax" || op === "argmin" ? "i32" : undefined, "the reduced axes go (or stay as 1)");
      return new ReduceOpIr(op, x, axes, keepDims, out);
    }
    case "matmul": {
      const lhs = input("lhs");
      const rhs = input("rhs");
      check(lhs.shape.length >= 2 && rhs.shape.length >= 2, `${what}: both operands need rank 2 or more`);
      check(lhs.dtype === rhs.dtype, () => `${what}: operands are ${lhs.dtype} and ${rhs.dtype}`);
      const [m = 0, kl = 0] = lhs.shape.slice(-2);
      const [kr = 0, n = 0] = rhs.shape.slice(-2);
      check(kl === kr, () => `${what}: inner dimensions ${kl} and ${kr} differ`);
      const batch = broadcast(lhs.shape.slice(0, -2), rhs.shape.slice(0, -2));
      const out = output();
      expect(out, batch === undefined ? undefined : [...batch, m, n], lhs.dtype, "batch dimensions must broadcast");
      return new MatmulOpIr(lhs, rhs, out);
    }
    case "reshape": {
      const x = input("input");
      const out = output();
      check(numElements(out.shape) === numElements(x.shape), () => `${what}: ${fmt(x.shape)} has ${numElements(x.shape)} elements, ${fmt(out.shape)} has ${numElements(out.shape)}`);
      check(out.dtype === x.dtype, `${what}: reshape keeps the dtype`);
      return new ReshapeOpIr(x, out);
    }
    case "permute": {
      const x = input("input");
      const axes = readAxes(r["axes"], x.shape.length, what, false);
      check(axes.length === x.shape.length, `${what}: axes must be a permutation of every dimension`);
      const out = output();
      expect(out, axes.map((a) => x.shape[a] ?? 0), x.dtype, "out.shape[i] = input.shape[axes[i]]");
      return new PermuteOpIr(x, axes, out);
    }
    case "expand": {
      const x = input("input");
      const out = output();
      check(out.shape.length === x.shape.length && x.shape.every((d, i) => d === 1 || d === out.shape[i]), () => `${what}: ${fmt(x.shape)} does not expand to ${fmt(out.shape)}`);
      check(out.dtype === x.dtype, `${what}: expand keeps the dtype`);
      return new ExpandOpIr(x, out);
    }
    case "slice": {
      const x = input("input");
      const list = r["ranges"];
      check(Array.isArray(list) && list.length === x.shape.length, `${what}: one range per dimension`);
      const ranges = Array.of<SliceRange>();
      const shape: number[] = [];
      (list as unknown[]).forEach((raw, i) => {
        const range = record(raw, `${what}.ranges[${i}]`);
        const dim = x.shape[i] ?? 0;
        const start = int(range, "start", `${what}.ranges[${i}]`, 0, dim);
        const end = int(range, "end", `${what}.ranges[${i}]`, start, dim);
        const step = int(range, "step", `${what}.ranges[${i}]`, 1);
        ranges.push(sliceRange(start, end, step));
        shape.push(Math.ceil((end - start) / step));
      });
      const out = output();
      expect(out, shape, x.dtype, "the ranges give the output shape");
      return new SliceOpIr(x, ranges, out);
    }
    case "concat": {
      const list = r["inputs"];
      check(Array.isArray(list) && list.length >= 1 && list.length <= 4096, `${what}: inputs must be 1 to 4096 tensors`);
      const inputs = (list as unknown[]).map((t, i) => input(`inputs[${i}]`, t));
      const first = inputs[0] as TensorIr;
      const axis = int(r, "axis", what, 0, Math.max(0, first.shape.length - 1));
      check(first.shape.length > 0, `${what}: inputs must have rank 1 or more`);
      for (const t of inputs) {
        check(t.dtype === first.dtype && t.shape.length === first.shape.length && t.shape.every((d, i) => i === axis || d === first.shape[i]), () => `${what}: ${fmt(t.shape)} ${t.dtype} does not join ${fmt(first.shape)} ${first.dtype} along axis ${axis}`);
      }
      const out = output();
      expect(out, first.shape.map((d, i) => (i === axis ? inputs.reduce((s, t) => s + (t.shape[i] ?? 0), 0) : d)), first.dtype, "concat sums the axis");
      return new ConcatOpIr(inputs, axis, out);
    }
    case "gather": {
      const x = input("input");
      const indices = input("indices");
      check(indices.dtype === "i32", `${what}: indices must be i32`);
      check(indices.shape.length === x.shape.length && x.shape.length > 0, `${what}: indices must have the input's rank`);
      const axis = int(r, "axis", what, 0, x.shape.length - 1);
      check(indices.shape.every((d, i) => i === axis || d <= (x.shape[i] ?? 0)), () => `${what}: indices ${fmt(indices.shape)} exceed the input ${fmt(x.shape)}`);
      const out = output();
      expect(out, indices.shape, x.dtype, "the output has the indices' shape");
      return new GatherOpIr(x, indices, axis, out);
    }
    case "pad": {
      const x = input("input");
      const list = r["padding"];
      check(Array.isArray(list) && list.length === x.shape.length, `${what}: one [before, after] pair per dimension`);
      const padding: [number, number][] = (list as unknown[]).map((pair, i) => {
        check(Array.isArray(pair) && pair.length === 2 && pair.every((p) => typeof p === "number" && Number.isSafeInteger(p) && p >= 0), () => `${what}.padding[${i}] must be two non-negative integers`);
        return Array.of(pair[0] as number, pair[1] as number) as [number, number];
      });
      const out = output();
      expect(out, x.shape.map((d, i) => d + (padding[i]?.[0] ?? 0) + (padding[i]?.[1] ?? 0)), x.dtype, "padding grows each dimension");
      return new PadOpIr(x, padding, num(r, "value", what), out);
    }
    case "sort": {
      const x = input("input");
      check(x.shape.length > 0, `${what}: the input must have rank 1 or more`);
      const axis = int(r, "axis", what, 0, x.shape.length - 1);
      const descending = bool(r, "descending", what);
      const which = oneOf(r, "output", SORT_OUTPUT, what);
      const out = output();
      const kept = out.shape[axis] ?? 0;
      check(kept <= (x.shape[axis] ?? 0), () => `${what}: the output keeps ${kept} of the axis' ${String(x.shape[axis])} entries`);
      expect(out, x.shape.map((d, i) => (i === axis ? kept : d)), which === "indices" ? "i32" : x.dtype, "a sort keeps every dim but a prefix of the axis");
      return new SortOpIr(x, axis, descending, which, out);
    }
    case "scan": {
      const op = oneOf(r, "op", SCAN, what);
      const x = input("input");
      check(x.shape.length > 0 && x.dtype !== "bool", `${what}: the input must have rank 1 or more and a numeric dtype`);
      const axis = int(r, "axis", what, 0, x.shape.length - 1);
      const out = output();
      expect(out, x.shape, x.dtype, "a scan keeps the shape and dtype");
      return new ScanOpIr(op, x, axis, out);
    }
    case "scatter": {
      const op = oneOf(r, "op", SCATTER, what);
      const x = input("input");
      const indices = input("indices");
      const src = input("src");
      check(indices.dtype === "i32", `${what}: indices must be i32`);
      check(src.dtype === x.dtype && (op === "assign" || x.dtype !== "bool"), `${what}: the source must have the input's dtype (not bool for add)`);
      check(indices.shape.length === x.shape.length && x.shape.length > 0, `${what}: indices must have the input's rank`);
      const axis = int(r, "axis", what, 0, x.shape.length - 1);
      check(indices.shape.every((d, i) => i === axis || d <= (x.shape[i] ?? 0)), () => `${what}: indices ${fmt(indices.shape)} exceed the input ${fmt(x.shape)}`);
      check(same(src.shape, indices.shape), () => `${what}: the source ${fmt(src.shape)} must have the indices' shape ${fmt(indices.shape)}`);
      const out = output();
      expect(out, x.shape, x.dtype, "a scatter keeps the input's shape and dtype");
      return new ScatterOpIr(op, x, indices, src, axis, out);
    }
    default:
      k satisfies never;
      throw new SessionViolation("protocol", `unknown op kind ${JSON.stringify(kind)}`);
  }
}

/** Axes: distinct integers in `[0, rank)` (sorted ascending when `sorted`). */
function readAxes(v: unknown, rank: number, what: string, sorted = true): number[] {
  check(Array.isArray(v) && v.length <= rank, () => `${what}: axes must be an array of at most ${rank} axes`);
  const axes = v as unknown[];
  const seen = new Set<number>();
  let last = -1;
  for (const a of axes) {
    check(typeof a === "number" && Number.isInteger(a) && a >= 0 && a < rank && !seen.has(a), () => `${what}: axes must be distinct integers in [0, ${rank})`);
    check(!sorted || a > last, `${what}: axes must be sorted`);
    seen.add(a);
    last = a;
  }
  return axes as number[];
}
