/**
 * `einsum`: Einstein summation over one or more tensors, lowered to `permute`, `reshape`, `sum`
 * and batched `matmul` — so a contraction runs as the backend's matmul kernel, never a host loop.
 *
 * @remarks
 * **Supported forms.** Subscripts are letters (`a-z`, `A-Z`); operands are separated by `,`; the
 * output follows `->` (without it, NumPy's implicit output: the letters that appear exactly once,
 * sorted). Every letter has one size across operands (no broadcasting of size-1 dims). Covered:
 * transposes (`ij->ji`), sums (`ij->`, `ij->i`), elementwise and outer products (`i,i->i`,
 * `i,j->ij`), dot/matrix/batched products (`i,i->`, `ij,jk->ik`, `bij,bjk->bik`, `bhqd,bhkd->bhqk`),
 * and chains of more operands (contracted left to right).
 * **Not supported** (an `UnsupportedError` naming the form): a letter repeated within one operand
 * (diagonals and traces: `ii->i`, `ii->`), an ellipsis (`...ij->...ji`), and an output letter that
 * is in no operand.
 * **Lowering of a pair** `A, B → out`: letters in both and kept are *batch*, in both and not kept
 * are *contracted*, in one only and kept are that side's *free* dims; a letter in one operand only
 * and not kept is summed out first. `A` is permuted to `[batch, freeA, contracted]` and `B` to
 * `[batch, contracted, freeB]`, each reshaped to rank 3, multiplied, reshaped and permuted to the
 * output order.
 *
 * @module
 */
import { UnsupportedError, describeValue } from "@weft/environment";
import { DTypeError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { promoteTypes } from "../dtype/dtype.js";
import { checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { tidy } from "../lifetime/lifetime.js";
import { reshapeUnchecked } from "./layout.js";
import { matmul } from "./matmul.js";
import { reduce } from "./reduce.js";

/** One operand: its tensor and its letters, one per dim. */
interface Term {
  readonly t: Tensor;
  readonly letters: readonly string[];
}

/** Parses `subscripts` against the operands' ranks and sizes: the terms, the output letters, every letter's size. */
function parse(subscripts: string, operands: readonly Tensor[]): { terms: Term[]; out: string[]; sizes: Map<string, number> } {
  const compact = subscripts.replace(/\s+/g, "");
  if (compact.includes(".")) {
    throw new UnsupportedError(`einsum with an ellipsis ("${subscripts}")`, "einsum: name every dimension with a letter (e.g. \"bij,bjk->bik\"), or reshape first");
  }
  const arrow = compact.split("->");
  if (arrow.length > 2) throw new ValueError("einsum", `subscripts "${subscripts}" have more than one "->"; write inputs->output, e.g. "ij,jk->ik"`);
  const inputs = (arrow[0] ?? "").split(",");
  if (inputs.length !== operands.length) {
    throw new ValueError("einsum", `subscripts "${subscripts}" name ${inputs.length} operand(s) but ${operands.length} tensor(s) were passed; pass one tensor per comma-separated term`);
  }
  const letter = /^[a-zA-Z]*$/;
  for (const part of [...inputs, ...(arrow.length === 2 ? [arrow[1] ?? ""] : [])]) {
    if (!letter.test(part)) throw new ValueError("einsum", `subscripts "${subscripts}" contain "${part}"; use only letters a-z, A-Z, "," and "->"`);
  }
  const sizes = new Map<string, number>();
  const counts = new Map<string, number>();
  const terms = inputs.map((part, k): Term => {
    const t = operands[k] as Tensor;
    const letters = [...part];
    if (letters.length !== t.rank) {
      throw new ShapeError("einsum", operands.map((o) => o.shape), `term "${part}" has ${letters.length} letter(s) but operand ${k} has shape ${formatShape(t.shape)} (rank ${t.rank}); use one letter per dimension`);
    }
    if (new Set(letters).size !== letters.length) {
      throw new UnsupportedError(`einsum with a repeated letter in one operand ("${part}": a diagonal or trace)`, "einsum: use weft.eye(n) to take the diagonal explicitly (multiply, then sum), or name the dimensions with distinct letters");
    }
    letters.forEach((l, d) => {
      const size = t.shape[d] ?? 0;
      const known = sizes.get(l);
      if (known !== undefined && known !== size) {
        throw new ShapeError("einsum", operands.map((o) => o.shape), `letter "${l}" has size ${known} in one operand and ${size} in operand ${k} (${formatShape(t.shape)}); every letter needs one size (einsum does not broadcast): expand or slice the operands to match`);
      }
      sizes.set(l, size);
      counts.set(l, (counts.get(l) ?? 0) + 1);
    });
    return { t, letters };
  });
  let out: string[];
  if (arrow.length === 2) {
    out = [...(arrow[1] ?? "")];
    if (new Set(out).size !== out.length) throw new ValueError("einsum", `output "${arrow[1] ?? ""}" repeats a letter; name each output dimension once`);
    for (const l of out) {
      if (!sizes.has(l)) throw new ValueError("einsum", `output letter "${l}" appears in no operand of "${subscripts}"; use letters of the inputs`);
    }
  } else {
    out = [...counts.entries()].filter(([, n]) => n === 1).map(([l]) => l).sort();
  }
  return { terms, out, sizes };
}

/** Permutes and reshapes `t` (letters `from`) to the letters `to` (a permutation of `from`). */
function arrange(t: Tensor, from: readonly string[], to: readonly string[]): Tensor {
  const axes = to.map((l) => from.indexOf(l));
  return axes.every((a, i) => a === i) ? t.clone() : t.permute(axes);
}

/** Sums out the letters of `term` that are not in `keep`. */
function sumOut(term: Term, keep: ReadonlySet<string>): Term {
  const axes = term.letters.map((l, i) => (keep.has(l) ? -1 : i)).filter((i) => i >= 0);
  if (axes.length === 0) return term;
  return { t: reduce("sum", term.t, axes), letters: term.letters.filter((l) => keep.has(l)) };
}

/** Contracts two terms into one whose letters are `keep`'s letters present in either (module doc). */
function contract(a: Term, b: Term, keep: ReadonlySet<string>, sizes: ReadonlyMap<string, number>): Term {
  const inB = new Set(b.letters);
  const inA = new Set(a.letters);
  const batch = a.letters.filter((l) => inB.has(l) && keep.has(l));
  const contracted = a.letters.filter((l) => inB.has(l) && !keep.has(l));
  const freeA = a.letters.filter((l) => !inB.has(l));
  const freeB = b.letters.filter((l) => !inA.has(l));
  const size = (ls: readonly string[]): number => ls.reduce((n, l) => n * (sizes.get(l) ?? 0), 1);
  const am = reshapeUnchecked(arrange(a.t, a.letters, [...batch, ...freeA, ...contracted]), [size(batch), size(freeA), size(contracted)]);
  const bm = reshapeUnchecked(arrange(b.t, b.letters, [...batch, ...contracted, ...freeB]), [size(batch), size(contracted), size(freeB)]);
  const product = matmul(am, bm);
  const letters = [...batch, ...freeA, ...freeB];
  return { t: reshapeUnchecked(product, letters.map((l) => sizes.get(l) ?? 0)), letters };
}

/**
 * Einstein summation (NumPy/PyTorch `einsum`): `einsum("ij,jk->ik", a, b)` is `a.matmul(b)`.
 * See the module doc for the supported forms; operands' dtypes promote, and contractions compute
 * as `matmul` does (integers in `f32`).
 * @throws ValueError for malformed subscripts or a wrong operand count; ShapeError when a letter's
 *   sizes differ or a term's length differs from its operand's rank; UnsupportedError for
 *   diagonals/traces and ellipses; DTypeError for bool operands.
 */
export function einsum(subscripts: string, ...operands: Tensor[]): Tensor {
  if (typeof subscripts !== "string") throw new ValueError("einsum", `pass the subscripts as a string such as "ij,jk->ik" first, not ${describeValue(subscripts)}`);
  operands.forEach((t, i) => checkTensor("einsum", `operand ${i}`, t));
  if (operands.length === 0) throw new ValueError("einsum", "got no operands; pass the tensors after the subscripts");
  checkOperands("einsum", operands);
  const { terms, out, sizes } = parse(subscripts, operands);
  if (operands.some((t) => t.dtype === "bool")) throw new DTypeError("einsum", `bool operands cannot be summed; cast them first, e.g. \`x.cast("f32")\``);
  const dtype = operands.map((t) => t.dtype).reduce(promoteTypes);
  return tidy(() => {
    const cast = terms.map((term) => (term.t.dtype === dtype ? term : { t: castUnchecked(term.t, dtype), letters: term.letters }));
    const wanted = new Set(out);
    // Letters still needed after operand k: the output's and those of later operands.
    const later = cast.map((_, k) => new Set([...out, ...cast.slice(k + 1).flatMap((term) => term.letters)]));
    let acc = sumOut(cast[0] as Term, later[0] as Set<string>);
    for (let k = 1; k < cast.length; k++) {
      const keep = later[k] as Set<string>;
      const next = sumOut(cast[k] as Term, new Set([...keep, ...acc.letters]));
      acc = contract(acc, next, keep, sizes);
    }
    const final = sumOut(acc, wanted);
    return arrange(final.t, final.letters, out);
  });
}
