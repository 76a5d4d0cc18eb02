/**
 * A value carried along an async task — across `await`, timers and promise callbacks — without
 * being passed as an argument: the machinery behind `Stream.run`/`Stream.spawn` (the current
 * stream) and `@weft/fusion`'s lifetime scopes (the scope that owns new tensors).
 *
 * @module
 */

/**
 * How an {@link AsyncVariable} carries its value, chosen once at load from what the runtime has.
 *
 * - `async-local-storage`: Node's `AsyncLocalStorage` (reached through
 *   `process.getBuiltinModule`, so nothing Node-specific is imported in browsers). Durable.
 * - `async-context`: the TC39 `AsyncContext.Variable`, where a runtime has it. Durable.
 * - `synchronous`: neither exists (today's browsers). The value holds while `run`'s callback runs
 *   synchronously — up to its first `await` — and is gone in every continuation after it. Code
 *   that must see it after an `await` has to re-enter it or be handed what it needs explicitly.
 */
export type AsyncCarrier = "async-local-storage" | "async-context" | "synchronous";

/** The operations every carrier provides. */
interface Slot<T> {
  get(): T | undefined;
  run<R>(value: T, fn: () => R): R;
}

interface AlsLike<T> {
  getStore(): T | undefined;
  run<R>(value: T, fn: () => R): R;
}

type AlsConstructor = new <T>() => AlsLike<T>;
type AsyncContextVariable = new <T>() => { get(): T | undefined; run<R>(value: T, fn: () => R): R };

function nodeAls(): AlsConstructor | undefined {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const mod = proc?.getBuiltinModule?.("node:async_hooks") as { AsyncLocalStorage: AlsConstructor } | undefined;
  return mod?.AsyncLocalStorage;
}

function asyncContextVariable(): AsyncContextVariable | undefined {
  return (globalThis as { AsyncContext?: { Variable: AsyncContextVariable } }).AsyncContext?.Variable;
}

/** The carrier of this runtime, decided once at load. */
const Als = nodeAls();
const Variable = Als === undefined ? asyncContextVariable() : undefined;
const CARRIER: AsyncCarrier = Als !== undefined ? "async-local-storage" : Variable !== undefined ? "async-context" : "synchronous";

function synchronousSlot<T>(): Slot<T> {
  let current: T | undefined;
  return {
    get: () => current,
    run<R>(value: T, fn: () => R): R {
      const previous = current;
      current = value;
      try {
        return fn();
      } finally {
        current = previous;
      }
    },
  };
}

/**
 * One value carried along async tasks. `run(value, fn)` makes `value` current for `fn` and for
 * everything `fn` starts (its continuations, timers, promise callbacks); scopes nest, the
 * innermost wins, and the outer value is back when `run` returns.
 *
 * @remarks
 * **Carrier.** See {@link AsyncCarrier}: durable across `await` in Node and where `AsyncContext`
 * exists; synchronous-only elsewhere ({@link AsyncVariable.durable} says which).
 * **Cost.** `get()` is one `AsyncLocalStorage.getStore()` in Node (tens of nanoseconds); callers on
 * hot paths keep their own count of open scopes and skip `get()` when none is open.
 */
export class AsyncVariable<T> {
  /** How this runtime carries the value. */
  static readonly carrier: AsyncCarrier = CARRIER;
  readonly #slot: Slot<T>;

  constructor() {
    if (Als !== undefined) {
      const als = new Als<T>();
      this.#slot = { get: () => als.getStore(), run: (value, fn) => als.run(value, fn) };
    } else {
      this.#slot = Variable !== undefined ? new Variable<T>() : synchronousSlot<T>();
    }
  }

  /** Whether a value set by `run` survives `await` inside `fn` (Node, or `AsyncContext`). */
  get durable(): boolean {
    return CARRIER !== "synchronous";
  }

  /** The innermost value, or `undefined` outside every `run`. */
  get(): T | undefined {
    return this.#slot.get();
  }

  /** Runs `fn` with `value` current (see the type doc); returns what `fn` returns. */
  run<R>(value: T, fn: () => R): R {
    return this.#slot.run(value, fn);
  }
}
