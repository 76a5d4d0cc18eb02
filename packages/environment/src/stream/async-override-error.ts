import { WeftError } from "../errors/weft-error.js";

/**
 * Thrown by `StreamId.executes(id, fn)` when `fn` returns a promise (or any thenable).
 *
 * @remarks
 * **Why.** `executes` installs a synchronous override that is restored when `fn` returns. Code
 * after an `await` inside `fn` runs later, outside the override, and would silently record on
 * another stream; worse, an override kept across the `await` would leak into whatever task runs
 * next. So async code is refused and pointed at the API that carries a stream across `await`:
 * `Stream.run(id, async () => …)` or `Stream.spawn(async () => …)`.
 * **Invariant.** When this is thrown the previous override is already restored.
 */
export class AsyncOverrideError extends WeftError {
  constructor() {
    super(
      "async-override",
      "StreamId.executes(id, fn) is for synchronous code, but fn returned a promise; " +
        "use Stream.run(id, async () => …) or Stream.spawn(async () => …) for async code",
    );
  }
}
