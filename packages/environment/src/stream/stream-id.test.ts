import { describe, expect, it } from "vitest";
import { withIsolatedStreamState } from "../testing/isolated-stream-state.js";
import { AsyncOverrideError } from "./async-override-error.js";
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
  it("under 'single' runs on stream 0", () =>
    withIsolatedStreamState(async () => {
      setStreamPolicy("single");
      const id = await Stream.spawn(async () => {
        await Promise.resolve();
        return StreamId.current();
      });
      expect(id, "the single policy gives every task stream 0").toBe(StreamId.DEFAULT);
    }));

  it("under 'per-task' runs on a fresh stream that holds across await", () =>
    withIsolatedStreamState(async () => {
      setStreamPolicy("per-task");
      const ids = await Stream.spawn(async () => {
        const first = StreamId.current();
        await new Promise((resolve) => setTimeout(resolve, 0));
        return [first, StreamId.current()];
      });
      expect(ids[0], "a spawned task gets a fresh stream, not the root's").not.toBe(StreamId.DEFAULT);
      expect(ids[1], "the task's stream survives await").toBe(ids[0]);
    }));

  it("concurrent tasks keep distinct ids across interleaved awaits", () =>
    withIsolatedStreamState(async () => {
      setStreamPolicy("per-task");
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
    }));
});

describe("StreamId.allocate", () => {
  it("never reuses an id", () => {
    const ids = new Set<number>();
    for (let i = 0; i < 1000; i++) ids.add(StreamId.allocate());
    expect(ids.size, "1000 allocations give 1000 distinct ids").toBe(1000);
    expect(ids.has(StreamId.DEFAULT), "allocation never hands out the default stream").toBe(false);
  });

  it("StreamId.of refuses non-integers and negatives", () => {
    expect(() => StreamId.of(1.5)).toThrow(RangeError);
    expect(() => StreamId.of(-1)).toThrow(RangeError);
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
