/**
 * `grad` and `valueAndGrad`: JAX's function transformations, over the Tensor API.
 *
 * @remarks
 * **How.** The returned function tracks the selected arguments' tensors on a fresh {@link Tape},
 * runs `f` while the tape records (see `tape/recorder.ts`), then runs the reverse pass from `f`'s
 * scalar result. Forward and backward are ordinary Tensor ops: they record lazily on the current
 * stream and fuse; nothing is read back.
 * **Lifetimes.** `f` runs like the body of a `tidy` (an `async` `f`: of a `scope`): every tensor it
 * creates and does not return is disposed when it returns, except the values the tape keeps for
 * the reverse pass, which are disposed as soon as their rule ran. What the caller gets — the
 * gradients, the value (`valueAndGrad`), the auxiliary data — belongs to the caller's `tidy` or
 * `scope`, like any new tensor. When `f` or the reverse pass throws, everything the call created
 * is disposed before the error propagates.
 * **Async `f`.** An `async function` is awaited inside a `scope`, and the gradients come back as
 * a promise. Its tape stays open across its awaits; see `tape/recorder.ts` for what concurrent
 * tapes share. A function that is not declared `async` but returns a promise is refused (its
 * intermediates could not be followed across its awaits).
 * **Nesting.** `grad` inside a differentiated function works (grad of grad): the inner reverse
 * pass is recorded by the outer tape like any other op. An argument that an enclosing tape already
 * tracks, or a tensor passed twice, is given a fresh identity (`x · 1`) first, so each argument is
 * differentiated on its own (no perturbation confusion).
 * **Aliasing caveat.** Values are identified by their engine id, shared by clones: a tensor `f`
 * closes over that is the same value as an argument (the same tensor, or a clone of it) is
 * differentiated as that argument. JAX would treat it as a constant; use {@link stopGradient} on
 * it, or pass it as an argument.
 *
 * @module
 */
import { InvariantError, checkBoolean, checkOptions, describeValue } from "@weft/environment";
import { DisposedTensorError, type TensorId } from "@weft/fusion";
import { DTypeError, ShapeError, Tensor, ValueError, dispose, scope, tidy } from "@weft/tensor";
import { unobserved, valueId } from "@weft/tensor/internal";
import { closeTape, openTape, trackedByOpenTape } from "../tape/recorder.js";
import { Tape } from "../tape/tape.js";
import { type FlatTree, type Tree, flattenTree } from "../tree/tree.js";

/** Which arguments to differentiate with respect to: one position, or several. */
export type Argnums = number | readonly number[];

/** Options of {@link grad} and {@link valueAndGrad}. */
export interface GradOptions<N extends Argnums = Argnums> {
  /**
   * The positions of the arguments to differentiate with respect to (default `0`). A number gives
   * that argument's gradient; an array gives an array of gradients, in the same order.
   */
  readonly argnums?: N;
  /**
   * Whether `f` returns `[loss, aux]` instead of `loss` (default `false`): `aux` is passed through
   * untouched and not differentiated (JAX's `has_aux`).
   */
  readonly hasAux?: boolean;
}

/** The gradient of the arguments `N` selects from `A`: the same structure, tensors replaced by their gradients. */
export type Grads<A extends readonly unknown[], N> = N extends number
  ? A[N]
  : N extends readonly number[]
    ? { -readonly [I in keyof N]: A[N[I] & number] }
    : A[0];

type Options<N extends Argnums, Aux extends boolean> = GradOptions<N> & (Aux extends true ? { readonly hasAux: true } : { readonly hasAux?: false });

/**
 * `grad(f)`: a function returning the gradient of `f`'s scalar result with respect to its
 * arguments (JAX's `jax.grad`). `f` takes tensors or trees of them (arrays, plain objects) and
 * returns a rank-0 float tensor; the gradient has the structure of the selected argument(s).
 *
 * @example
 * ```ts
 * const loss = (w: { a: Tensor; b: Tensor }) => x.matmul(w.a).add(w.b).sub(y).square().mean();
 * const g = weft.grad(loss)(params);      // { a: Tensor, b: Tensor }
 * ```
 * @remarks See the module doc for lifetimes, async functions, nesting and the aliasing caveat.
 * @throws (from the returned function) ValueError for a bad argument tree or `argnums`,
 *   DTypeError for an argument or result that is not a float tensor, ShapeError for a result
 *   that is not a scalar, whatever `f` throws.
 */
export function grad<A extends unknown[], Aux, const N extends Argnums = 0>(f: (...args: A) => Promise<readonly [Tensor, Aux]>, options: Options<N, true>): (...args: A) => Promise<[Grads<A, N>, Aux]>;
export function grad<A extends unknown[], Aux, const N extends Argnums = 0>(f: (...args: A) => readonly [Tensor, Aux], options: Options<N, true>): (...args: A) => [Grads<A, N>, Aux];
export function grad<A extends unknown[], const N extends Argnums = 0>(f: (...args: A) => Promise<Tensor>, options?: Options<N, false>): (...args: A) => Promise<Grads<A, N>>;
export function grad<A extends unknown[], const N extends Argnums = 0>(f: (...args: A) => Tensor, options?: Options<N, false>): (...args: A) => Grads<A, N>;
export function grad(f: (...args: unknown[]) => unknown, options: GradOptions = {}): (...args: unknown[]) => unknown {
  return differentiate("grad", f, options, false);
}

/**
 * `valueAndGrad(f)`: like {@link grad}, but the returned function gives `[value, gradient]` —
 * `f`'s result too, computed once (JAX's `jax.value_and_grad`). With `hasAux`, `[[value, aux], gradient]`.
 *
 * @example
 * ```ts
 * const [loss, g] = weft.valueAndGrad(lossFn)(params);
 * opt.step(params, g);
 * ```
 */
export function valueAndGrad<A extends unknown[], Aux, const N extends Argnums = 0>(f: (...args: A) => Promise<readonly [Tensor, Aux]>, options: Options<N, true>): (...args: A) => Promise<[[Tensor, Aux], Grads<A, N>]>;
export function valueAndGrad<A extends unknown[], Aux, const N extends Argnums = 0>(f: (...args: A) => readonly [Tensor, Aux], options: Options<N, true>): (...args: A) => [[Tensor, Aux], Grads<A, N>];
export function valueAndGrad<A extends unknown[], const N extends Argnums = 0>(f: (...args: A) => Promise<Tensor>, options?: Options<N, false>): (...args: A) => Promise<[Tensor, Grads<A, N>]>;
export function valueAndGrad<A extends unknown[], const N extends Argnums = 0>(f: (...args: A) => Tensor, options?: Options<N, false>): (...args: A) => [Tensor, Grads<A, N>];
export function valueAndGrad(f: (...args: unknown[]) => unknown, options: GradOptions = {}): (...args: unknown[]) => unknown {
  return differentiate("valueAndGrad", f, options, true);
}

/**
 * New references to `value`'s tensors that no tape differentiates through (JAX's
 * `lax.stop_gradient`), in the same structure. A tensor an open tape tracks is copied (`x · 1`,
 * recorded unobserved, so the copy is a constant); any other is cloned. The caller owns the
 * results (dispose them, or let the enclosing `tidy` do it).
 */
export function stopGradient<T extends Tree>(value: T): T {
  const tree = flattenTree("stopGradient", value, "value");
  return tree.rebuild(tree.leaves.map((t) => (trackedByOpenTape(t) ? unobserved(() => t.mul(1)) : t.clone()))) as T;
}

type Op = "grad" | "valueAndGrad";

function normalizeArgnums(op: Op, argnums: Argnums): readonly number[] {
  const list = typeof argnums === "number" ? [argnums] : argnums;
  if (!Array.isArray(list) || list.length === 0) {
    throw new ValueError(op, `pass argnums as an argument position or a non-empty list of them, not ${describeValue(argnums)}`);
  }
  for (const i of list) {
    if (!Number.isInteger(i) || i < 0) throw new ValueError(op, `argnums holds ${String(i)}; pass argument positions as non-negative integers`);
  }
  if (new Set(list).size !== list.length) throw new ValueError(op, `argnums [${list.join(", ")}] repeats a position; list each argument once`);
  return list;
}

function isAsyncFunction(f: unknown): boolean {
  return Object.prototype.toString.call(f) === "[object AsyncFunction]";
}

function isThenable(value: unknown): boolean {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** What the call needs after `f` returned: the loss's identity and what to give the caller. */
interface Outcome {
  readonly lossId: TensorId;
  readonly lossDType: Tensor["dtype"];
  readonly device: Tensor["device"];
  /** `f`'s loss (kept only for `valueAndGrad`). */
  readonly loss: Tensor | undefined;
  readonly aux: unknown;
}

/** The tracked arguments of one call: the trees, their leaves (fresh copies where needed), the tape. */
interface Prepared {
  readonly trees: readonly FlatTree[];
  readonly leaves: readonly Tensor[];
  readonly callArgs: readonly unknown[];
  /** Copies made to give a leaf its own identity; disposed when the call ends. */
  readonly copies: readonly Tensor[];
  readonly tape: Tape;
}

function differentiate(op: Op, f: (...args: unknown[]) => unknown, options: GradOptions, withValue: boolean): (...args: unknown[]) => unknown {
  if (typeof f !== "function") throw new ValueError(op, `pass the function to differentiate, not ${describeValue(f)}`);
  checkOptions(op, options, ["argnums", "hasAux"]);
  const argnums = normalizeArgnums(op, options.argnums ?? 0);
  const single = typeof (options.argnums ?? 0) === "number";
  const hasAux = checkBoolean(op, "options.hasAux", options.hasAux) ?? false;
  const asynchronous = isAsyncFunction(f);

  const finish = (p: Prepared, outcome: Outcome): unknown => {
    closeTape(p.tape);
    let grads: Tensor[];
    try {
      grads = p.tape.backward(outcome.lossId, outcome.lossDType, outcome.device, p.leaves);
    } catch (error) {
      // The caller never sees the value or the auxiliary data: give them back with the rest.
      outcome.loss?.dispose();
      dispose(outcome.aux);
      throw error;
    } finally {
      for (const c of p.copies) c.dispose();
    }
    let offset = 0;
    const perArg = p.trees.map((tree) => {
      const part = grads.slice(offset, offset + tree.leaves.length);
      offset += tree.leaves.length;
      return tree.rebuild(part);
    });
    const g = single ? perArg[0] : perArg;
    if (withValue) return [hasAux ? [outcome.loss, outcome.aux] : outcome.loss, g];
    return hasAux ? [g, outcome.aux] : g;
  };

  const fail = (p: Prepared, error: unknown): never => {
    closeTape(p.tape);
    p.tape.release();
    for (const c of p.copies) c.dispose();
    throw error;
  };

  /** Checks `f`'s result inside its `tidy`/`scope`; returns what that scope must keep. */
  const settle = (result: unknown, outcome: { value?: Outcome }): unknown => {
    let loss: unknown = result;
    let aux: unknown;
    if (hasAux) {
      if (!Array.isArray(result) || result.length !== 2) {
        throw new ValueError(op, `with hasAux the function must return [loss, aux], got ${describe(result)}`);
      }
      [loss, aux] = result as [unknown, unknown];
    }
    if (!(loss instanceof Tensor)) throw new ValueError(op, `the function must return a scalar tensor${hasAux ? " as the first element of [loss, aux]" : ""}, got ${describe(loss)}`);
    if (loss.disposed) throw new DisposedTensorError(op, valueId(loss), loss.shape);
    if (loss.rank !== 0) {
      throw new ShapeError(op, [loss.shape], `the function must return a scalar (shape []), got shape [${loss.shape.join(", ")}]; reduce it, e.g. \`.sum()\` or \`.mean()\``);
    }
    if (loss.dtype !== "f32" && loss.dtype !== "f16") throw new DTypeError(op, `the function must return a float scalar, got ${loss.dtype}; cast it first, e.g. \`.cast("f32")\``);
    outcome.value = { lossId: valueId(loss), lossDType: loss.dtype, device: loss.device, loss: withValue ? loss : undefined, aux };
    return withValue ? [loss, aux] : aux;
  };

  return (...args: unknown[]): unknown => {
    const p = prepare(op, args, argnums);
    const outcome: { value?: Outcome } = {};
    const call = (): unknown => f(...p.callArgs);
    if (asynchronous) {
      return scope(async () => settle(await call(), outcome)).then(
        () => finish(p, ensure(outcome.value)),
        (error: unknown) => fail(p, error),
      );
    }
    try {
      tidy(() => {
        const result = call();
        if (isThenable(result)) {
          throw new ValueError(op, "the function returned a promise but is not declared `async`; declare it `async` so its tensors can be followed across its awaits");
        }
        return settle(result, outcome);
      });
    } catch (error) {
      return fail(p, error);
    }
    return finish(p, ensure(outcome.value));
  };
}

function ensure(outcome: Outcome | undefined): Outcome {
  if (outcome === undefined) throw new InvariantError("grad: the function settled without a checked result");
  return outcome;
}

/** Flattens and checks the selected arguments, gives repeated or already-tracked leaves a fresh identity, opens the tape. */
function prepare(op: Op, args: readonly unknown[], argnums: readonly number[]): Prepared {
  for (const i of argnums) {
    if (i >= args.length) throw new ValueError(op, `argnums selects argument ${i}, but the function was called with ${args.length} argument${args.length === 1 ? "" : "s"}`);
  }
  const trees = argnums.map((i) => flattenTree(op, args[i], `args[${i}]`));
  trees.forEach((tree) =>
    tree.leaves.forEach((t, j) => {
      const path = tree.paths[j] ?? "an argument";
      if (t.disposed) throw new DisposedTensorError(op, valueId(t), t.shape);
      if (t.dtype !== "f32" && t.dtype !== "f16") {
        throw new DTypeError(op, `${path} is ${t.dtype}; gradients are taken with respect to float tensors only (cast it to f32, or pass it through a closure)`);
      }
    }),
  );
  const seen = new Set<TensorId>();
  const copies: Tensor[] = [];
  const fresh = trees.map((tree) =>
    tree.leaves.map((t) => {
      const id = valueId(t);
      if (!seen.has(id) && !trackedByOpenTape(t)) {
        seen.add(id);
        return t;
      }
      const copy = t.mul(1);
      copies.push(copy);
      return copy;
    }),
  );
  const callArgs = copies.length === 0 ? args : args.map((a, i) => {
    const k = argnums.indexOf(i);
    return k < 0 ? a : (trees[k] as FlatTree).rebuild(fresh[k] as Tensor[]);
  });
  const leaves = fresh.flat();
  const tape = new Tape();
  for (const t of leaves) tape.track(t);
  openTape(tape);
  return { trees, leaves, callArgs, copies, tape };
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (typeof value === "object") return `an instance of ${(value as object).constructor?.name ?? "Object"}`;
  return `a ${typeof value}`;
}
