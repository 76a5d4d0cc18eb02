import { invariant } from "@weft/environment";
import type { OperationIr, TensorIr } from "@weft/fusion";
import { pcg, type ExprGraph, type NodeId } from "../codegen/wgsl/expr.js";

/** The operation kinds that are one elementwise expression of their inputs. */
export type ElementwiseOperation = Extract<
  OperationIr,
  { kind: "unary" | "binary" | "binary-scalar" | "clamp" | "cast" | "where" | "full" | "arange" | "random" }
>;

/** Whether `op` is an {@link ElementwiseOperation}. */
export function isElementwise(op: OperationIr): op is ElementwiseOperation {
  switch (op.kind) {
    case "unary":
    case "binary":
    case "binary-scalar":
    case "clamp":
    case "cast":
    case "where":
    case "full":
    case "arange":
    case "random":
      return true;
    default:
      return false;
  }
}

/** Whether `op` reads the element index (`arange`, `random`): it must produce the block's reference shape. */
export function readsIndex(op: OperationIr): boolean {
  return op.kind === "arange" || op.kind === "random";
}

/**
 * Appends the runtime values of `op` to `out`, in the order {@link addElementwise} gives them
 * parameter slots: the scalar (`binary-scalar`), `min` then `max` (`clamp`), the fill value
 * (`full`), `start` then `step` (`arange`), `pcg(seed)` then `a` then `b` (`random`). The launch
 * cache replays a kernel with the values of each new execution through this, without rebuilding
 * the graph; allocation-free.
 */
export function pushParams(op: OperationIr, out: number[]): void {
  switch (op.kind) {
    case "binary-scalar":
      out.push(op.scalar);
      return;
    case "clamp":
      out.push(op.min, op.max);
      return;
    case "full":
      out.push(op.value);
      return;
    case "arange":
      out.push(op.start, op.step);
      return;
    case "random":
      out.push(pcg(op.seed >>> 0), op.a, op.b);
      return;
    default:
      return;
  }
}

/**
 * Adds `op`'s expression to `graph`, reading its inputs through `leaf`, and returns the node of
 * its output (cast to `op.out.dtype` when the op's natural type differs). Every value the op
 * carries becomes a parameter (a uniform), in {@link pushParams}'s order.
 */
export function addElementwise(graph: ExprGraph, op: ElementwiseOperation, leaf: (t: TensorIr) => NodeId): NodeId {
  let node: NodeId;
  switch (op.kind) {
    case "unary":
      node = graph.unary(op.op, leaf(op.input));
      break;
    case "binary":
      node = graph.binary(op.op, leaf(op.lhs), leaf(op.rhs));
      break;
    case "binary-scalar": {
      const tensor = leaf(op.lhs);
      const scalar = graph.param(op.scalar, op.lhs.dtype);
      node = op.scalarFirst ? graph.binary(op.op, scalar, tensor) : graph.binary(op.op, tensor, scalar);
      break;
    }
    case "clamp":
      node = graph.add({
        kind: "clamp",
        arg: leaf(op.input),
        min: graph.param(op.min, op.input.dtype),
        max: graph.param(op.max, op.input.dtype),
        dtype: op.input.dtype,
      });
      break;
    case "cast":
      node = graph.add({ kind: "cast", arg: leaf(op.input), dtype: op.out.dtype });
      break;
    case "where": {
      const lhs = leaf(op.lhs);
      node = graph.add({ kind: "select", cond: leaf(op.condition), lhs, rhs: leaf(op.rhs), dtype: graph.node(lhs).dtype });
      break;
    }
    case "full":
      node = graph.param(op.value, op.out.dtype);
      break;
    case "arange": {
      const dt = op.out.dtype === "i32" || op.out.dtype === "u32" ? op.out.dtype : "f32";
      const start = graph.param(op.start, dt);
      const step = graph.param(op.step, dt);
      const index = graph.add({ kind: "cast", arg: graph.add({ kind: "index", dtype: "u32" }), dtype: dt });
      node = graph.binary("add", start, graph.binary("mul", index, step));
      break;
    }
    case "random": {
      const key = graph.param(pcg(op.seed >>> 0), "u32");
      const a = graph.param(op.a, "f32");
      const b = graph.param(op.b, "f32");
      node = graph.add({ kind: "random", distribution: op.distribution, key, a, b, dtype: "f32" });
      break;
    }
    default:
      return op satisfies never;
  }
  invariant(node >= 0, "expression nodes have non-negative ids");
  return graph.node(node).dtype === op.out.dtype ? node : graph.add({ kind: "cast", arg: node, dtype: op.out.dtype });
}
