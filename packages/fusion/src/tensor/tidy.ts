import { invariant } from "@weft/environment";
import type { FusionTensor } from "./fusion-tensor.js";

/**
 * The open `tidy` scopes, innermost last. Each holds the tensors created while it was innermost,
 * in creation order (an array: O(1) per tensor, no hashing; a wrapper enters a scope once, when
 * it is created, or when a nested scope hands it on).
 * **Bound.** One entry per nested `tidy` call in progress; each array is dropped when its scope ends.
 */
const scopes: FusionTensor[][] = [];

/** @internal Records a newly created wrapper in the innermost `tidy` scope, if any. */
export function trackInTidy(tensor: FusionTensor): void {
  const depth = scopes.length;
  if (depth > 0) scopes[depth - 1]?.push(tensor);
}

const FUSION_TENSOR_KEY = Symbol.for("weft.fusion-tensor");

/** Whether `value` is a `FusionTensor` (structurally, without importing the class at runtime). */
function asFusionTensor(value: unknown): FusionTensor | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const inner = (value as Record<symbol, unknown>)[FUSION_TENSOR_KEY];
  if (inner === value) return value as FusionTensor;
  return inner === undefined ? undefined : asFusionTensor(inner);
}

/** Collects every `FusionTensor` reachable from `value` (arrays, plain objects, Map/Set values). */
function collect(value: unknown, into: Set<FusionTensor>, seen: Set<object>): void {
  if (typeof value !== "object" || value === null || seen.has(value)) return;
  seen.add(value);
  const tensor = asFusionTensor(value);
  if (tensor !== undefined) {
    into.add(tensor);
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) collect(v, into, seen);
  } else if (value instanceof Map) {
    for (const v of value.values()) collect(v, into, seen);
  } else if (value instanceof Set) {
    for (const v of value) collect(v, into, seen);
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto === Object.prototype || proto === null) {
      for (const v of Object.values(value)) collect(v, into, seen);
    }
  }
}

/**
 * Runs synchronous `fn` and disposes every `FusionTensor` created while it ran, except those
 * reachable from its result through arrays, plain objects, `Map`/`Set` values, or objects carrying
 * `[FUSION_TENSOR]`. Kept tensors belong to the enclosing `tidy` scope, if any.
 *
 * @remarks
 * **Why.** JavaScript has no destructors; a scope that frees the intermediates of a computation
 * is what lets chains fuse (each intermediate's last use becomes its consuming use) without the
 * user disposing every temporary. Tensors are disposed in creation order, also when `fn` throws.
 * @throws InvariantError when `fn` returns a promise: a scope cannot survive an `await`.
 */
export function tidy<T>(fn: () => T): T {
  const scope: FusionTensor[] = [];
  scopes.push(scope);
  let result: T;
  try {
    result = fn();
  } catch (error) {
    scopes.pop();
    for (const t of scope) t.dispose();
    throw error;
  }
  scopes.pop();
  // Only an object can reach a tensor: a tidy returning nothing (the common loop body) allocates no sets.
  let keep: Set<FusionTensor> | undefined;
  if (typeof result === "object" && result !== null) collect(result, (keep = new Set()), new Set());
  const thenable =
    typeof result === "object" && result !== null && typeof (result as { then?: unknown }).then === "function";
  for (const t of scope) {
    if (keep?.has(t) === true) trackInTidy(t);
    else t.dispose();
  }
  invariant(!thenable, "tidy(fn) is for synchronous code, but fn returned a promise; dispose tensors explicitly in async code");
  return result;
}
