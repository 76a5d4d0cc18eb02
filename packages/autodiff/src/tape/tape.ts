/**
 * The tape: what one `grad` call records while its function runs, and the reverse pass over it.
 *
 * @module
 */
import { InvariantError } from "@weft/environment";
import { type OperationIr, type TensorId, operationInputs } from "@weft/fusion";
import { type Tensor, keep, ones, tidy, zeros } from "@weft/tensor";
import { valueId } from "@weft/tensor/internal";
import { GRADIENTS } from "../gradients/table.js";
import { type GradientRule, type Saves, gradientKey, isRule } from "../gradients/rule.js";
import { sameShape } from "../gradients/shapes.js";

/** One value the tape differentiates: a leaf, or the output of a recorded op. */
interface Node {
  readonly id: TensorId;
  readonly shape: readonly number[];
  readonly dtype: Tensor["dtype"];
}

/** One recorded op whose output depends on a tracked value. */
interface Entry {
  readonly op: Exclude<OperationIr, { kind: "drop" }>;
  readonly rule: GradientRule<never>;
  /** The tracked value behind each input (`undefined`: a constant to this tape). */
  readonly inputs: readonly (Node | undefined)[];
  /** References to the input values the rule reads (see `GradientRule.saves`), owned by the tape. */
  saved: (Tensor | undefined)[];
  /** A reference to the output value, when the rule reads it, owned by the tape. */
  output: Tensor | undefined;
  readonly out: Node;
}

const NOTHING: Saves = {};

function isFloat(dtype: string): boolean {
  return dtype === "f32" || dtype === "f16";
}

/**
 * A record of the ops one differentiated function ran, keyed by the values they depend on, and the
 * reverse pass that turns it into gradients. Burn's autodiff graph, built by observation instead
 * of a backend decorator: see `recorder.ts` for how ops reach it.
 *
 * @remarks
 * **What is recorded.** An op is recorded when one of its inputs is a tracked value (a leaf, or
 * the output of a recorded op) and its entry in the gradient table lets a cotangent through; its
 * output then becomes tracked. Values are keyed by their home id (`valueId`), so clones of a value
 * are the same value, and a use from another stream (a shared view) still finds it.
 * **What is kept.** Only what the rules read ({@link GradientRule.saves}): one reference per saved
 * value, taken out of every `tidy` and scope (`keep`), so the function's other intermediates die
 * when it returns and can be fused away.
 * **Invariants.** Entries are in record order, which is a topological order (an op's inputs exist
 * before it), so the reverse pass meets every consumer of a value before its producer. After
 * {@link Tape.release} the tape holds no tensor, whatever happened before (the function threw,
 * the reverse pass threw, or it completed).
 * **Bound.** One entry per recorded op and one node per tracked value, for the duration of one
 * `grad` call; released when it returns.
 */
export class Tape {
  readonly #nodes = new Map<TensorId, Node>();
  #entries: Entry[] = [];
  #released = false;

  /** Makes `t` a leaf of this tape (a value the gradient is taken with respect to). */
  track(t: Tensor): void {
    const id = valueId(t);
    if (!this.#nodes.has(id)) this.#nodes.set(id, { id, shape: t.shape, dtype: t.dtype });
  }

  /** Whether `t`'s value is tracked by this tape (a leaf or a recorded op's output). */
  tracks(t: Tensor): boolean {
    return this.#nodes.has(valueId(t));
  }

  /** Records `op` (its input values `inputs`, in `operationInputs` order; its output `out`) if it depends on a tracked value. */
  record(op: OperationIr, inputs: readonly Tensor[], out: Tensor): void {
    if (op.kind === "drop" || this.#released) return;
    let tracked = false;
    const nodes = inputs.map((t) => {
      const node = this.#nodes.get(valueId(t));
      if (node !== undefined) tracked = true;
      return node;
    });
    if (!tracked || !isFloat(out.dtype)) return;
    const entry = GRADIENTS[gradientKey(op)] as Parameters<typeof isRule<never>>[0];
    if (!isRule(entry)) return;
    const rule = entry as GradientRule<typeof op>;
    if (rule.differentiable !== undefined && !rule.differentiable(op)) return;
    const needs = nodes.map((n) => n !== undefined);
    const saves = rule.saves === undefined ? NOTHING : typeof rule.saves === "function" ? rule.saves(op, needs) : rule.saves;
    const saved = inputs.map((t, i) => (saves.inputs?.includes(i) === true ? keep(t.clone()) : undefined));
    const output = saves.output === true ? keep(out.clone()) : undefined;
    const node: Node = { id: op.out.id, shape: out.shape, dtype: out.dtype };
    this.#nodes.set(node.id, node);
    this.#entries.push({ op, rule: rule as GradientRule<never>, inputs: nodes, saved, output, out: node });
  }

  /**
   * The reverse pass: the gradient of the scalar value `lossId` (of `lossDType`, on `device`) with
   * respect to each of `leaves` (zeros for a leaf it does not depend on). Every tensor the pass
   * creates besides the results is disposed as soon as it is used, and each entry's saved values
   * right after its rule ran, so the backward pass fuses like any other work. The results belong
   * to the caller's `tidy` or scope, as any new tensor does.
   */
  backward(lossId: TensorId, lossDType: Tensor["dtype"], device: Tensor["device"], leaves: readonly Tensor[]): Tensor[] {
    const grads = new Map<Node, Tensor>();
    try {
      const lossNode = this.#nodes.get(lossId);
      if (lossNode !== undefined) grads.set(lossNode, ones([], { dtype: lossDType, device }));
      for (let i = this.#entries.length - 1; i >= 0; i--) {
        const entry = this.#entries[i] as Entry;
        const g = grads.get(entry.out);
        if (g === undefined) {
          releaseEntry(entry);
          continue;
        }
        grads.delete(entry.out);
        const needs = entry.inputs.map((n) => n !== undefined);
        let cotangents: readonly (Tensor | undefined)[];
        try {
          cotangents = tidy(() => entry.rule.backward({ op: entry.op as never, g, inputs: entry.saved, output: entry.output, needs }));
        } finally {
          g.dispose();
          releaseEntry(entry);
        }
        cotangents.forEach((c, j) => {
          if (c === undefined) return;
          const node = entry.inputs[j];
          if (node === undefined) {
            c.dispose();
            return;
          }
          if (!sameShape(c.shape, node.shape) || c.dtype !== node.dtype) {
            c.dispose();
            throw new InvariantError(`the gradient rule of ${gradientKey(entry.op)} gave input ${j} a cotangent of shape [${c.shape.join(",")}] ${c.dtype}, expected [${node.shape.join(",")}] ${node.dtype}`);
          }
          const before = grads.get(node);
          if (before === undefined) {
            grads.set(node, c);
            return;
          }
          grads.set(node, before.add(c));
          before.dispose();
          c.dispose();
        });
      }
      return leaves.map((leaf) => {
        const node = this.#nodes.get(valueId(leaf));
        const g = node === undefined ? undefined : grads.get(node);
        if (node !== undefined) grads.delete(node);
        return g ?? zeros(leaf.shape, { dtype: leaf.dtype, device: leaf.device });
      });
    } finally {
      for (const g of grads.values()) g.dispose();
      this.release();
    }
  }

  /** Gives back every value the tape holds (idempotent); the tape records nothing afterwards. */
  release(): void {
    this.#released = true;
    for (const entry of this.#entries) releaseEntry(entry);
    this.#entries = [];
    this.#nodes.clear();
  }
}

function releaseEntry(entry: Entry): void {
  for (const t of entry.saved) t?.dispose();
  entry.output?.dispose();
  entry.saved = [];
  entry.output = undefined;
}

/** Pairs an op's input IRs with the tensors borrowed for them (see `recorder.ts`). */
export function inputsOf(op: OperationIr, borrowedIrs: readonly unknown[], borrowed: readonly Tensor[]): Tensor[] {
  return operationInputs(op).map((ir) => {
    const i = borrowedIrs.indexOf(ir);
    const t = borrowed[i];
    if (i < 0 || t === undefined) throw new InvariantError(`${op.kind}: an input of the op was not borrowed through use() right before it was registered`);
    return t;
  });
}
