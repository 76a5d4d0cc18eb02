import { captureStreamPolicyState, restoreStreamPolicyState } from "../stream/stream-id.js";

/**
 * Runs `fn` (sync or async) and then puts the stream policy back as it was, including whether
 * the user had chosen it, on return and on throw or rejection.
 *
 * @remarks
 * **Why.** The policy is process-wide; a test that switches to `per-task` would otherwise change
 * the streams of every test after it in the same worker.
 * **Not restored.** Id allocation: ids are never reused, by design, not even across tests.
 */
export function withIsolatedStreamState<T>(fn: () => T): T {
  const saved = captureStreamPolicyState();
  let result: T;
  try {
    result = fn();
  } catch (error) {
    restoreStreamPolicyState(saved);
    throw error;
  }
  if (result instanceof Promise) {
    return result.finally(() => restoreStreamPolicyState(saved)) as T;
  }
  restoreStreamPolicyState(saved);
  return result;
}
