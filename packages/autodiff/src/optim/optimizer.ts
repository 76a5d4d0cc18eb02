/**
 * What every optimizer shares: walking the parameter and gradient trees, the per-parameter state
 * (slots such as Adam's moments), updating parameters in place, and saving/loading state.
 *
 * @module
 */
import { type DType, type Tensor, ValueError, keep, tensor, tidy } from "@weft/tensor";
import { valueId } from "@weft/tensor/internal";
import { type FlatTree, type Tree, flattenTree, treeMismatch } from "../tree/tree.js";

/** The kinds of optimizer `weft.optim` builds (what a saved state names). */
export type OptimizerKind = "sgd" | "adam" | "adamw";

/** One slot tensor as plain data: JSON-safe (values as numbers), and what `load` uploads. */
export interface SlotState {
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** Row-major values (`number[]`, so `JSON.stringify` round-trips them; any numeric array-like loads). */
  readonly values: ArrayLike<number>;
}

/**
 * An optimizer's state as plain data (`opt.state()`), loadable by an optimizer of the same kind
 * (`optim.adam({ … }).load(state)`).
 */
export interface OptimizerState {
  /** The optimizer that wrote it. */
  readonly kind: OptimizerKind;
  /** Steps taken (Adam's bias correction counts from it). */
  readonly steps: number;
  /** The hyper-parameters it ran with, for the record (`load` keeps the loading optimizer's own). */
  readonly hyperparameters: Readonly<Record<string, number | boolean>>;
  /**
   * Per parameter, in the order of the flattened parameter tree (depth first, keys in
   * `Object.keys` order): its slots by name (`momentum`; `m` and `v`), or `null` before it was
   * first updated.
   */
  readonly slots: readonly (Readonly<Record<string, SlotState>> | null)[];
}

/** What one parameter's update produces: its new value and its new slots. */
export interface Update {
  readonly param: Tensor;
  readonly slots: Readonly<Record<string, Tensor>>;
}

/** A parameter's slots: tensors on the device, or host data from `load` not uploaded yet. */
type Slots = { readonly kind: "device"; readonly tensors: Readonly<Record<string, Tensor>> } | { readonly kind: "host"; readonly data: Readonly<Record<string, SlotState>> };

/** Checks that a hyper-parameter is a finite number in `[min, max]` (`max` exclusive when asked). */
export function checkNumber(op: string, name: string, value: unknown, min: number, max = Infinity, maxExclusive = false): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max || (maxExclusive && value === max)) {
    const range = `${min} ≤ ${name} ${maxExclusive ? "<" : "≤"} ${max}`;
    throw new ValueError(op, `${name} must be a finite number with ${range}; pass one in that range, not ${String(value)}`);
  }
  return value;
}

/**
 * The shared machinery of `weft.optim`'s optimizers.
 *
 * @remarks
 * **Step.** `step(params, grads)` pairs the two trees leaf by leaf (same structure, each gradient
 * of its parameter's shape, dtype and device), then for each parameter records the update
 * ({@link Optimizer.update}: ordinary elementwise Tensor ops, which the fusers turn into one
 * kernel per parameter) and makes the parameter hold the result (`Tensor.assign`): the objects
 * the caller holds see the new values, and the old values' last uses are consuming ones, so the
 * engine may write the new values into the old buffers.
 * **Runtime scalars.** Everything that changes from step to step (the learning rate, Adam's bias
 * corrections) enters as a scalar operand of an op, a value the engine's plan cache keys on by
 * position only; nothing per-step is baked into anything cached.
 * **State.** Slots are created at a parameter's first update and owned by the optimizer (no
 * `tidy` or scope disposes them): `dispose()` gives them back. `state()` reads them as plain data;
 * `load(state)` keeps host data until each parameter's next update uploads it.
 * **Invariants.** The parameter tree's structure is fixed by the first step (later steps must
 * match it, or throw before changing anything); slots always have their parameter's shape.
 * **Bound.** One slot record per parameter of the tree.
 */
export abstract class Optimizer {
  /** What kind of optimizer this is (written into its state). */
  abstract readonly kind: OptimizerKind;
  #slots: (Slots | undefined)[] = [];
  /** The parameter tree's leaf paths, fixed by the first step. */
  #paths: readonly string[] | undefined;
  #steps = 0;

  /** Steps taken so far (loaded states count theirs). */
  get steps(): number {
    return this.#steps;
  }

  /** The hyper-parameters as plain data (for `state()`). */
  protected abstract hyperparameters(): Record<string, number | boolean>;

  /** Checks the (mutable) hyper-parameters before a step; throws `ValueError` naming the bad one. */
  protected abstract checkHyperparameters(): void;

  /**
   * The update of one parameter `p` with gradient `g`, at step `t` (1 for the first), given its
   * slots (empty before its first update): its new value and slots. Records Tensor ops only;
   * runs inside a `tidy`.
   */
  protected abstract update(p: Tensor, g: Tensor, slots: Readonly<Record<string, Tensor>>, t: number): Update;

  /**
   * Updates every parameter of `params` in place from its gradient in `grads` (see the type doc).
   * @throws ValueError when the trees differ in structure (from each other, or from the first
   *   step's) or a gradient does not fit its parameter, or a hyper-parameter is out of range —
   *   before anything is changed.
   */
  step(params: Tree, grads: Tree): void {
    const op = `${this.kind}.step`;
    this.checkHyperparameters();
    const ps = flattenTree(op, params, "params");
    const gs = flattenTree(op, grads, "grads");
    this.#check(op, ps, gs);
    const t = this.#steps + 1;
    ps.leaves.forEach((p, i) => {
      const g = gs.leaves[i] as Tensor;
      const before = this.#deviceSlots(op, i, p, ps.paths[i] ?? "params");
      const next = tidy(() => this.update(p, g, before, t));
      keep(next.slots);
      for (const s of Object.values(before)) if (!Object.values(next.slots).includes(s)) s.dispose();
      this.#slots[i] = { kind: "device", tensors: next.slots };
      p.assign(next.param);
      next.param.dispose();
    });
    this.#steps = t;
  }

  /** The optimizer's state as plain data (reads every slot from the device). */
  async state(): Promise<OptimizerState> {
    const slots = await Promise.all(
      this.#slots.map(async (s): Promise<Record<string, SlotState> | null> => {
        if (s === undefined) return null;
        if (s.kind === "host") return { ...s.data };
        const out: Record<string, SlotState> = {};
        for (const [name, t] of Object.entries(s.tensors)) out[name] = { shape: [...t.shape], dtype: t.dtype, values: Array.from(await t.data()) };
        return out;
      }),
    );
    return { kind: this.kind, steps: this.#steps, hyperparameters: this.hyperparameters(), slots };
  }

  /**
   * Replaces this optimizer's state with `state` (from `state()` of an optimizer of the same
   * kind, possibly through JSON); its own hyper-parameters stay. Slots are uploaded at each
   * parameter's next update, on that parameter's device. Returns `this`.
   * @throws ValueError for a state of another kind or a malformed one (nothing is changed).
   */
  load(state: OptimizerState): this {
    const op = `${this.kind}.load`;
    if (typeof state !== "object" || state === null) throw new ValueError(op, `expects a state object from state(), got ${String(state)}`);
    if (state.kind !== this.kind) throw new ValueError(op, `the state was written by ${String(state.kind)}, not ${this.kind}; load it into optim.${String(state.kind)}(…)`);
    if (!Number.isInteger(state.steps) || state.steps < 0) throw new ValueError(op, `steps must be a non-negative integer, got ${String(state.steps)}`);
    if (!Array.isArray(state.slots)) throw new ValueError(op, "slots must be an array (one entry per parameter)");
    const loaded: (Slots | undefined)[] = state.slots.map((s, i) => {
      if (s === null || s === undefined) return undefined;
      for (const [name, slot] of Object.entries(s as Record<string, Partial<SlotState> | undefined>)) {
        const shape = slot?.shape;
        const size = Array.isArray(shape) ? shape.reduce((n: number, d: number) => n * d, 1) : -1;
        if (size < 0 || slot?.values?.length !== size) {
          throw new ValueError(op, `slot ${name} of parameter ${i} is malformed: it needs a shape and ${size < 0 ? "its" : size} values`);
        }
      }
      return { kind: "host", data: s };
    });
    this.dispose();
    this.#slots = loaded;
    this.#steps = state.steps;
    return this;
  }

  /** Gives back every slot tensor (the optimizer starts afresh at its next step, its step count kept). */
  dispose(): void {
    for (const s of this.#slots) if (s?.kind === "device") for (const t of Object.values(s.tensors)) t.dispose();
    this.#slots = [];
    this.#paths = undefined;
  }

  /** Validates the pair of trees against each other and the first step's structure. */
  #check(op: string, ps: FlatTree, gs: FlatTree): void {
    const mismatch = treeMismatch(ps, gs);
    if (mismatch !== undefined) throw new ValueError(op, `params and grads differ in structure at ${mismatch}; pass the gradient of params itself (grad(f)(params))`);
    if (this.#paths !== undefined && (this.#paths.length !== ps.paths.length || this.#paths.some((p, i) => p !== ps.paths[i]))) {
      throw new ValueError(op, `params changed structure since the first step (${this.#paths.length} → ${ps.paths.length} tensors); use one optimizer per parameter tree`);
    }
    if (this.#paths === undefined && this.#slots.length > 0 && this.#slots.length !== ps.leaves.length) {
      throw new ValueError(op, `the loaded state has slots for ${this.#slots.length} parameters, but params holds ${ps.leaves.length}`);
    }
    const ids = new Set<number>();
    ps.leaves.forEach((p, i) => {
      const g = gs.leaves[i] as Tensor;
      const path = ps.paths[i] ?? "params";
      if (p.disposed || g.disposed) throw new ValueError(op, `${p.disposed ? path : (gs.paths[i] ?? "grads")} was disposed`);
      if (p.dtype !== "f32" && p.dtype !== "f16") throw new ValueError(op, `${path} is ${p.dtype}; only float parameters can be optimized`);
      if (g.dtype !== p.dtype || g.device !== p.device || g.shape.length !== p.shape.length || g.shape.some((d, k) => d !== p.shape[k])) {
        throw new ValueError(op, `the gradient of ${path} is [${g.shape.join(", ")}] ${g.dtype} on ${g.device.label}, but the parameter is [${p.shape.join(", ")}] ${p.dtype} on ${p.device.label}`);
      }
      const id = valueId(p);
      if (ids.has(id)) throw new ValueError(op, `${path} appears twice in params (the same tensor or a clone); list each parameter once`);
      ids.add(id);
      const slots = this.#slots[i];
      if (slots?.kind === "host") {
        for (const [name, s] of Object.entries(slots.data)) {
          if (s.shape.length !== p.shape.length || s.shape.some((d, k) => d !== p.shape[k])) {
            throw new ValueError(op, `the loaded slot ${name} of ${path} is [${s.shape.join(", ")}], but the parameter is [${p.shape.join(", ")}]`);
          }
        }
      }
    });
    this.#paths ??= ps.paths;
  }

  /** The slots of parameter `i` as device tensors (uploading loaded host data on first use). */
  #deviceSlots(_op: string, i: number, p: Tensor, _path: string): Readonly<Record<string, Tensor>> {
    const s = this.#slots[i];
    if (s === undefined) return {};
    if (s.kind === "device") return s.tensors;
    const tensors: Record<string, Tensor> = {};
    for (const [name, data] of Object.entries(s.data)) {
      tensors[name] = keep(tensor(Float32Array.from(data.values), { shape: [...data.shape], dtype: p.dtype, device: p.device }));
    }
    return tensors;
  }
}
