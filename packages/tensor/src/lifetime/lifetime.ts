/**
 * Lifetimes and device-wide waits from the user's side: `tidy` (synchronous code), `scope`
 * (async code), `keep`, `dispose`, `memory`, `sync`, `syncAll`. The rules live in the fusion
 * engine (`@weft/fusion`'s `tensor/ownership.ts`); these wrappers keep users on one import and
 * state them in `Tensor` terms.
 *
 * @module
 */
import { type DeviceStats, type FusionMemory, type Scope, dispose as fusionDispose, keep as fusionKeep, scope as fusionScope, tidy as fusionTidy } from "@weft/fusion";
import { checkFunction } from "@weft/environment";
import { device as currentDevice } from "../device/device.js";

/**
 * Runs synchronous `fn` and disposes every tensor created inside it except those reachable from
 * its result (through arrays, plain objects, `Map`/`Set` values, or `Tensor`s themselves) and
 * those passed to {@link keep}. The result belongs to the enclosing `tidy` or {@link scope}.
 *
 * @remarks
 * **Why a wrapper.** `Tensor` carries the fusion engine's internal `FUSION_TENSOR` key, so the
 * engine's `tidy` follows it to the fusion tensor it owns; this re-export keeps users on one
 * import. `fn` must be synchronous (it throws when `fn` returns a promise): use {@link scope} for
 * async code.
 */
export function tidy<T>(fn: () => T): T {
  checkFunction("tidy", "fn", fn);
  return fusionTidy(fn);
}

/**
 * Runs `fn` — usually async — and disposes every tensor created inside it that it neither returns
 * (reachable from its result, as in {@link tidy}) nor passes to {@link keep}, when it settles: on
 * return, throw or rejection. Resolves with `fn`'s result after that cleanup.
 *
 * @remarks
 * - **Nesting.** What an inner scope returns belongs to the enclosing scope (disposed there unless
 *   returned again); `tidy` inside a scope hands its result to the scope.
 * - **Concurrency.** Each async task has its own current scope (`AsyncLocalStorage` in Node,
 *   `AsyncContext` where present): concurrent scopes never see each other's tensors.
 *   `Stream.spawn` tasks are scopes too.
 * - **Streams.** Under `setStreamPolicy("per-task")` a scope runs on a fresh stream; under the
 *   default `single`, on the caller's.
 * - **Without async context** (`Stream.asyncScopesSupported === false`, browsers today): only
 *   tensors created before `fn`'s first `await`, and those passed to `scope.track(…)`, are
 *   disposed by it; untracked tensors created after an `await` must be disposed by hand.
 *
 * @example
 * ```ts
 * const loss = await weft.scope(async () => {
 *   const h = x.matmul(w).relu();          // disposed when the scope settles
 *   return h.sub(y).square().mean();       // returned: the caller owns it
 * });
 * ```
 */
export function scope<T>(fn: (scope: Scope) => T | PromiseLike<T>): Promise<T> {
  try {
    checkFunction("scope", "fn", fn);
  } catch (error) {
    return Promise.reject(error);
  }
  return fusionScope(fn);
}

/**
 * Takes `value`'s tensors (a tensor, or arrays/objects/Maps/Sets of them) out of automatic
 * disposal: no `tidy`, `scope` or `Stream.spawn` task disposes them; the caller does. Returns
 * `value`. For caches and state created inside a scope that must outlive it.
 */
export function keep<T>(value: T): T {
  return fusionKeep(value);
}

/**
 * Disposes every tensor in `value`: a tensor, or arrays, plain objects, `Map` values and `Set`
 * members holding tensors, to any depth. Disposed ones are skipped; other values are ignored.
 */
export function dispose(value: unknown): void {
  fusionDispose(value);
}

/** The current device's memory report: `{ liveTensors, liveHandles, streams, bytesInUse, bytesReserved }`. */
export function memory(): FusionMemory {
  return currentDevice().memory();
}

/**
 * What the current device holds and did, as plain numbers: `pipelines` (compiled pipelines held
 * now), `kernelsGenerated`, `launches`, `submits`, `plans`/`planHits`/`explorations`, borrowed
 * views, and every bounded cache's size, capacity and evictions (`caches`). `memory()` stays the
 * report of tensors and bytes.
 */
export function stats(): DeviceStats {
  return currentDevice().stats();
}

/**
 * Gives every free page (and retained buffer) of the current device back to the system: after
 * disposing large tensors, to bring `memory().bytesReserved` down at once instead of when the
 * dealloc policy gets to it. Live tensors are untouched.
 */
export function releaseUnused(): void {
  currentDevice().releaseUnused();
}

/** Drains the current stream of the current device and waits for its work. */
export function sync(): Promise<void> {
  return currentDevice().sync();
}

/** Drains every stream of the current device and waits for all of its work. */
export function syncAll(): Promise<void> {
  return currentDevice().syncAll();
}
