/**
 * Lifetimes in async code: `scope(async () => …)`, `keep(value)`, `dispose(value)`. The rules
 * (which owner adopts a new tensor, what a scope hands on) are in `ownership.ts`; `Stream.spawn`
 * tasks are scopes too.
 *
 * @module
 */
import { Stream, StreamId, getStreamPolicy } from "@weft/environment";
import { type LifetimeScope, runScope } from "./ownership.js";
import { reachableTensors } from "./reachable.js";

/**
 * The scope a `scope` callback receives. Only needed for {@link Scope.track}: in runtimes without
 * async context (see `scope`), tensors created after the callback's first `await` are not tracked
 * by themselves.
 */
export interface Scope {
  /**
   * Makes this scope the owner of every live tensor reachable from `value` (arrays, plain objects,
   * `Map`/`Set` values, tensors), taking it from whatever owned it; returns `value`, so
   * `const y = s.track(x.mul(2))` reads naturally.
   * @throws ScopeSettledError once the scope has settled (nothing changes).
   */
  track<T>(value: T): T;
}

/**
 * Runs `fn` — synchronous or async — as a lifetime scope: every tensor created while it runs and
 * not returned (reachable from its result, as in `tidy`) or kept (`keep`) is disposed when it
 * settles, also when it throws or rejects. Resolves with `fn`'s result after that cleanup.
 *
 * @remarks
 * **Nesting.** What an inner scope returns belongs to the scope it was opened in (the nearest one
 * still open), so it is disposed there unless returned again; `tidy` inside a scope works as
 * usual, its kept results going to the scope.
 * **Concurrency.** The current scope follows each async task (`AsyncLocalStorage` in Node,
 * `AsyncContext` where present): concurrent scopes never see each other's tensors.
 * **Streams.** Under the `per-task` policy the scope runs on a fresh stream (a scope is then a
 * task); under `single` it records on the caller's stream.
 * **Without async context** (browsers today, `Stream.asyncScopesSupported === false`): a scope
 * adopts what is created in its synchronous segments — from the call up to the first `await` —
 * and what is handed to it with `scope.track(…)`. Tensors created after an `await` and not
 * tracked are not disposed by it (they are leaks unless disposed otherwise). It never disposes
 * another task's tensors: segments of different tasks never interleave.
 * **Not tracked anywhere.** A tensor created by a callback that outlives the scope (a timer started
 * inside it) goes to the nearest scope still open around it, or to no one.
 */
export function scope<T>(fn: (scope: Scope) => T | PromiseLike<T>): Promise<T> {
  const body = fn as (scope: LifetimeScope) => T | PromiseLike<T>;
  if (getStreamPolicy() === "per-task") return Stream.run(StreamId.allocate(), () => runScope(body));
  return runScope(body);
}

/**
 * Takes every live tensor reachable from `value` out of automatic disposal: no `tidy`, scope or
 * task will dispose it; the caller disposes it. Returns `value`. Tensors created later are not
 * affected.
 */
export function keep<T>(value: T): T {
  for (const t of reachableTensors(value) ?? []) t._owner = undefined;
  return value;
}

/**
 * Disposes every tensor reachable from `value` — a tensor, or arrays, plain objects, `Map` values
 * and `Set` members holding tensors, to any depth. Already disposed ones are skipped.
 */
export function dispose(value: unknown): void {
  for (const t of reachableTensors(value) ?? []) {
    t._owner = undefined;
    t.dispose();
  }
}
