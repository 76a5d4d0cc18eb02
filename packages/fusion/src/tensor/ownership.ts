/**
 * Who disposes a `FusionTensor` wrapper: the innermost `tidy` frame or async lifetime scope open
 * where it was created. `tidy` (`tidy.ts`) and `scope`/`keep`/`dispose` (`scope.ts`) are the APIs
 * over this; `FusionTensor`'s constructor calls {@link adopt}.
 *
 * @remarks
 * **Owners.** A wrapper has at most one owner at a time, recorded on the wrapper (`_owner`), so
 * handing it on (a kept result moving outward, `keep`, `Scope.track`) is a field write, and an
 * owner skips every wrapper whose `_owner` is no longer itself when it ends.
 * **Which owner is innermost.** Tidy frames are synchronous; async scopes live in an
 * {@link AsyncVariable} that follows the task across `await`. A scope hides the tidy frames open
 * around it while its callback's synchronous part runs, so any tidy frame open at a creation was
 * opened later than the current async scope — the innermost is the top tidy frame when there is
 * one, else the current async scope. Under the synchronous-only carrier (browsers without
 * `AsyncContext`), the current scope is known only during a scope's synchronous segments:
 * creations after its first `await` are not adopted (see `scope.ts`).
 * **Closed scopes.** A scope is open until its callback settles. A creation whose current scope
 * has settled (a timer the scope started, still running later) goes to the nearest open scope
 * around it, or to no one.
 *
 * @module
 */
import { AsyncVariable, invariant, setTaskRunner } from "@weft/environment";
import { ScopeSettledError } from "../errors/tensor-errors.js";
import type { FusionTensor } from "./fusion-tensor.js";
import { reachableTensors } from "./reachable.js";

/** What owns a wrapper: a `tidy` call in progress or an async scope (see the module doc). */
export type Owner = TidyFrame | LifetimeScope;

/**
 * One `tidy` call in progress: the wrappers created while it was the innermost owner, in creation
 * order. **Bound.** Dropped when its `tidy` returns; an array because most wrappers enter once and
 * leave at the end (O(1) each, no hashing).
 */
export class TidyFrame {
  // `Array.of`, not `[]`: a literal's allocation site is pretenured once a phase kept its arrays
  // alive (docs/performance.md#allocation-sites), and every later frame's array would be born old.
  readonly tensors = Array.of<FusionTensor>();
}

/**
 * The open tidy frames of the running synchronous code, innermost last.
 * **Bound.** One entry per nested `tidy` in progress. A scope swaps in an empty stack for its
 * callback's synchronous part (see the module doc) and puts this one back when that part returns.
 */
let frames: TidyFrame[] = [];

/** The async scope of the current task. */
const currentScope = new AsyncVariable<LifetimeScope>();

/** Async scopes not settled yet: with none, {@link adopt} skips the async-context lookup. */
let openScopes = 0;

/**
 * An async lifetime scope: owns the wrappers created on its task while it is the innermost owner
 * (and those handed to it), and disposes those not returned or kept when its callback settles.
 *
 * @remarks
 * **Bound.** `#tensors` also holds entries that are gone (disposed, or handed on); it is compacted
 * whenever it doubles past its live size at the last compaction (at least 64), so it stays within
 * twice the live wrappers the scope owns plus 64, whatever the number of ops a long scope runs.
 * Emptied at settle.
 * **Invariant.** Once settled, it owns nothing and adopts nothing (creations go outward, `track`
 * throws).
 */
export class LifetimeScope {
  /** The scope current where this one was opened (`undefined` at top level). */
  readonly parent: LifetimeScope | undefined;
  #tensors = Array.of<FusionTensor>(); // not `[]`: see TidyFrame
  #compactAt = 64;
  #open = true;

  constructor(parent: LifetimeScope | undefined) {
    this.parent = parent;
  }

  /** Whether the callback has not settled yet. */
  get open(): boolean {
    return this.#open;
  }

  /** @internal Entries held, gone ones included (what the type doc's bound is about; for tests). */
  get _entries(): number {
    return this.#tensors.length;
  }

  /** This scope if open, else the nearest open scope around it, else `undefined`. */
  nearestOpen(): LifetimeScope | undefined {
    let s: LifetimeScope | undefined = this;
    while (s !== undefined && !s.#open) s = s.parent;
    return s;
  }

  /** Makes this scope the owner of `tensor` (which must not be disposed). */
  own(tensor: FusionTensor): void {
    tensor._owner = this;
    const tensors = this.#tensors;
    tensors.push(tensor);
    if (tensors.length >= this.#compactAt) this.#compact();
  }

  /**
   * `Scope.track`: makes this scope the owner of every live tensor reachable from `value`.
   * @throws ScopeSettledError once the scope settled (nothing is changed).
   */
  track<T>(value: T): T {
    if (!this.#open) throw new ScopeSettledError("scope.track");
    for (const t of reachableTensors(value) ?? []) if (!t.disposed && t._owner !== this) this.own(t);
    return value;
  }

  /**
   * Ends the scope: disposes, in creation order, every wrapper it still owns that `keep` does not
   * contain, and hands those it contains to the nearest open scope around it (or to no one).
   * Every wrapper is handled even when a dispose throws; the first such error is rethrown after.
   */
  settle(keep: ReadonlySet<FusionTensor> | undefined): void {
    if (!this.#open) return;
    this.#open = false;
    openScopes--;
    const tensors = this.#tensors;
    this.#tensors = Array.of();
    const heir = this.parent?.nearestOpen();
    let failure: unknown;
    for (const t of tensors) {
      if (t._owner !== this) continue;
      t._owner = undefined;
      if (t.disposed) continue;
      if (keep?.has(t) === true) {
        heir?.own(t);
        continue;
      }
      try {
        t.dispose();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  }

  /** Drops the entries this scope no longer owns (see the type doc's bound). */
  #compact(): void {
    const live = this.#tensors.filter((t) => t._owner === this && !t.disposed);
    this.#tensors = live;
    this.#compactAt = Math.max(64, 2 * live.length);
  }
}

/**
 * Records a newly created wrapper with the innermost owner (see the module doc). Called by
 * `FusionTensor`'s constructor: the hot path is one length check when no tidy or scope is open.
 * @internal
 */
export function adopt(tensor: FusionTensor): void {
  const depth = frames.length;
  if (depth > 0) {
    const frame = frames[depth - 1] as TidyFrame;
    frame.tensors.push(tensor);
    tensor._owner = frame;
    return;
  }
  if (openScopes === 0) return;
  currentScope.get()?.nearestOpen()?.own(tensor);
}

/**
 * Makes `next` owned by whatever owns `previous` — the open `tidy` frame or scope that would have
 * disposed `previous`, or no one — taking it from its own owner. What lets a `Tensor` whose value
 * is replaced in place (`Tensor.assign`, the optimizers' parameter update) keep its owner.
 * @internal
 */
export function inheritOwner(previous: FusionTensor, next: FusionTensor): void {
  const owner = previous._owner;
  if (next._owner === owner) return;
  if (owner === undefined) next._owner = undefined;
  else if (owner instanceof TidyFrame) {
    owner.tensors.push(next);
    next._owner = owner;
  } else owner.own(next);
}

/** Opens a tidy frame (by `tidy`); it must be closed by {@link closeFrame}, innermost first. */
export function openFrame(): TidyFrame {
  const frame = new TidyFrame();
  frames.push(frame);
  return frame;
}

/** Closes the innermost tidy frame, which must be `frame`. */
export function closeFrame(frame: TidyFrame): void {
  const top = frames.pop();
  invariant(top === frame, "tidy frames closed out of order");
}

/**
 * Runs `fn` as a lifetime scope on the current stream (see `scope.ts` for the user-facing rules),
 * resolving with its result once the scope disposed what it owned. Every `Stream.spawn` task goes
 * through it (installed below as the environment's task runner).
 */
export function runScope<T>(fn: (scope: LifetimeScope) => T | PromiseLike<T>): Promise<T> {
  const scope = new LifetimeScope(currentScope.get());
  openScopes++;
  const outerFrames = frames;
  frames = [];
  let result: T | PromiseLike<T>;
  try {
    result = currentScope.run(scope, () => fn(scope));
  } catch (error) {
    settleAfterFailure(scope);
    return Promise.reject(error as Error);
  } finally {
    frames = outerFrames;
  }
  return Promise.resolve(result).then(
    (value) => {
      scope.settle(reachableTensors(value));
      return value;
    },
    (error: unknown) => {
      settleAfterFailure(scope);
      throw error;
    },
  );
}

/** Settles a scope whose callback failed: its error is the one that counts, not a dispose's. */
function settleAfterFailure(scope: LifetimeScope): void {
  try {
    scope.settle(undefined);
  } catch {
    // The callback's error is reported; a dispose failing after it adds nothing the caller can use.
  }
}

setTaskRunner(runScope);
