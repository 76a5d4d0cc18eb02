/**
 * Finding the tensors a value holds: what `tidy` and `scope` keep (their result), and what `keep`
 * and `dispose` act on.
 *
 * @module
 */
import type { FusionTensor } from "./fusion-tensor.js";

/** `FUSION_TENSOR`'s key, repeated here so this walk does not import the class at runtime. */
const FUSION_TENSOR_KEY = Symbol.for("weft.fusion-tensor");

/** The `FusionTensor` `value` is or wraps (through `[FUSION_TENSOR]`, e.g. a `Tensor`), if any. */
export function asFusionTensor(value: unknown): FusionTensor | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const inner = (value as Record<symbol, unknown>)[FUSION_TENSOR_KEY];
  if (inner === value) return value as FusionTensor;
  return inner === undefined ? undefined : asFusionTensor(inner);
}

/**
 * Every `FusionTensor` reachable from `value`: the value itself when it is (or wraps) one, and
 * through arrays, plain objects (prototype `Object.prototype` or `null`), `Map` values and `Set`
 * members, to any depth, each object visited once (cycles are fine). Class instances other than
 * tensors are not entered: what they hold is theirs. `undefined` when `value` cannot hold one
 * (a primitive), so the common "returns nothing" case allocates no set.
 */
export function reachableTensors(value: unknown): Set<FusionTensor> | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const into = new Set<FusionTensor>();
  collect(value, into, new Set());
  return into;
}

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
