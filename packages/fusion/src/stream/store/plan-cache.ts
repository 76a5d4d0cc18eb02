import { LIBRARY_VERSION, type TuneStore, defaultTuneStore } from "@weft/runtime";
import type { OperationFuser } from "../../runtime/fusion-runtime.js";
import type { ExecutionPlanStore, PlanImport } from "./execution-plan-store.js";
import type { ExecutionPlanState } from "./plan-state.js";

/** The format of {@link PlanCacheState}; a file of another format is ignored. */
export const PLAN_CACHE_FORMAT = 1;

/**
 * A device's execution plans as persisted: plain JSON under a {@link planCacheKey}. Burn's
 * `OptimizationState` for a whole plan store.
 */
export interface PlanCacheState {
  readonly format: typeof PLAN_CACHE_FORMAT;
  /** The version key the plans were explored under (library version, backend, adapter). */
  readonly key: string;
  /** The plans, least recently used first. */
  readonly plans: readonly ExecutionPlanState[];
}

/** Where and for what a device persists its plans (`FusionDeviceOptions.planCache`). */
export interface PlanCacheOptions {
  /**
   * The adapter the device runs on (`"NVIDIA H200 (vulkan)"`, `"cpu"`): part of the key, since
   * fusers decide with the adapter's limits (bindings per kernel).
   */
  readonly adapter: string;
  /** Where plans persist; default `defaultTuneStore(directory, "plans")` (`plans.json` in Node). */
  readonly store?: TuneStore<PlanCacheState>;
  /** The cache folder of the default Node store; default `$WEFT_CACHE_DIR` or the OS temp folder. */
  readonly directory?: string;
  /** The library version in the key; default `LIBRARY_VERSION` (tests pass another one). */
  readonly version?: string;
}

/**
 * The key persisted plans are valid under: format, library version, backend and adapter. Plans
 * explored by another release or on another adapter are never loaded (the fusers, their limits
 * or the relative form may differ).
 */
export function planCacheKey(backend: string, adapter: string, version: string = LIBRARY_VERSION): string {
  return JSON.stringify(["weft-plans", PLAN_CACHE_FORMAT, version, backend, adapter]);
}

/** The delay before new plans are written (several explorations in a burst make one write). */
const SAVE_DELAY_MS = 200;

/**
 * Persists one device's {@link ExecutionPlanStore} like `TuneCache` persists tuning results:
 * loaded once at start, written back after new plans appear.
 *
 * @remarks
 * **Loading.** {@link load} reads the store once (later calls share it) and imports the record
 * under this cache's key, checking every plan (`planFromState`); plans explored meanwhile stay.
 * A store that cannot be read leaves the plans as they are: plans are only an optimisation.
 * **Saving.** A new plan schedules one write `SAVE_DELAY_MS` later (a timer that never keeps
 * Node alive); {@link flush} writes now. A write replaces the record under this key with the
 * store's plans, so the persisted set is bounded like the store (`maxPlans`); records of other
 * keys (other versions, adapters) are left as they are. A write nobody awaits (the timer's,
 * {@link flushInBackground}) that fails is dropped: plans are only an optimisation, and an
 * unhandled rejection would end a Node process. {@link flush} rejects to its caller.
 * **Bound.** Holds a key, a timer and the pending write's promise.
 */
export class PlanCache<O> {
  readonly key: string;
  readonly store: TuneStore<PlanCacheState>;
  readonly #plans: ExecutionPlanStore<O>;
  readonly #fusers: () => OperationFuser<O>[];
  #loading: Promise<PlanImport> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(plans: ExecutionPlanStore<O>, fusers: () => OperationFuser<O>[], key: string, store: TuneStore<PlanCacheState>) {
    this.#plans = plans;
    this.#fusers = fusers;
    this.key = key;
    this.store = store;
  }

  /** Loads the persisted plans of this key into the plan store (once). */
  load(): Promise<PlanImport> {
    this.#loading ??= this.store.loadAll().then(
      (records) => this.import(records.get(this.key)),
      () => ({ imported: 0, rejected: 0, reasons: ["the plan store could not be read"] }),
    );
    return this.#loading;
  }

  /** Imports `state` (a {@link PlanCacheState} of this key) into the plan store. */
  import(state: unknown): PlanImport {
    if (state === undefined) return { imported: 0, rejected: 0, reasons: [] };
    const record = state as Partial<PlanCacheState>;
    if (typeof state !== "object" || state === null || record.format !== PLAN_CACHE_FORMAT || !Array.isArray(record.plans)) {
      return { imported: 0, rejected: 0, reasons: ["not a plan cache record of this format"] };
    }
    if (record.key !== this.key) return { imported: 0, rejected: record.plans.length, reasons: [`plans of another version or adapter (${String(record.key)})`] };
    return this.#plans.importState(record.plans, this.#fusers());
  }

  /** The plan store as a {@link PlanCacheState} of this key. */
  export(): PlanCacheState {
    return { format: PLAN_CACHE_FORMAT, key: this.key, plans: this.#plans.exportState() };
  }

  /** Whether a write is scheduled and not yet started. */
  get pending(): boolean {
    return this.#timer !== undefined;
  }

  /** Schedules a write of the plans (after new ones were stored). */
  scheduleSave(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flushInBackground();
    }, SAVE_DELAY_MS);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Starts {@link flush} without a caller to hear its outcome: a failed write is dropped (see the type doc). */
  flushInBackground(): void {
    this.flush().catch(() => undefined);
  }

  /** Writes the plans now (after any write in progress); resolves once written. */
  flush(): Promise<void> {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    const state = this.export();
    this.#writing = this.#writing.then(
      () => this.store.put(this.key, state),
      () => this.store.put(this.key, state),
    );
    return this.#writing;
  }
}

/** The default persistent store of plans (`plans.json` in Node, IndexedDB `plans` in browsers). */
export function defaultPlanStore(directory?: string): TuneStore<PlanCacheState> {
  return defaultTuneStore<PlanCacheState>(directory, "plans");
}
