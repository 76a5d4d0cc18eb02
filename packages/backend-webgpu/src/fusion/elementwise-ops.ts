import { invariant } from "@weft/environment";
import type { OperationIr, TensorIr } from "@weft/fusion";
import type { ExprGraph, NodeId } from "../codegen/wgsl/expr.js";

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
 * Adds `op`'s expression to `graph`, reading its inputs through `leaf`, and returns the node of
 * its output (cast to `op.out.dtype` when the op's natural type differs).
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
      const scalar = graph.constant(op.scalar, op.lhs.dtype);
      node = op.scalarFirst ? graph.binary(op.op, scalar, tensor) : graph.binary(op.op, tensor, scalar);
      break;
    }
    case "clamp":
      node = graph.add({
        kind: "clamp",
        arg: leaf(op.input),
        min: graph.constant(op.min, op.input.dtype),
        max: graph.constant(op.max, op.input.dtype),
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
      node = graph.constant(op.value, op.out.dtype);
      break;
    case "arange": {
      const dt = op.out.dtype === "i32" || op.out.dtype === "u32" ? op.out.dtype : "f32";
      const index = graph.add({ kind: "cast", arg: graph.add({ kind: "index", dtype: "u32" }), dtype: dt });
      const scaled = graph.binary("mul", index, graph.constant(op.step, dt));
      node = graph.binary("add", graph.constant(op.start, dt), scaled);
      break;
    }
    case "random":
      node = graph.add({ kind: "random", distribution: op.distribution, seed: op.seed, a: op.a, b: op.b, dtype: "f32" });
      break;
    default:
      return op satisfies never;
  }
  invariant(node >= 0, "expression nodes have non-negative ids");
  return graph.node(node).dtype === op.out.dtype ? node : graph.add({ kind: "cast", arg: node, dtype: op.out.dtype });
}
