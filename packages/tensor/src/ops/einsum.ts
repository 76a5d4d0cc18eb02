/**
 * `einsum`: Einstein summation over one or more tensors, lowered to `slice`, `expand`, `permute`,
 * `reshape`, `sum` and batched `matmul` — so a contraction runs as the backend's matmul kernel and
 * a diagonal as a strided view, never a host loop.
 *
 * @remarks
 * **Forms (NumPy's).** Subscripts are letters (`a-z`, `A-Z`); operands are separated by `,`; the
 * output follows `->`. Without `->` the output is NumPy's implicit one: the ellipsis dims, then
 * the letters that appear exactly once in all the inputs, sorted (so `"ii"` is the trace and
 * `"ij,jk"` the matrix product). Covered: transposes (`ij->ji`), sums (`ij->`, `ij->i`),
 * elementwise and outer products (`i,i->i`, `i,j->ij`), dot/matrix/batched products (`i,i->`,
 * `ij,jk->ik`, `bhqd,bhkd->bhqk`), chains of more operands (contracted left to right), and:
 * - **diagonals**: a letter repeated within one operand takes that operand's diagonal over those
 *   dims (`ii->i` the diagonal, `ii->` and `ii` the trace, `iij->j`, `iii->i`); the repeated
 *   dims need one size;
 * - **ellipsis**: `...` in a term stands for the dims its letters do not name (at most one per
 *   term); the operands' ellipsis dims are right-aligned and broadcast together (NumPy's rules),
 *   and appear in the output where its `...` is (`...ij,...jk->...ik`); an explicit output
 *   without `...` is a `ValueError` when the ellipsis has dims (NumPy's answer);
 * - **size-1 broadcasting**: a letter of size 1 in one operand and `n` in another is `n` (NumPy:
 *   `"i,i"` of shapes `[1]` and `[3]` sums the broadcast product).
 * An output letter that is in no operand, or repeated, is a `ValueError`.
 * **Lowering.** First each operand on its own: size-1 dims broadcast to their letter's size
 * (`expand`, a view), then each repeated letter's dims moved last, merged and sliced with step
 * `1 + n + … + n^(k−1)` — the diagonal as a strided slice of the reshaped operand. Then pairs
 * `A, B → out`: letters in both and kept are *batch*, in both and not kept are *contracted*, in
 * one only and kept are that side's *free* dims; a letter in one operand only and not kept is
 * summed out first. `A` is permuted to `[batch, freeA, contracted]` and `B` to `[batch,
 * contracted, freeB]`, each reshaped to rank 3, multiplied, reshaped and permuted to the output.
 *
 * @module
 */
import { describeValue } from "@weft/environment";
import { DTypeError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { promoteTypes } from "../dtype/dtype.js";
import { broadcastShapes } from "../shape/shape.js";
import { checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { tidy } from "../lifetime/lifetime.js";
import { reshapeUnchecked } from "./layout.js";
import { matmul } from "./matmul.js";
import { reduce } from "./reduce.js";

/**
 * One operand: its tensor and its labels, one per dim. A label is a user letter or an ellipsis
 * dim's internal name ({@link ellipsisLabel}), which no user letter can be.
 */
interface Term {
  readonly t: Tensor;
  readonly letters: readonly string[];
}

/** The internal label of the `i`-th broadcast ellipsis dim (counted from the left). */
function ellipsisLabel(i: number): string {
  return `...${i}`;
}

/** A term's letters and where its `...` stands (`-1`: none). */
interface Parsed {
  readonly letters: readonly string[];
  readonly ellipsis: number;
}

/** Splits one term of `subscripts` into its letters and the position of its ellipsis. */
function tokenize(part: string, subscripts: string): Parsed {
  const pieces = part.split("...");
  if (pieces.length > 2) throw new ValueError("einsum", `term "${part}" of "${subscripts}" has more than one "..."; use one ellipsis per term (it stands for all the dims the letters do not name)`);
  const letter = /^[a-zA-Z]*$/;
  for (const piece of pieces) {
    if (!letter.test(piece)) throw new ValueError("einsum", `subscripts "${subscripts}" contain "${part}"; use only letters a-z, A-Z, "...", "," and "->"`);
  }
  return { letters: pieces.flatMap((piece) => [...piece]), ellipsis: pieces.length === 2 ? [...(pieces[0] ?? "")].length : -1 };
}

/**
 * Parses `subscripts` against the operands: the terms (ellipses replaced by their labels, size-1
 * dims of a broadcast letter expanded), the output labels, every label's size.
 */
function parse(subscripts: string, operands: readonly Tensor[]): { terms: Term[]; out: string[]; sizes: Map<string, number> } {
  const compact = subscripts.replace(/\s+/g, "");
  const arrow = compact.split("->");
  if (arrow.length > 2) throw new ValueError("einsum", `subscripts "${subscripts}" have more than one "->"; write inputs->output, e.g. "ij,jk->ik"`);
  const inputs = (arrow[0] ?? "").split(",");
  if (inputs.length !== operands.length) {
    throw new ValueError("einsum", `subscripts "${subscripts}" name ${inputs.length} operand(s) but ${operands.length} tensor(s) were passed; pass one tensor per comma-separated term`);
  }
  const shapes = operands.map((o) => o.shape);
  const parsed = inputs.map((part) => tokenize(part, subscripts));
  const output = arrow.length === 2 ? tokenize(arrow[1] ?? "", subscripts) : undefined;
  // The ellipsis dims of each operand, broadcast together (right-aligned, NumPy's rules).
  const ellipsisShapes = parsed.map((p, k): number[] => {
    const t = operands[k] as Tensor;
    const named = p.letters.length;
    if (p.ellipsis < 0 ? named !== t.rank : named > t.rank) {
      const part = inputs[k] ?? "";
      const fix = p.ellipsis < 0 ? `use one letter per dimension, or "..." for the dims you do not name (e.g. "...${part}")` : "name at most as many dims as the operand has";
      throw new ShapeError("einsum", shapes, `term "${part}" names ${named} dim(s) but operand ${k} has shape ${formatShape(t.shape)} (rank ${t.rank}); ${fix}`);
    }
    return p.ellipsis < 0 ? [] : t.shape.slice(p.ellipsis, p.ellipsis + t.rank - named);
  });
  const ellipsisShape = broadcastShapes("einsum", ...ellipsisShapes);
  const ellipsis = ellipsisShape.map((_, i) => ellipsisLabel(i));
  const labelled = parsed.map((p, k): string[] => {
    if (p.ellipsis < 0) return [...p.letters];
    const own = (ellipsisShapes[k] ?? []).length;
    return [...p.letters.slice(0, p.ellipsis), ...ellipsis.slice(ellipsis.length - own), ...p.letters.slice(p.ellipsis)];
  });
  // Every label's size: equal, or 1 broadcast to the other (NumPy); a repeated letter within one
  // operand (a diagonal) needs one size.
  const sizes = new Map<string, number>();
  labelled.forEach((letters, k) => {
    const t = operands[k] as Tensor;
    const own = new Map<string, number>();
    letters.forEach((l, d) => {
      const size = t.shape[d] ?? 0;
      const mine = own.get(l);
      if (mine !== undefined && mine !== size) {
        throw new ShapeError("einsum", shapes, `letter "${l}" is repeated in term "${inputs[k] ?? ""}" (a diagonal) over dims of sizes ${mine} and ${size} of operand ${k} (${formatShape(t.shape)}); a diagonal needs equal sizes: slice the operand to a square first`);
      }
      own.set(l, size);
      const known = sizes.get(l);
      if (known !== undefined && known !== size && known !== 1 && size !== 1) {
        throw new ShapeError("einsum", shapes, `letter "${l}" has size ${known} in one operand and ${size} in operand ${k} (${formatShape(t.shape)}); every letter needs one size, or 1 to broadcast: expand or slice the operands to match`);
      }
      if (known === undefined || known === 1) sizes.set(l, size);
    });
  });
  const counts = new Map<string, number>();
  for (const l of labelled.flat()) counts.set(l, (counts.get(l) ?? 0) + 1);
  let out: string[];
  if (output !== undefined) {
    const text = arrow[1] ?? "";
    if (new Set(output.letters).size !== output.letters.length) throw new ValueError("einsum", `output "${text}" repeats a letter; name each output dimension once`);
    for (const l of output.letters) {
      if (!sizes.has(l)) throw new ValueError("einsum", `output letter "${l}" appears in no operand of "${subscripts}"; use letters of the inputs`);
    }
    if (output.ellipsis < 0 && ellipsis.length > 0) {
      throw new ValueError("einsum", `the inputs' "..." stand for ${ellipsis.length} dim(s) (${formatShape(ellipsisShape)}) but output "${text}" has no "..." (NumPy's rule); write "...${text}" to keep them, or sum them with a letter`);
    }
    out = output.ellipsis < 0 ? [...output.letters] : [...output.letters.slice(0, output.ellipsis), ...ellipsis, ...output.letters.slice(output.ellipsis)];
  } else {
    const once = [...counts.entries()].filter(([l, n]) => n === 1 && !ellipsis.includes(l)).map(([l]) => l).sort();
    out = [...ellipsis, ...once];
  }
  const terms = labelled.map((letters, k): Term => ({ t: operands[k] as Tensor, letters }));
  return { terms, out, sizes };
}

/** `term` with its size-1 dims broadcast to their letter's size (a view) and its repeated letters replaced by their diagonals. */
function prepare(term: Term, sizes: ReadonlyMap<string, number>): Term {
  let { t, letters } = term;
  const target = letters.map((l) => sizes.get(l) ?? 0);
  if (target.some((n, d) => n !== t.shape[d])) t = t.expand(target);
  for (;;) {
    const repeated = letters.find((l, d) => letters.indexOf(l) !== d);
    if (repeated === undefined) return { t, letters };
    const others = letters.map((_, d) => d).filter((d) => letters[d] !== repeated);
    const dims = letters.map((_, d) => d).filter((d) => letters[d] === repeated);
    const n = sizes.get(repeated) ?? 0;
    // The k dims of the repeated letter, last and merged: element (i, i, …, i) sits at i·(1 + n + … + n^(k−1)).
    const moved = others.length === 0 && dims.every((d, i) => d === i) ? t : t.permute([...others, ...dims]);
    const kept = others.map((d) => t.shape[d] ?? 0);
    const merged = reshapeUnchecked(moved, [...kept, n ** dims.length]);
    const step = dims.reduce((acc, _, i) => acc + n ** i, 0);
    t = merged.slice([...kept.map(() => null), [0, n ** dims.length, Math.max(1, step)]]);
    letters = [...others.map((d) => letters[d] as string), repeated];
  }
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
 * Diagonals (`"ii->i"`), traces (`"ii"`), ellipses (`"...ij,...jk->...ik"`) and size-1
 * broadcasting follow NumPy (module doc); operands' dtypes promote, and contractions compute as
 * `matmul` does (integers in `f32`).
 * @throws ValueError for malformed subscripts, a wrong operand count, an output letter in no
 *   operand or an ellipsis the output drops; ShapeError when a letter's sizes differ (neither is
 *   1), a diagonal is not square, a term names more dims than its operand has (or fewer, without
 *   `...`), or the ellipsis dims do not broadcast; DTypeError for bool operands.
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
    const cast = terms.map((term) => prepare(term.t.dtype === dtype ? term : { t: castUnchecked(term.t, dtype), letters: term.letters }, sizes));
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
