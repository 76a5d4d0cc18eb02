import { invariant } from "@weft/environment";
import type { CreationOperation, ElementwiseOperation, OperationIr, TensorIr } from "@weft/fusion";
import { isCreation, isElementwise, pushValues } from "@weft/fusion";
import { pcg, type ExprGraph, type NodeId } from "../codegen/wgsl/expr.js";

/**
 * The operations a WebGPU kernel evaluates as one expression: the elementwise ones and, unlike the
 * CPU backend, the creation ops (`full` is a constant, `arange`/`random` read the element index).
 * Both families come from `@weft/fusion`'s operation table.
 */
export type ExpressionOperation = ElementwiseOperation | CreationOperation;

/** Whether `op` is an {@link ExpressionOperation}. */
export function isExpression(op: OperationIr): op is ExpressionOperation {
  return isElementwise(op) || isCreation(op);
}

/**
 * Appends the runtime values of `op` to `out`, in the order {@link addElementwise} gives them
 * parameter slots: the scalar (`binary-scalar`), `min` then `max` (`clamp`), the fill value
 * (`full`), `start` then `step` (`arange`), `pcg(seed)` then `a` then `b` (`random`). The launch
 * cache replays a kernel with the values of each new execution through this, without rebuilding
 * the graph; allocation-free.
 */
export function pushParams(op: OperationIr, out: number[]): void {
  // The values in `OPERATIONS` order, except `random`'s seed, which the kernel takes hashed.
  if (op.kind === "random") out.push(pcg(op.seed >>> 0), op.a, op.b);
  else pushValues(op, out);
}

/**
 * Adds `op`'s expression to `graph`, reading its inputs through `leaf`, and returns the node of
 * its output (cast to `op.out.dtype` when the op's natural type differs). Every value the op
 * carries becomes a parameter (a uniform), in {@link pushParams}'s order.
 */
export function addElementwise(graph: ExprGraph, op: ExpressionOperation, leaf: (t: TensorIr) => NodeId): NodeId {
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
