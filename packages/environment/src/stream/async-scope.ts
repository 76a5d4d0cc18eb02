/**
 * The async-context slot behind `Stream.run`: `AsyncLocalStorage` in Node (reached through
 * `process.getBuiltinModule`, so nothing Node-specific is imported in browsers), the TC39
 * `AsyncContext.Variable` where a runtime has it, else a synchronous-only fallback.
 *
 * @internal
 */
interface Slot {
  /** Whether a value set by `run` survives `await` inside `fn`. */
  readonly durable: boolean;
  get(): number | undefined;
  run<T>(value: number, fn: () => T): T;
}

interface AlsLike {
  getStore(): number | undefined;
  run<T>(value: number, fn: () => T): T;
}

function nodeSlot(): Slot | undefined {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const mod = proc?.getBuiltinModule?.("node:async_hooks") as
    | { AsyncLocalStorage: new () => AlsLike }
    | undefined;
  if (!mod) return undefined;
  const als = new mod.AsyncLocalStorage();
  return { durable: true, get: () => als.getStore(), run: (v, fn) => als.run(v, fn) };
}

function asyncContextSlot(): Slot | undefined {
  const AC = (globalThis as { AsyncContext?: { Variable: new () => { get(): unknown; run<T>(v: unknown, fn: () => T): T } } })
    .AsyncContext;
  if (!AC) return undefined;
  const variable = new AC.Variable();
  return { durable: true, get: () => variable.get() as number | undefined, run: (v, fn) => variable.run(v, fn) };
}

function syncSlot(): Slot {
  let current: number | undefined;
  return {
    durable: false,
    get: () => current,
    run<T>(value: number, fn: () => T): T {
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

/** The process's async scope slot, chosen once at load. */
export const asyncScope: Slot = nodeSlot() ?? asyncContextSlot() ?? syncSlot();
