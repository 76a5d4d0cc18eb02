/**
 * Bad arguments to `@weft/environment`'s public entry points throw a `ValueError` at the call that
 * names the entry point, what was given and what to pass, and change nothing (issue 9).
 */
import { describe, expect, it } from "vitest";
import { withIsolatedStreamState } from "../testing/isolated-stream-state.js";
import { Stream, StreamId, getStreamPolicy, setStreamPolicy, setStreamPolicyFromConfig } from "../stream/stream-id.js";
import { Mutex } from "../sync/mutex.js";
import { checkOptions, checkInteger } from "./arguments.js";
import { ValueError, describeValue } from "./value-error.js";

/** Calls `fn` expecting a ValueError whose message starts with `op` and contains each fragment. */
function rejects(fn: () => unknown, op: string, ...fragments: string[]): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught, `${op} must throw a ValueError at the call`).toBeInstanceOf(ValueError);
  expect((caught as ValueError).op).toBe(op);
  expect((caught as Error).message.startsWith(`${op}: `), "the message starts with the op").toBe(true);
  for (const f of fragments) expect((caught as Error).message).toContain(f);
}

describe("stream entry points validate their arguments", () => {
  it("setStreamPolicy and setStreamPolicyFromConfig refuse an unknown policy and keep the current one", () =>
    withIsolatedStreamState(() => {
      setStreamPolicy("per-task");
      rejects(() => setStreamPolicy("parallel" as never), "setStreamPolicy", '"parallel"', '"single", "per-task"');
      rejects(() => setStreamPolicy(undefined as never), "setStreamPolicy", "undefined");
      rejects(() => setStreamPolicyFromConfig(1 as never), "setStreamPolicyFromConfig", "number 1");
      expect(getStreamPolicy(), "a refused policy leaves the policy as it was").toBe("per-task");
    }));

  it("StreamId.of, StreamId.executes, Stream.run and Stream.spawn check the id and the function", () => {
    const before = StreamId.current();
    rejects(() => StreamId.of(-1), "StreamId.of", "non-negative integer", "number -1");
    rejects(() => StreamId.of(Number.NaN), "StreamId.of", "NaN");
    rejects(() => StreamId.executes(1.5 as StreamId, () => 1), "StreamId.executes", "1.5");
    rejects(() => StreamId.executes(StreamId.DEFAULT, "f" as never), "StreamId.executes", "pass fn as a function", 'string "f"');
    rejects(() => Stream.run("3" as never, () => 1), "Stream.run", 'string "3"');
    rejects(() => Stream.run(StreamId.DEFAULT, undefined as never), "Stream.run", "undefined");
    rejects(() => Stream.spawn(42 as never), "Stream.spawn", "number 42");
    expect(StreamId.current(), "no override or scope leaked from a refused call").toBe(before);
  });

  it("Mutex.runExclusive refuses a non-function without taking the lock", async () => {
    const mutex = new Mutex();
    await expect(mutex.runExclusive(5 as never)).rejects.toBeInstanceOf(ValueError);
    expect(mutex.locked, "the lock was never taken").toBe(false);
  });
});

describe("argument helpers", () => {
  it("checkOptions refuses non-objects and misspelt keys, naming the allowed ones", () => {
    expect(checkOptions("sum", undefined, ["keepDims"])).toEqual({});
    rejects(() => checkOptions("sum", { keepdims: true }, ["keepDims"]), "sum", '"keepdims"', "keepDims");
    rejects(() => checkOptions("sum", 3, ["keepDims"]), "sum", "number 3");
    rejects(() => checkOptions("sum", [true], ["keepDims"]), "sum", "an array");
  });

  it("checkInteger names the range and what was given", () => {
    expect(checkInteger("seed", "seed", 3, 0)).toBe(3);
    rejects(() => checkInteger("seed", "seed", 2 ** 60, 0), "seed", "non-negative integer");
    rejects(() => checkInteger("f", "n", 7, 0, 5), "f", "[0, 5]", "number 7");
  });

  it("describeValue says what a value is without dumping it", () => {
    expect(describeValue("1")).toBe('string "1"');
    expect(describeValue(new Float32Array(3))).toBe("Float32Array(3)");
    expect(describeValue([1, 2])).toBe("an array of length 2");
    expect(describeValue(new Map())).toBe("a Map");
    expect(describeValue({})).toBe("an object");
    expect(describeValue(10n)).toBe("bigint 10n");
  });
});
