/**
 * Argument checks every public entry point uses before it changes any state: each returns the
 * checked value, or throws a {@link ValueError} naming the op, the argument, what was given and
 * what to pass instead.
 *
 * @module
 */
import { ValueError, describeValue } from "./value-error.js";

/**
 * `options` as a record when it is `undefined` (→ `{}`) or a plain object whose keys are all in
 * `allowed`. A misspelt key (`{ keepdims: true }`) is an error rather than silently ignored.
 * @throws ValueError naming `op`, the bad key or value, and the keys allowed.
 */
export function checkOptions<K extends string>(op: string, options: unknown, allowed: readonly K[]): Partial<Record<K, unknown>> {
  if (options === undefined) return {};
  if (typeof options !== "object" || options === null || Array.isArray(options) || ArrayBuffer.isView(options)) {
    throw new ValueError(op, `pass options as an object like { ${allowed.join(", ")} }, not ${describeValue(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!(allowed as readonly string[]).includes(key)) {
      const list = allowed.length > 0 ? `allowed: ${allowed.join(", ")}` : "it takes none";
      throw new ValueError(op, `unknown option ${JSON.stringify(key)} (${list}); check the spelling`);
    }
  }
  return options as Partial<Record<K, unknown>>;
}

/**
 * `value` when it is one of `choices`; else a {@link ValueError} naming `op`, the argument and the
 * choices.
 */
export function checkChoice<C extends string>(op: string, name: string, value: unknown, choices: readonly C[]): C {
  if (typeof value === "string" && (choices as readonly string[]).includes(value)) return value as C;
  throw new ValueError(op, `pass ${name} as one of ${choices.map((c) => JSON.stringify(c)).join(", ")}, not ${describeValue(value)}`);
}

/** `value` when it is a function; else a {@link ValueError} naming `op` and the argument. */
export function checkFunction<F extends (...args: never[]) => unknown>(op: string, name: string, value: unknown): F {
  if (typeof value === "function") return value as F;
  throw new ValueError(op, `pass ${name} as a function, not ${describeValue(value)}`);
}

/**
 * `value` when it is a safe integer in `[min, max]`; else a {@link ValueError} naming `op`, the
 * argument, what was given and the range.
 */
export function checkInteger(op: string, name: string, value: unknown, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= min && value <= max) return value;
  const range = min === 0 && max === Number.MAX_SAFE_INTEGER ? "a non-negative integer" : min === 1 && max === Number.MAX_SAFE_INTEGER ? "a positive integer" : `an integer in [${min}, ${max}]`;
  throw new ValueError(op, `pass ${name} as ${range}, not ${describeValue(value)}`);
}

/** `value` when it is a number (NaN and ±Infinity allowed when `finite` is false); else a {@link ValueError}. */
export function checkNumber(op: string, name: string, value: unknown, finite = false): number {
  if (typeof value === "number" && (!finite || Number.isFinite(value))) return value;
  throw new ValueError(op, `pass ${name} as a ${finite ? "finite " : ""}number, not ${describeValue(value)}`);
}

/** `value` when it is `undefined` or a boolean; else a {@link ValueError} naming `op` and the argument. */
export function checkBoolean(op: string, name: string, value: unknown): boolean | undefined {
  if (value === undefined || typeof value === "boolean") return value;
  throw new ValueError(op, `pass ${name} as true or false, not ${describeValue(value)}`);
}
