import type { DeviceLostError } from "@weft/server";
import { Fifo } from "./fifo.js";
import type { PipelineEntry } from "./pipeline-store.js";

/** One unit of server work (a launch, a write, a read, a flush), as the gate orders it. */
export interface GatedTask {
  /** The pipeline it needs validated first, if any. */
  readonly waitFor: PipelineEntry | undefined;
  /** Performs the work. Never throws: it records failures. */
  readonly run: () => void;
  /** Called instead of `run` when the device is lost first. */
  readonly abort: (error: DeviceLostError) => void;
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
 * **Steady state.** Pipelines are cached, so the queue is empty and every task runs at once.
 * **Bounded** by the work issued while a validation is pending (one pipeline creation's latency).
 */
export class ValidationGate {
  /** Work queued behind a pending pipeline, in issue order. Empty in the steady state. */
  readonly #queue = new Fifo<GatedTask>();
  /** Whether a drain of `#queue` is scheduled or running. */
  #draining = false;
  readonly #lost: () => DeviceLostError | undefined;

  constructor(lost: () => DeviceLostError | undefined) {
    this.#lost = lost;
  }

  /** Whether work is queued (a launch issued now would be deferred behind it). */
  get waiting(): boolean {
    return this.#queue.length > 0;
  }

  /** Runs `task` now when nothing waits and its pipeline is validated, else queues it. */
  submit(task: GatedTask): void {
    const lost = this.#lost();
    if (lost !== undefined) {
      task.abort(lost);
      return;
    }
    if (this.#queue.length === 0 && task.waitFor?.state.kind !== "pending") {
      task.run();
      return;
    }
    this.#queue.push(task);
    if (!this.#draining) {
      this.#draining = true;
      void this.#drain();
    }
  }

  /** Aborts every queued task (device loss). */
  abortAll(error: DeviceLostError): void {
    for (const task of this.#queue.takeAll()) task.abort(error);
  }

  /** Runs queued tasks in order, waiting for each one's pipeline validation first. */
  async #drain(): Promise<void> {
    await Promise.resolve();
    for (;;) {
      const head = this.#queue.peek();
      if (head === undefined || this.#lost() !== undefined) {
        this.#draining = false;
        return;
      }
      if (head.waitFor?.state.kind === "pending") await head.waitFor.ready;
      // Device loss while waiting aborted (and removed) every queued task, this one included.
      if (this.#queue.peek() !== head) continue;
      this.#queue.shift();
      const lost = this.#lost();
      if (lost !== undefined) head.abort(lost);
      else head.run();
    }
  }
}
