import { invariant } from "@weft/environment";
import type { BinaryOp, DType, RandomDistribution, UnaryOp } from "@weft/fusion";
import { BINARY, UNARY, binaryResult, convert } from "./ops.js";
import type { ParamValue } from "./params.js";
import type { Preamble } from "./preamble.js";
import { isFloat, literal, wgslType, type ValueType } from "./types.js";

/** Identifies a node of an {@link ExprGraph} (its index; arguments always precede their users). */
export type NodeId = number;

/**
 * One node of the elementwise expression IR.
 *
 * - `input`: the value of kernel input `slot` at the current element (loaded through its strides).
 * - `value`: a named WGSL value the kernel template provides (a reduction's result).
 * - `const`: a literal of the generated code (structure: the same for every execution).
 * - `param`: runtime value `slot` of the graph's {@link ExprGraph.params}, read from the kernel's
 *   uniforms: scalars, clamp bounds, fill values, arange start/step, random keys and bounds. Never
 *   in the shader text, never in the key (see `params.ts`).
 * - `index`: the current element's row-major index (`u32`), for `arange` and `random`.
 * - `random`: the shared PCG generator (see the package README), `f32`, keyed by the `u32` node
 *   `key` (`pcg(seed)`, a parameter) and scaled by the `f32` nodes `a` and `b`.
 */
export type ExprNode =
  | { readonly kind: "input"; readonly slot: number; readonly dtype: DType }
  | { readonly kind: "value"; readonly name: string; readonly dtype: DType }
  | { readonly kind: "const"; readonly value: number; readonly dtype: DType }
  | { readonly kind: "param"; readonly slot: number; readonly dtype: DType }
  | { readonly kind: "index"; readonly dtype: "u32" }
  | { readonly kind: "random"; readonly distribution: RandomDistribution; readonly key: NodeId; readonly a: NodeId; readonly b: NodeId; readonly dtype: DType }
  | { readonly kind: "unary"; readonly op: UnaryOp; readonly arg: NodeId; readonly dtype: DType }
  | { readonly kind: "binary"; readonly op: BinaryOp; readonly lhs: NodeId; readonly rhs: NodeId; readonly dtype: DType }
  | { readonly kind: "cast"; readonly arg: NodeId; readonly dtype: DType }
  | { readonly kind: "clamp"; readonly arg: NodeId; readonly min: NodeId; readonly max: NodeId; readonly dtype: DType }
  | { readonly kind: "select"; readonly cond: NodeId; readonly lhs: NodeId; readonly rhs: NodeId; readonly dtype: DType };

/**
 * A DAG of elementwise expressions with hash-consing: adding a node equal to an existing one
 * returns the existing id, so shared subexpressions exist once (CSE) and are hoisted into `let`s
 * by {@link emitExpressions}.
 *
 * @remarks
 * **Bounded by** the number of ops of one fused block (≤ 64) plus its inputs and parameters.
 * **Invariants.** Arguments precede their users (ids are a topological order). Parameters are
 * never shared by value: each {@link ExprGraph.param} call takes the next slot, so the nodes (and
 * {@link ExprGraph.key}) depend on the operations, never on the values they carry.
 */
export class ExprGraph {
  /** Nodes in creation order. */
  readonly nodes: ExprNode[] = [];
  /** Runtime values by slot, in the order the operations asked for them (see `params.ts`). */
  readonly params: ParamValue[] = [];
  /** Canonical text of each node → its id (the CSE table). */
  readonly #ids = new Map<string, NodeId>();

  /** Adds `node` (or finds its equal) and returns its id. */
  add(node: ExprNode): NodeId {
    const key = JSON.stringify(node);
    const found = this.#ids.get(key);
    if (found !== undefined) return found;
    this.nodes.push(node);
    this.#ids.set(key, this.nodes.length - 1);
    return this.nodes.length - 1;
  }

  /** The node `id`. */
  node(id: NodeId): ExprNode {
    const n = this.nodes[id];
    invariant(n !== undefined, () => `expression node ${id} does not exist`);
    return n;
  }

  /**
   * A canonical serialisation (for kernel keys): the structure only — parameter nodes carry their
   * slot and dtype, never their value.
   */
  key(): string {
    return this.nodes.map((n) => JSON.stringify(n)).join(";");
  }

  /** Whether any node reads the element index (`index`/`random`): such kernels are not vectorised. */
  usesIndex(): boolean {
    return this.nodes.some((n) => n.kind === "index" || n.kind === "random");
  }

  /** Binary op with dtype inference. */
  binary(op: BinaryOp, lhs: NodeId, rhs: NodeId): NodeId {
    return this.add({ kind: "binary", op, lhs, rhs, dtype: binaryResult(op, this.node(lhs).dtype) });
  }

  /** Unary op (same dtype in and out; `not` yields bool). */
  unary(op: UnaryOp, arg: NodeId): NodeId {
    return this.add({ kind: "unary", op, arg, dtype: op === "not" ? "bool" : this.node(arg).dtype });
  }

  /** A literal that is part of the kernel's structure (not a runtime value: see {@link ExprGraph.param}). */
  constant(value: number, dtype: DType): NodeId {
    return this.add({ kind: "const", value, dtype });
  }

  /** A runtime value read from the kernel's uniforms: a new slot holding `value` as `dtype`. */
  param(value: number, dtype: DType): NodeId {
    const slot = this.params.length;
    this.params.push({ value, dtype });
    return this.add({ kind: "param", slot, dtype });
  }
}

/** How the kernel template provides leaves to {@link emitExpressions}. */
export interface EmitContext {
  /** Vector width of every value (1, or 4 in vectorised kernels). */
  readonly width: 1 | 4;
  /** WGSL expression loading input `slot` (already converted to its register type). */
  readonly load: (slot: number) => string;
  /** WGSL expression of the current element index (`u32`). */
  readonly index: string;
  readonly helpers: Preamble;
  /** WGSL expression of parameter `slot` at type `t` (see `KernelParams.add`). */
  readonly param: (slot: number, t: ValueType) => string;
}

/**
 * Emits `let` lines for the nodes needed by `roots` and returns the WGSL expression of each root.
 *
 * @remarks
 * A node is hoisted into `let vN` when it is used more than once (CSE), when it is a load (each
 * input read once), or when its op repeats an argument (the argument is hoisted). Single-use nodes
 * are inlined.
 */
export function emitExpressions(graph: ExprGraph, roots: readonly NodeId[], ctx: EmitContext): { lines: string[]; exprs: string[] } {
  const uses = new Array<number>(graph.nodes.length).fill(0);
  const live = new Array<boolean>(graph.nodes.length).fill(false);
  const mark = (id: NodeId): void => {
    uses[id] = (uses[id] ?? 0) + 1;
    if (live[id]) return;
    live[id] = true;
    for (const a of args(graph.node(id))) mark(a);
  };
  for (const r of roots) mark(r);
  const forced = new Set<NodeId>();
  graph.nodes.forEach((n, id) => {
    if (!live[id]) return;
    if (n.kind === "unary" && UNARY[n.op].repeats) args(n).forEach((a) => forced.add(a));
    if (n.kind === "binary" && BINARY[n.op].repeats) args(n).forEach((a) => forced.add(a));
    if (n.kind === "random") forced.add(id);
  });
  const text: string[] = new Array<string>(graph.nodes.length).fill("");
  const lines: string[] = [];
  graph.nodes.forEach((n, id) => {
    if (!live[id]) return;
    const expr = emitNode(graph, n, text, ctx);
    const hoist = n.kind === "input" || n.kind === "random" || (((uses[id] ?? 0) > 1 || forced.has(id)) && n.kind !== "const" && n.kind !== "value" && n.kind !== "param");
    if (hoist) {
      lines.push(`let v${id} = ${expr};`);
      text[id] = `v${id}`;
    } else {
      text[id] = expr;
    }
  });
  return { lines, exprs: roots.map((r) => text[r] ?? "") };
}

function args(n: ExprNode): NodeId[] {
  switch (n.kind) {
    case "unary":
    case "cast":
      return [n.arg];
    case "binary":
      return [n.lhs, n.rhs];
    case "clamp":
      return [n.arg, n.min, n.max];
    case "select":
      return [n.cond, n.lhs, n.rhs];
    case "random":
      return [n.key, n.a, n.b];
    default:
      return [];
  }
}

function emitNode(graph: ExprGraph, n: ExprNode, text: readonly string[], ctx: EmitContext): string {
  const t = (dtype: DType): ValueType => ({ dtype, width: ctx.width });
  const at = (id: NodeId): string => text[id] ?? "";
  switch (n.kind) {
    case "input":
      return ctx.load(n.slot);
    case "value":
      return n.name;
    case "const":
      return literal(n.value, t(n.dtype));
    case "param":
      return ctx.param(n.slot, t(n.dtype));
    case "index":
      return ctx.index;
    case "random": {
      invariant(ctx.width === 1, "random values are never vectorised");
      const rnd = ctx.helpers.use("random", t("f32"));
      const key = at(n.key);
      const i = ctx.index;
      const u1 = `${rnd}(2u * ${i}, ${key})`;
      const [a, b] = [at(n.a), at(n.b)];
      const value =
        n.distribution === "uniform"
          ? `${a} + (${b} - ${a}) * ${u1}`
          : `${a} + ${b} * sqrt(-2.0 * log(max(${u1}, 1e-7))) * cos(6.283185307179586 * ${rnd}(2u * ${i} + 1u, ${key}))`;
      return convert(`(${value})`, t("f32"), t(n.dtype), ctx.helpers);
    }
    case "unary":
      return UNARY[n.op].emit([at(n.arg)], t(graph.node(n.arg).dtype), ctx.helpers);
    case "binary": {
      const entry = BINARY[n.op];
      const operand = t(graph.node(n.lhs).dtype);
      if (n.lhs === n.rhs && entry.same !== undefined) return entry.same(at(n.lhs), operand, ctx.helpers);
      return entry.emit([at(n.lhs), at(n.rhs)], operand, ctx.helpers);
    }
    case "cast":
      return convert(at(n.arg), t(graph.node(n.arg).dtype), t(n.dtype), ctx.helpers);
    case "clamp":
      // WGSL's clamp is min(max(…)), which drops a NaN; the oracle keeps it.
      return isFloat(n.dtype)
        ? `${ctx.helpers.use("clampNan", t(n.dtype))}(${at(n.arg)}, ${at(n.min)}, ${at(n.max)})`
        : `clamp(${at(n.arg)}, ${at(n.min)}, ${at(n.max)})`;
    case "select": {
      const cond = convert(at(n.cond), t(graph.node(n.cond).dtype), t("bool"));
      return `select(${at(n.rhs)}, ${at(n.lhs)}, ${cond})`;
    }
    default:
      return n satisfies never;
  }
}

/** The PCG hash on the host (wrapping u32), identical to the WGSL helper. */
export function pcg(x: number): number {
  const state = (Math.imul(x >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/** The WGSL type of node `id` at `width` (for declarations). */
export function nodeType(graph: ExprGraph, id: NodeId, width: 1 | 4): string {
  return wgslType({ dtype: graph.node(id).dtype, width });
}
