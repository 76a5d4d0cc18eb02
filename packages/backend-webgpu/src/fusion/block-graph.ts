import type { OperationIr, TensorId, TensorIr } from "@weft/fusion";
import { ExprGraph, type NodeId } from "../codegen/wgsl/expr.js";
import { addElementwise, isExpression } from "./elementwise-ops.js";

/** A tensor read by a block from outside it (a kernel input slot). */
export interface BlockInput {
  readonly tensor: TensorIr;
  readonly slot: number;
  /** Whether its last use lies inside the block (a `ReadWrite` use or a `drop`). */
  dies: boolean;
}

/** A tensor produced inside a block. */
export interface BlockOutput {
  readonly tensor: TensorIr;
  readonly node: NodeId;
  /** Whether it is still used after the block (else it is never written: write elision). */
  written: boolean;
}

/**
 * The expression graph of a run of elementwise operations (global IR), with the bookkeeping every
 * fused kernel needs: which tensors come from outside (input slots), which are produced, which are
 * written out, and which die inside the block.
 *
 * @remarks
 * **Write elision (Burn's `tensor_writes`).** A produced tensor is written only if no later use in
 * the block is its last (`ReadWrite`) and no `drop` of it follows in the block.
 * **Bounded by** the operations of one block.
 */
export class BlockGraph {
  readonly graph = new ExprGraph();
  readonly inputs: BlockInput[] = [];
  readonly outputs: BlockOutput[] = [];
  /** Node of each tensor available in the block (inputs read so far and produced tensors). */
  readonly #nodes = new Map<TensorId, NodeId>();
  /** Tensors given a value from the kernel template (a reduction result), by id. */
  readonly #values = new Map<TensorId, NodeId>();

  /** Makes `tensor` available as the named WGSL value `name` (e.g. the reduce result). */
  provide(tensor: TensorIr, name: string): NodeId {
    const node = this.graph.add({ kind: "value", name, dtype: tensor.dtype });
    this.#values.set(tensor.id, node);
    this.#nodes.set(tensor.id, node);
    return node;
  }

  /**
   * Makes `tensor`, which the kernel template computes (a product, a reduction), the named WGSL
   * value `name` and an output of the block: written unless it dies in the block.
   */
  produce(tensor: TensorIr, name: string): NodeId {
    const node = this.provide(tensor, name);
    this.outputs.push({ tensor, node, written: true });
    return node;
  }

  /** The node reading `tensor`: produced, provided, or a (new) input slot. Records a dying use. */
  leaf(tensor: TensorIr): NodeId {
    const produced = this.outputs.find((o) => o.tensor.id === tensor.id);
    if (produced !== undefined) {
      if (tensor.status === "ReadWrite") produced.written = false;
      return produced.node;
    }
    const known = this.#nodes.get(tensor.id);
    const input = this.inputs.find((i) => i.tensor.id === tensor.id);
    if (input !== undefined && tensor.status === "ReadWrite") input.dies = true;
    if (known !== undefined) return known;
    const slot = this.inputs.length;
    this.inputs.push({ tensor, slot, dies: tensor.status === "ReadWrite" });
    const node = this.graph.add({ kind: "input", slot, dtype: tensor.dtype });
    this.#nodes.set(tensor.id, node);
    return node;
  }

  /** Adds one operation (an expression — elementwise or creation — or a `drop`). Returns false for any other kind. */
  add(op: OperationIr): boolean {
    if (op.kind === "drop") {
      const produced = this.outputs.find((o) => o.tensor.id === op.tensor.id);
      if (produced !== undefined) produced.written = false;
      const input = this.inputs.find((i) => i.tensor.id === op.tensor.id);
      if (input !== undefined) input.dies = true;
      return true;
    }
    if (!isExpression(op)) return false;
    const node = addElementwise(this.graph, op, (t) => this.leaf(t));
    this.outputs.push({ tensor: op.out, node, written: true });
    this.#nodes.set(op.out.id, node);
    return true;
  }

  /** The produced tensors that must be written, in production order. */
  written(): BlockOutput[] {
    return this.outputs.filter((o) => o.written);
  }

  /** Number of produced tensors never written. */
  elided(): number {
    return this.outputs.length - this.written().length;
  }
}
