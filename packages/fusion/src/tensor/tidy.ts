import { invariant } from "@weft/environment";
import { adopt, closeFrame, openFrame } from "./ownership.js";
import { reachableTensors } from "./reachable.js";

/**
 * Runs synchronous `fn` and disposes every `FusionTensor` created while it ran, except those
 * reachable from its result through arrays, plain objects, `Map`/`Set` values, or objects carrying
 * `[FUSION_TENSOR]`, and those handed on meanwhile (`keep`, `Scope.track`). Kept tensors belong to
 * the enclosing owner: the enclosing `tidy`, else the current async scope, else no one.
 *
 * @remarks
 * **Why.** JavaScript has no destructors; a scope that frees the intermediates of a computation
 * is what lets chains fuse (each intermediate's last use becomes its consuming use) without the
 * user disposing every temporary. Tensors are disposed in creation order, also when `fn` throws.
 * @throws InvariantError when `fn` returns a promise: a `tidy` cannot survive an `await` (use
 *   `scope(async () => …)` for async code).
 */
export function tidy<T>(fn: () => T): T {
  const frame = openFrame();
  let result: T;
  try {
    result = fn();
  } catch (error) {
    closeFrame(frame);
    for (const t of frame.tensors) {
      if (t._owner !== frame) continue;
      t._owner = undefined;
      t.dispose();
    }
    throw error;
  }
  closeFrame(frame);
  // Only an object can reach a tensor: a tidy returning nothing (the common loop body) allocates no sets.
  const keep = reachableTensors(result);
  const thenable =
    typeof result === "object" && result !== null && typeof (result as { then?: unknown }).then === "function";
  for (const t of frame.tensors) {
    if (t._owner !== frame) continue;
    t._owner = undefined;
    if (t.disposed) continue;
    if (keep?.has(t) === true) adopt(t);
    else t.dispose();
  }
  invariant(
    !thenable,
    "tidy(fn) is for synchronous code, but fn returned a promise; use scope(async () => …) for async code",
  );
  return result;
}
