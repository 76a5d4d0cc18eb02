/**
 * `@weft/fusion/internal`: the engine's internals, for sibling `@weft/*` packages and the engine's
 * own tests only — not a stable API. What a backend author needs is the root entry.
 *
 * @internal
 * @module
 */
export { FUSION_TENSOR } from "./tensor/fusion-tensor.js";
export type { SharedRef } from "./tensor/fusion-tensor.js";
export { OperationConverter } from "./ir/relative.js";
export type { RelativeOperation } from "./ir/relative.js";
export { MultiStream } from "./stream/multi-stream.js";
export type { ReadPlan, MultiStreamOptions } from "./stream/multi-stream.js";
export { OperationQueue, setOutputErrors } from "./stream/queue/operation-queue.js";
export type { ExecutionEnv } from "./stream/queue/operation-queue.js";
export { Processor } from "./stream/execution/processor.js";
export { Policy } from "./stream/execution/policy.js";
export type { Action, ExecutionMode } from "./stream/execution/policy.js";
export { Explorer, ExplorationBudget } from "./stream/execution/explorer.js";
export type { Exploration } from "./stream/execution/explorer.js";
export { OperationsValidator } from "./stream/execution/validator.js";
export type { ValidatorState } from "./stream/execution/validator.js";
export { ExecutionPlanStore, DEFAULT_MAX_PLANS } from "./stream/store/execution-plan-store.js";
export type {
  ExecutionPlan,
  ExecutionPlanId,
  ExecutionTrigger,
  ExecutionStep,
  ExecutionStrategy,
  PlanImport,
} from "./stream/store/execution-plan-store.js";
export { PlanCache, PLAN_CACHE_FORMAT, defaultPlanStore, planCacheKey } from "./stream/store/plan-cache.js";
export type { PlanCacheOptions, PlanCacheState } from "./stream/store/plan-cache.js";
export { planFromState, planToState } from "./stream/store/plan-state.js";
export type { ExecutionPlanState, ExecutionStepState, RelativeOperationState, RestoredPlan } from "./stream/store/plan-state.js";
