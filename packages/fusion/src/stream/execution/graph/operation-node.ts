import type { OperationIr } from "../../../ir/operation-ir.js";
import { operationInputs, operationOutputs } from "../../../ir/operation-descriptor.js";
import type { GraphNode } from "./dependency-graph.js";

/**
 * One operation at its stream position as a {@link GraphNode}: it produces its output, reads its
 * inputs, and frees the inputs it uses last — a `drop`'s tensor, or a `ReadWrite` input.
 */
export function operationNode(op: OperationIr, position: number): GraphNode {
  const inputs = operationInputs(op);
  const read: number[] = [];
  const freed: number[] = [];
  for (const t of inputs) {
    if (!read.includes(t.id)) read.push(t.id);
    if ((op.kind === "drop" || t.status === "ReadWrite") && !freed.includes(t.id)) freed.push(t.id);
  }
  return { produced: operationOutputs(op).map((t) => t.id), read, freed, position };
}

/**
 * Several operations executed as one unit (a fused block, or a run of unfused operations) as a
 * {@link GraphNode}: what they produce, what they read from outside the unit, what they free.
 * `position` is the smallest stream position among them.
 */
export function chunkNode(ops: readonly OperationIr[], positions: readonly number[]): GraphNode {
  const produced: number[] = [];
  const read: number[] = [];
  const freed: number[] = [];
  for (const op of ops) for (const t of operationOutputs(op)) if (!produced.includes(t.id)) produced.push(t.id);
  for (const op of ops) {
    for (const t of operationInputs(op)) {
      if (!produced.includes(t.id) && !read.includes(t.id)) read.push(t.id);
      if ((op.kind === "drop" || t.status === "ReadWrite") && !freed.includes(t.id)) freed.push(t.id);
    }
  }
  return { produced, read, freed, position: Math.min(...positions) };
}
