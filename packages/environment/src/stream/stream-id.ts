/**
 * Stream identity: which ordered lane of work the calling code records on.
 *
 * A stream is an ordered lane of work. Work on one stream runs in the order it was recorded;
 * different streams may overlap and are aligned explicitly when they share memory. This module
 * owns the identity and the rules that decide the current one; it owns no device resource.
 *
 * @module
 */
import { checkChoice, checkFunction, checkInteger } from "../errors/arguments.js";
import { AsyncOverrideError } from "./async-override-error.js";
import { AsyncVariable } from "../context/async-variable.js";
import { claimStreamRegistry, ENVIRONMENT_VERSION } from "./single-copy.js";

// The state below must exist once per process: refuse to load next to another copy.
claimStreamRegistry({ version: ENVIRONMENT_VERSION, url: import.meta.url });

/**
 * The identity of one stream.
 *
 * @remarks
 * **Why branded.** Stream ids, tensor ids and pool slots are all numbers; the brand keeps them from
 * being mixed up at compile time.
 * **Invariant.** Ids handed out by {@link StreamId.allocate} are never reused within a process, so
 * a live id is never given to a second task. `0` is the default stream of the `single` policy.
 */
export type StreamId = number & { readonly __brand: "StreamId" };

/**
 * Which code gets a stream of its own. A *task* always does: {@link Stream.spawn} allocates a fresh
 * stream for each task, whatever the policy. The policy decides the rest:
 *
 * - `single` (the default, and the browser default): everything else records on the caller's
 *   stream — stream 0 outside every task, and a lifetime scope (`weft.scope`) on the stream of the
 *   code that opened it.
 * - `per-task`: every lifetime scope (`weft.scope`) is a task too and runs on a fresh stream, so
 *   concurrent scopes — the requests of a server written with `weft.scope` — never share a lazy
 *   queue. Code outside every task and scope is the root task, stream 0. The cost: what a scope
 *   returns is homed on the scope's stream, and its first use on the caller's stream is a
 *   cross-stream share (a shared view; the scope's stream drains first if the value is pending).
 */
export type StreamPolicy = "single" | "per-task";

/** The stream of the innermost `Stream.run`/`Stream.spawn` scope, carried across `await`. */
const asyncScope = new AsyncVariable<StreamId>();

/** Every {@link StreamPolicy}, for validation and messages. */
const STREAM_POLICIES: readonly StreamPolicy[] = ["single", "per-task"];

/** `id` checked as a stream id (a non-negative safe integer), naming `op` when it is not. */
function checkStreamId(op: string, id: unknown): StreamId {
  return brand(checkInteger(op, "the stream id", id, 0));
}

/** The sync override installed by {@link StreamId.executes}; `undefined` when none is active. */
let override: StreamId | undefined;
/** The next id {@link StreamId.allocate} hands out. Only grows. */
let nextId = 1;
/** The active policy; see {@link StreamPolicy}. */
let policy: StreamPolicy = "single";
/** Whether the user chose the policy; a user choice beats configuration, whatever the order. */
let policySetByUser = false;

function brand(value: number): StreamId {
  return value as StreamId;
}

/**
 * Functions over {@link StreamId}. Named like the type so `StreamId.current()` reads as in CubeCL.
 */
export const StreamId = {
  /** The default stream: what the `single` policy always resolves to. */
  DEFAULT: brand(0),

  /** A fresh stream id, distinct from every id handed out before in this process. */
  allocate(): StreamId {
    return brand(nextId++);
  },

  /**
   * Wraps a known number as a stream id (tests, pool slots).
   * @throws ValueError unless `value` is a non-negative safe integer.
   */
  of(value: number): StreamId {
    return checkStreamId("StreamId.of", value);
  },

  /**
   * The stream the calling code records on. Resolution order:
   *
   * 1. the innermost synchronous override installed by {@link StreamId.executes};
   * 2. the innermost async-context scope installed by {@link Stream.run} or {@link Stream.spawn}
   *    (`AsyncLocalStorage` in Node, `AsyncContext.Variable` where a browser has it);
   * 3. stream 0: code outside every override and scope is the root task, under either
   *    {@link StreamPolicy} (the policy decides which scopes get a stream of their own).
   */
  current(): StreamId {
    if (override !== undefined) return override;
    const scoped = asyncScope.get();
    if (scoped !== undefined) return scoped;
    return StreamId.DEFAULT;
  },

  /**
   * Runs synchronous `fn` with `id` as the current stream, restoring the previous state (including
   * "no override") on return and on throw, so overrides nest.
   *
   * @throws AsyncOverrideError when `fn` returns a thenable: an override cannot survive an
   *   `await` (it would leak into whatever task runs next). Use {@link Stream.run} or
   *   {@link Stream.spawn} for async code. The override is already restored when it throws.
   * @throws ValueError when `id` is not a stream id or `fn` is not a function (nothing changed).
   */
  executes<T>(id: StreamId, fn: () => T): T {
    checkStreamId("StreamId.executes", id);
    checkFunction("StreamId.executes", "fn", fn);
    const previous = override;
    override = id;
    let result: T;
    try {
      result = fn();
    } finally {
      override = previous;
    }
    if (isThenable(result)) {
      // Keep the rejection from going unhandled: the caller gets the thrown error instead.
      (result as PromiseLike<unknown>).then(undefined, () => undefined);
      throw new AsyncOverrideError();
    }
    return result;
  },
};

/** Installs an async scope for `fn`, hiding any synchronous override during its synchronous part. */
function enterScope<T>(id: StreamId, fn: () => T): T {
  const previous = override;
  override = undefined;
  try {
    return asyncScope.run(id, fn);
  } finally {
    override = previous;
  }
}

function isThenable(value: unknown): boolean {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/** The active {@link StreamPolicy}. */
export function getStreamPolicy(): StreamPolicy {
  return policy;
}

/**
 * Sets the {@link StreamPolicy}. A user's choice takes precedence over
 * {@link setStreamPolicyFromConfig}, whatever the call order. Already-resolved ids are not revisited.
 * @throws ValueError for anything but `"single"` or `"per-task"` (the policy is left as it was).
 */
export function setStreamPolicy(next: StreamPolicy): void {
  policy = checkChoice("setStreamPolicy", "the policy", next, STREAM_POLICIES);
  policySetByUser = true;
}

/**
 * Sets the policy from configuration (an env variable, a config file); a no-op once the user chose.
 * @internal
 */
export function setStreamPolicyFromConfig(next: StreamPolicy): void {
  const checked = checkChoice("setStreamPolicyFromConfig", "the policy", next, STREAM_POLICIES);
  if (!policySetByUser) policy = checked;
}

/**
 * A snapshot of the process-wide policy state, for `@weft/environment/testing` to restore after a
 * test. Allocation is deliberately not part of it: ids are never reused, not even across tests.
 * @internal
 */
export interface StreamPolicyState {
  readonly policy: StreamPolicy;
  readonly setByUser: boolean;
}

/** The current {@link StreamPolicyState}. @internal */
export function captureStreamPolicyState(): StreamPolicyState {
  return { policy, setByUser: policySetByUser };
}

/** Puts back a state taken by {@link captureStreamPolicyState}. @internal */
export function restoreStreamPolicyState(state: StreamPolicyState): void {
  policy = state.policy;
  policySetByUser = state.setByUser;
}

/**
 * How a spawned task runs `fn`: it returns a promise of `fn`'s result that settles once the task's
 * own cleanup is done. `@weft/fusion` installs one that makes the task a lifetime scope (what the
 * task creates and does not return is disposed when it settles); the default runs `fn` as is.
 */
export type TaskRunner = <T>(fn: () => T | PromiseLike<T>) => Promise<T>;

/** Runs `fn` and adopts its result or error as a promise; nothing else. */
const plainTaskRunner: TaskRunner = <T>(fn: () => T | PromiseLike<T>): Promise<T> => {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error as Error);
  }
};

/** The runner of {@link Stream.spawn}; replaced once by the layer that owns lifetimes. */
let taskRunner: TaskRunner = plainTaskRunner;

/**
 * Installs the runner every {@link Stream.spawn} task goes through (see {@link TaskRunner}).
 * `@weft/fusion` calls it when it loads, so a task's tensors are scoped to the task; this package
 * knows nothing about tensors.
 * @internal
 */
export function setTaskRunner(runner: TaskRunner): void {
  taskRunner = runner;
}

/**
 * Running code on streams.
 *
 * @remarks
 * **Why.** Concurrent async tasks (the requests of a server) must each get their own lazy queue so
 * one task's pending work never delays or reorders another's. `Stream.spawn` gives a task its own
 * stream for its whole async lifetime; `Stream.run` binds a chosen stream.
 *
 * **Browsers.** Where neither `AsyncLocalStorage` nor `AsyncContext` exists, a scope holds for the
 * synchronous start of `fn` only: after its first `await` the code records on the policy's stream.
 * That is always correct (tensors shared across streams are safe) but gives less concurrency.
 */
export const Stream = {
  /**
   * Runs `fn` with `id` as the current stream for its whole async lifetime, nested scopes included.
   * It binds the stream only: it is not a task and opens no lifetime scope.
   *
   * The innermost scope wins: a `Stream.run` nested inside {@link StreamId.executes} hides the
   * outer synchronous override while its own synchronous part runs, so `fn` sees `id` before and
   * after its first `await` alike. The outer override is back when `run` returns.
   */
  run<T>(id: StreamId, fn: () => T): T {
    checkStreamId("Stream.run", id);
    checkFunction("Stream.run", "fn", fn);
    return enterScope(id, fn);
  },
  /**
   * Runs `fn` as a new task: on a freshly allocated stream whatever the {@link StreamPolicy}, for
   * its whole async lifetime, through the installed {@link TaskRunner} — with `@weft/fusion`
   * loaded, a lifetime scope: what the task creates and neither returns nor keeps is disposed when
   * it settles, also when it throws. Resolves with `fn`'s result, or rejects with its error, after
   * that cleanup. Tasks nest: a task spawned inside another gets its own stream too.
   */
  spawn<T>(fn: () => T | PromiseLike<T>): Promise<T> {
    checkFunction("Stream.spawn", "fn", fn);
    return enterScope(StreamId.allocate(), () => taskRunner(fn));
  },
  /** Whether async scopes survive `await` here (Node, or a browser with `AsyncContext`). */
  get asyncScopesSupported(): boolean {
    return asyncScope.durable;
  },
};
