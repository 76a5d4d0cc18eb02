/**
 * The hook through which a library above `@weft/tensor` sees the operations the user API records:
 * `@weft/autodiff` builds its tapes from it.
 *
 * @remarks
 * **Where it fires.** Every op records in two steps (`record.ts`): each input is borrowed with
 * `use` (→ {@link OpObserver.input}), then the op is registered (→ {@link OpObserver.recorded}).
 * An op's inputs are borrowed right before its registration, with no other registration in
 * between, so an observer pairs them with the op's input IRs by identity (`use` returns the IR
 * object the op then carries). Composites (softmax, variance, …) are seen as the primitive ops
 * they record.
 * **Not observed.** Uploads (`tensor()`), `clone()`, `dispose()` and reads: none records an op.
 * **Cost.** One `undefined` check per input and per op while no observer is installed.
 * **Invariant.** At most one observer is installed (the autodiff recorder multiplexes its tapes).
 *
 * @module
 */
import type { OperationIr, TensorId, TensorIr } from "@weft/fusion";
import { type Tensor, fusionTensorOf } from "./tensor.js";

/** What an installed observer is told; see the module doc for the order of calls. */
export interface OpObserver {
  /** `t` was borrowed as `ir` by the op about to be registered. */
  input(t: Tensor, ir: TensorIr): void;
  /** `operation` was registered; `out` wraps its output. */
  recorded(operation: OperationIr, out: Tensor): void;
}

/** The installed observer; read by `record.ts` on every op (a live binding). */
export let observer: OpObserver | undefined;

/**
 * Installs `next` (or removes the observer with `undefined`) and returns the previous one.
 * For `@weft/autodiff`, through `@weft/tensor/internal`; not part of the user API.
 */
export function setOpObserver(next: OpObserver | undefined): OpObserver | undefined {
  const previous = observer;
  observer = next;
  return previous;
}

/**
 * Runs `fn` with no observer installed, so the ops it records are invisible to every tape (the
 * engine of `stopGradient`), and puts the observer back afterwards, also when `fn` throws.
 * For `@weft/autodiff`, through `@weft/tensor/internal`; not part of the user API.
 */
export function unobserved<T>(fn: () => T): T {
  const previous = observer;
  observer = undefined;
  try {
    return fn();
  } finally {
    observer = previous;
  }
}

/**
 * The identity of `t`'s value: the id its fusion tensor has on its home stream, shared by its
 * same-stream clones. A use from another stream borrows a shared view with a different IR id;
 * this one does not change, so an observer keys values by it.
 * For `@weft/autodiff`, through `@weft/tensor/internal`; not part of the user API.
 */
export function valueId(t: Tensor): TensorId {
  return fusionTensorOf(t).id;
}
