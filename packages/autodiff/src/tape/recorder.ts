/**
 * How ops reach tapes: one observer installed in `@weft/tensor` while any tape is open, handing
 * every recorded op to every open tape.
 *
 * @remarks
 * **Why observation, not a backend decorator.** Burn's `burn-autodiff` wraps the backend, so a
 * tensor's type says whether it is tracked. Here a `Tensor` is one class for every device, and a
 * gradient is asked for per call (`grad(f)(x)`), so the natural shape is JAX's: trace `f` while it
 * runs. The user API tells the observer each op it records (`use`, then `register`, see
 * `@weft/tensor`'s `observer.ts`); nothing else in the engine changes, and the backward pass is
 * ordinary Tensor ops on the same streams, through the same fusers.
 * **Concurrency: every open tape sees every op.** Tapes are not bound to an async context: an op
 * is offered to every open tape, and a tape records it only when one of its inputs is a value the
 * tape tracks. That is exact in every runtime (browsers have no async context to follow a task),
 * and it keeps concurrent tapes separate in what matters: a tape's reverse pass walks back from
 * its own result only, so ops another task recorded onto it (because they consumed a value it
 * tracks — e.g. two concurrent `grad`s over shared parameters) never reach its gradients; they
 * only keep their saved values alive until that tape's `grad` returns.
 * **Cost.** Nothing while no tape is open (the observer is removed). While one is, two array
 * pushes per input and, per op, one id lookup per input in each open tape.
 *
 * @module
 */
import type { OperationIr, TensorIr } from "@weft/fusion";
import type { Tensor } from "@weft/tensor";
import { type OpObserver, setOpObserver } from "@weft/tensor/internal";
import { type Tape, inputsOf } from "./tape.js";

/**
 * The tapes recording now, oldest first.
 * **Bound.** One per `grad` call in progress (nested or concurrent); each leaves at its end.
 */
const open: Tape[] = [];

/** The inputs borrowed for the op being built (cleared when it is registered). */
let borrowedIrs: TensorIr[] = [];
let borrowed: Tensor[] = [];

const recorder: OpObserver = {
  input(t: Tensor, ir: TensorIr): void {
    borrowedIrs.push(ir);
    borrowed.push(t);
  },
  recorded(operation: OperationIr, out: Tensor): void {
    const irs = borrowedIrs;
    const ts = borrowed;
    borrowedIrs = [];
    borrowed = [];
    if (open.length === 0) return;
    const inputs = inputsOf(operation, irs, ts);
    for (const tape of open) tape.record(operation, inputs, out);
  },
};

/** Starts offering ops to `tape` (installs the observer with the first open tape). */
export function openTape(tape: Tape): void {
  if (open.length === 0) {
    borrowedIrs = [];
    borrowed = [];
    setOpObserver(recorder);
  }
  open.push(tape);
}

/** Stops offering ops to `tape` (removes the observer with the last). Idempotent. */
export function closeTape(tape: Tape): void {
  const i = open.indexOf(tape);
  if (i < 0) return;
  open.splice(i, 1);
  if (open.length === 0) {
    setOpObserver(undefined);
    borrowedIrs = [];
    borrowed = [];
  }
}

/** Whether any open tape tracks `t`'s value (so a new tape must not take it as its own leaf). */
export function trackedByOpenTape(t: Tensor): boolean {
  return open.some((tape) => tape.tracks(t));
}

/** How many tapes are open (for tests: zero once every `grad` returned). */
export function openTapes(): number {
  return open.length;
}
