import { invariant } from "@weft/environment";
import type { DeviceLostError } from "@weft/server";
import { Fifo } from "./fifo.js";
import type { PipelineEntry } from "./pipeline-store.js";

/**
 * One unit of server work (a launch, a launch group, a write, a read, a flush), as the gate orders
 * it. A class, not a literal: one is built per launch (docs/performance.md#allocation-sites).
 */
export class GatedTask {
  constructor(
    /** The pipelines it needs validated first (a launch: one; a launch group: each of its kernels'). */
    readonly waitFor: PipelineEntry | readonly PipelineEntry[] | undefined,
    /** Performs the work. Never throws: it records failures. */
    readonly run: () => void,
    /** Called instead of `run` when the device is lost first. */
    readonly abort: (error: DeviceLostError) => void,
  ) {}
}

/**
 * Keeps a server's work in issue order behind pipelines whose validation has not settled.
 *
 * @remarks
 * **Why.** A pipeline is created inside a `validation` error scope and is `pending` until the
 * scope pops. An invalid pipeline must never reach a command buffer (it would poison every launch
 * submitted with it), and work issued after a launch must not overtake it. So while any task
 * waits on a pending pipeline, every later task is queued behind it and runs, in order, once the
 * validation settled; a launch of an invalid pipeline then only taints its writes.
 * **Launch groups.** A group (a fused block) is one task waiting for *every* pipeline it uses.
 * When it cannot run as a whole, its fallback runs in its place inside {@link ValidationGate.capture}:
 * the tasks the fallback submits are captured and go ahead of everything queued after the group,
 * so they run in the group's place in issue order.
 * **Steady state.** Pipelines are cached, so the queue is empty and every task runs at once.
 * **Bounded** by the work issued while a validation is pending (one pipeline creation's latency)
 * plus, for one group at a time, the tasks of its fallback.
 */
export class ValidationGate {
  /** Work queued behind a pending pipeline, in issue order. Empty in the steady state. */
  readonly #queue = new Fifo<GatedTask>();
  /** Whether a drain of `#queue` is scheduled or running. */
  #draining = false;
  /**
   * While a group's fallback runs ({@link ValidationGate.capture}): the tasks it submits, in order.
   * `undefined` otherwise; bounded by one fallback's tasks.
   */
  #captured: GatedTask[] | undefined;
  readonly #lost: () => DeviceLostError | undefined;

  constructor(lost: () => DeviceLostError | undefined) {
    this.#lost = lost;
  }

  /** Whether work is queued (a launch issued now would be deferred behind it). */
  get waiting(): boolean {
    return this.#queue.length > 0;
  }

  /**
   * Runs `task` now when nothing waits and its pipelines are validated, else queues it. While a
   * fallback runs ({@link ValidationGate.capture}) the task is captured instead.
   */
  submit(task: GatedTask): void {
    const lost = this.#lost();
    if (lost !== undefined) {
      task.abort(lost);
      return;
    }
    if (this.#captured !== undefined) {
      this.#captured.push(task);
      return;
    }
    if (this.#queue.length === 0 && pendingPipeline(task) === undefined) {
      task.run();
      return;
    }
    this.#queue.push(task);
    this.#startDrain();
  }

  /**
   * Runs `fn` (a launch group's fallback, from inside the group's task) capturing every task it
   * submits; the captured tasks then go ahead of everything queued, in their order, so they run
   * in the group's place. Captures do not nest (a fallback never runs another group's fallback).
   */
  capture<T>(fn: () => T): T {
    invariant(this.#captured === undefined, "ValidationGate.capture: a fallback is already running");
    const captured: GatedTask[] = [];
    this.#captured = captured;
    try {
      return fn();
    } finally {
      this.#captured = undefined;
      if (captured.length > 0) {
        this.#queue.unshiftAll(captured);
        this.#startDrain();
      }
    }
  }

  #startDrain(): void {
    if (!this.#draining) {
      this.#draining = true;
      void this.#drain();
    }
  }

  /** Aborts every queued task (device loss). */
  abortAll(error: DeviceLostError): void {
    for (const task of this.#queue.takeAll()) task.abort(error);
  }

  /** Runs queued tasks in order, waiting for each one's pipeline validations first. */
  async #drain(): Promise<void> {
    await Promise.resolve();
    for (;;) {
      const head = this.#queue.peek();
      if (head === undefined || this.#lost() !== undefined) {
        this.#draining = false;
        return;
      }
      for (let wait = pendingPipeline(head); wait !== undefined; wait = pendingPipeline(head)) await wait.ready;
      // Device loss while waiting aborted (and removed) every queued task, this one included.
      if (this.#queue.peek() !== head) continue;
      this.#queue.shift();
      const lost = this.#lost();
      if (lost !== undefined) head.abort(lost);
      else head.run();
    }
  }
}

/** The first pipeline `task` waits for that is still validating, if any. */
function pendingPipeline(task: GatedTask): PipelineEntry | undefined {
  const wait = task.waitFor;
  if (wait === undefined) return undefined;
  if (!isList(wait)) return wait.state.kind === "pending" ? wait : undefined;
  return wait.find((e) => e.state.kind === "pending");
}

function isList(wait: PipelineEntry | readonly PipelineEntry[]): wait is readonly PipelineEntry[] {
  return Array.isArray(wait);
}
