import { describe, expect, it } from "vitest";
import { withIsolatedStreamState } from "../testing/isolated-stream-state.js";
import { ValueError } from "../errors/value-error.js";
import { AsyncOverrideError } from "./async-override-error.js";
import { AsyncVariable } from "../context/async-variable.js";
import { Stream, StreamId, getStreamPolicy, setStreamPolicy, setStreamPolicyFromConfig } from "./stream-id.js";

describe("StreamId.current resolution order", () => {
  it("step 3: with no override and no scope, the policy's stream 0", () => {
    expect(StreamId.current(), "no override and no scope leaves the policy default").toBe(StreamId.DEFAULT);
  });

  it("step 3: per-task outside any task scope is the root task, stream 0", () =>
    withIsolatedStreamState(() => {
      setStreamPolicy("per-task");
      expect(StreamId.current(), "code outside Stream.spawn is the root task").toBe(StreamId.DEFAULT);
    }));

  it("step 2: an async scope wins over the policy and survives await", async () => {
    const scoped = StreamId.allocate();
    await Stream.run(scoped, async () => {
      expect(StreamId.current()).toBe(scoped);
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(StreamId.current(), "the scope must hold across a macrotask boundary").toBe(scoped);
    });
    expect(StreamId.current(), "the scope ends with run").toBe(StreamId.DEFAULT);
  });

  it("step 1: an explicit override wins over an async scope", async () => {
    const scoped = StreamId.allocate();
    const explicit = StreamId.allocate();
    await Stream.run(scoped, async () => {
      await Promise.resolve();
      expect(StreamId.current(), "the async scope survives await").toBe(scoped);
      StreamId.executes(explicit, () => expect(StreamId.current()).toBe(explicit));
      expect(StreamId.current(), "restored to the scope after executes").toBe(scoped);
    });
  });

  it("the innermost wins: a Stream.run inside executes sees its own id before and after await", async () => {
    const outer = StreamId.allocate();
    const inner = StreamId.allocate();
    const seen: StreamId[] = [];
    const done = StreamId.executes(outer, () => {
      const task = Stream.run(inner, async () => {
        seen.push(StreamId.current());
        await Promise.resolve();
        seen.push(StreamId.current());
      });
      seen.push(StreamId.current());
      return { task };
    });
    await done.task;
    expect(seen, "inner scope before and after await, then the outer override after run returns").toEqual([
      inner,
      outer,
      inner,
    ]);
  });
});

describe("StreamId.executes", () => {
  it("nests and restores each level", () => {
    const a = StreamId.allocate();
    const b = StreamId.allocate();
    StreamId.executes(a, () => {
      StreamId.executes(b, () => expect(StreamId.current()).toBe(b));
      expect(StreamId.current(), "the outer override is back after the inner returns").toBe(a);
    });
  });

  it("restores the previous override on throw", () => {
    const a = StreamId.allocate();
    const b = StreamId.allocate();
    StreamId.executes(a, () => {
      expect(() =>
        StreamId.executes(b, () => {
          throw new Error("boom");
        }),
      ).toThrow("boom");
      expect(StreamId.current(), "a throw inside the inner override must not leave it installed").toBe(a);
    });
  });

  it("restoring after the outermost executes returns to no override", async () => {
    const a = StreamId.allocate();
    const scoped = StreamId.allocate();
    StreamId.executes(a, () => undefined);
    expect(StreamId.current(), "no override pinned after the outermost executes").toBe(StreamId.DEFAULT);
    // If the resolved id had been pinned as an override, it would beat this scope.
    await Stream.run(scoped, async () => {
      expect(StreamId.current(), "an async scope after executes is not shadowed by a stale override").toBe(scoped);
    });
  });

  it("returns fn's result", () => {
    expect(StreamId.executes(StreamId.allocate(), () => 42)).toBe(42);
  });

  it("with a thenable, throws pointing to Stream.spawn and restores the override", async () => {
    const a = StreamId.allocate();
    let thrown: unknown;
    try {
      StreamId.executes(a, async () => undefined);
    } catch (error) {
      thrown = error;
    }
    expect(thrown, "async fn is refused with a typed error").toBeInstanceOf(AsyncOverrideError);
    expect((thrown as Error).message, "the message names the API to use instead").toMatch(/Stream\.spawn/);
    expect(StreamId.current(), "the override is already gone when it throws").toBe(StreamId.DEFAULT);
  });
});

describe("Stream.spawn", () => {
  it.each(["single", "per-task"] as const)("under '%s' runs on a fresh stream that holds across await", (policy) =>
    withIsolatedStreamState(async () => {
      setStreamPolicy(policy);
      const ids = await Stream.spawn(async () => {
        const first = StreamId.current();
        await new Promise((resolve) => setTimeout(resolve, 0));
        return [first, StreamId.current()];
      });
      expect(ids[0], "a spawned task gets a fresh stream, not the root's, whatever the policy").not.toBe(StreamId.DEFAULT);
      expect(ids[1], "the task's stream survives await").toBe(ids[0]);
    }));
  it("a nested task gets its own stream, and the outer one is back after it", async () => {
    const seen = await Stream.spawn(async () => {
      const outer = StreamId.current();
      const inner = await Stream.spawn(async () => {
        await Promise.resolve();
        return StreamId.current();
      });
      return { outer, inner, after: StreamId.current() };
    });
    expect(seen.inner, "the inner task has a stream of its own").not.toBe(seen.outer);
    expect(seen.after, "the outer task's stream is back after the inner settled").toBe(seen.outer);
  });
  it("always returns a promise, also for a synchronous fn, and rejects with fn's error", async () => {
    const result = Stream.spawn(() => 7);
    expect(result, "a task settles asynchronously").toBeInstanceOf(Promise);
    expect(await result).toBe(7);
    await expect(
      Stream.spawn(() => {
        throw new Error("boom");
      }),
      "a synchronous throw becomes the task's rejection",
    ).rejects.toThrow("boom");
  });
  it("concurrent tasks keep distinct ids across interleaved awaits", async () => {
    const task = () =>
      Stream.spawn(async () => {
        const seen = [StreamId.current()];
        for (let i = 0; i < 5; i++) {
          await new Promise((resolve) => setTimeout(resolve, 0));
          seen.push(StreamId.current());
        }
        return seen;
      });
    const results = await Promise.all([task(), task(), task()]);
    for (const seen of results) {
      expect(new Set(seen).size, "one task sees one stream through all its awaits").toBe(1);
    }
    const firsts = results.map((seen) => seen[0]);
    expect(new Set(firsts).size, "concurrent tasks never share a stream").toBe(3);
  });
});

describe("AsyncVariable", () => {
  it("carries its value across await and timers, nests, and is gone after run", async () => {
    const v = new AsyncVariable<string>();
    expect(v.durable, "Node carries values across await").toBe(true);
    expect(AsyncVariable.carrier).toBe("async-local-storage");
    const seen: (string | undefined)[] = [];
    await v.run("outer", async () => {
      seen.push(v.get());
      await v.run("inner", async () => {
        await new Promise((resolve) => setTimeout(resolve, 0));
        seen.push(v.get());
      });
      await Promise.resolve();
      seen.push(v.get());
    });
    seen.push(v.get());
    expect(seen).toEqual(["outer", "inner", "outer", undefined]);
  });
  it("two variables are independent", () => {
    const a = new AsyncVariable<number>();
    const b = new AsyncVariable<number>();
    a.run(1, () => {
      expect(b.get(), "running one variable sets no other").toBeUndefined();
      b.run(2, () => expect(a.get()).toBe(1));
    });
  });
});

describe("StreamId.allocate", () => {
  it("never reuses an id", () => {
    const ids = new Set<number>();
    for (let i = 0; i < 1000; i++) ids.add(StreamId.allocate());
    expect(ids.size, "1000 allocations give 1000 distinct ids").toBe(1000);
    expect(ids.has(StreamId.DEFAULT), "allocation never hands out the default stream").toBe(false);
  });

  it("StreamId.of refuses non-integers and negatives", () => {
    expect(() => StreamId.of(1.5)).toThrow(ValueError);
    expect(() => StreamId.of(-1)).toThrow(ValueError);
    expect(StreamId.of(7)).toBe(7);
  });
});

describe("stream policy", () => {
  it("a user's choice beats configuration, whatever the order", () =>
    withIsolatedStreamState(() => {
      setStreamPolicy("per-task");
      setStreamPolicyFromConfig("single");
      expect(getStreamPolicy(), "config after the user's choice is ignored").toBe("per-task");
    }));

  it("withIsolatedStreamState puts the policy back, also after a rejection", async () => {
    const before = getStreamPolicy();
    await expect(
      withIsolatedStreamState(async () => {
        setStreamPolicy(before === "single" ? "per-task" : "single");
        throw new Error("test failed");
      }),
    ).rejects.toThrow("test failed");
    expect(getStreamPolicy(), "the policy is restored after the test").toBe(before);
  });
});
