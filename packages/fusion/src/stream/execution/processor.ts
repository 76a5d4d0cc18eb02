import { invariant } from "@weft/environment";
import type { StreamId } from "@weft/environment";
import type { OperationFuser, Optimization } from "../../runtime/fusion-runtime.js";
import type { ExecutionEnv, OperationQueue } from "../queue/operation-queue.js";
import type { ExecutionPlanStore, ExecutionTrigger } from "../store/execution-plan-store.js";
import type { ExplorationBudget } from "./explorer.js";
import { Explorer } from "./explorer.js";
import type { ExecutionMode } from "./policy.js";
import { Policy } from "./policy.js";

/**
 * Drives one stream's segment: asks the {@link Policy} what to do, runs the {@link Explorer} when
 * no cached plan fits, stores what it found in the {@link ExecutionPlanStore}, and executes plans.
 * Burn's `Processor`.
 *
 * @remarks
 * **Loop.** Lazy: the newest operation updates the policy; then, while operations remain, explore
 * (store the plan with trigger `on-operations` — the operations that made the fusers stop — or
 * `always` when none followed), defer (stop), or execute a found plan. Sync: never defers or
 * continues; explorations cover the whole segment and get trigger `on-sync`, and a plan executed at
 * a sync gains `on-sync` (so the next identical sync finds it).
 * After every execution the policy and explorer are reset and re-fed the remaining operations.
 * **Bound.** State is the policy's and explorer's (the current segment only).
 */
export class Processor<H> {
  readonly #policy = new Policy<Optimization<H>>();
  readonly #explorer: Explorer<Optimization<H>>;

  constructor(fusers: OperationFuser<Optimization<H>>[], budget: ExplorationBudget) {
    this.#explorer = new Explorer(fusers, budget);
  }

  /** Processes `queue` in `mode`; returns the number of operations executed. */
  process(
    queue: OperationQueue,
    store: ExecutionPlanStore<Optimization<H>>,
    mode: ExecutionMode,
    stream: StreamId,
    env: ExecutionEnv<H>,
  ): number {
    let executed = 0;
    if (mode === "lazy") {
      const last = queue.keys[queue.keys.length - 1];
      if (last !== undefined) this.#policy.update(store, last.key, store.keyIdOf(last));
    }
    while (queue.length > 0) {
      const action = this.#policy.action(queue.length, mode, store);
      if (action.kind === "defer") {
        invariant(mode === "lazy", "the policy deferred during a sync");
        break;
      }
      if (action.kind === "execute") {
        if (mode === "sync") store.addTrigger(action.plan, { kind: "on-sync" });
        store.use(action.plan);
        executed += queue.execute(store.get(action.plan), stream, env);
        this.#reset(queue, store);
        continue;
      }
      const relative = queue.relativeOperations();
      const exploration = this.#explorer.explore(relative, mode);
      if (exploration.kind === "continue") {
        invariant(mode === "lazy", "the explorer asked to continue during a sync");
        break;
      }
      if (exploration.kind === "unfused") {
        const n = queue.length;
        queue.executeUnfused(n, stream, env);
        executed += n;
        this.#reset(queue, store);
        continue;
      }
      const operations = relative.slice(0, exploration.len);
      const trigger: ExecutionTrigger =
        mode === "sync"
          ? { kind: "on-sync" }
          : exploration.stoppedAt > exploration.len
            ? { kind: "on-operations", keys: queue.keys.slice(exploration.len, exploration.stoppedAt).map((k) => k.key) }
            : { kind: "always" };
      let id = store.findExact(operations);
      if (id === undefined) id = store.add(operations, exploration.order, exploration.strategy, trigger);
      else store.addTrigger(id, trigger);
      executed += queue.execute(store.get(id), stream, env);
      this.#reset(queue, store);
    }
    return executed;
  }

  #reset(queue: OperationQueue, store: ExecutionPlanStore<Optimization<H>>): void {
    this.#explorer.reset();
    this.#policy.reset();
    for (const key of queue.keys) this.#policy.update(store, key.key, store.keyIdOf(key));
  }
}
