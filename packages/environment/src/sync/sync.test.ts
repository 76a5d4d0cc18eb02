import { describe, expect, it } from "vitest";
import { Deferred } from "./deferred.js";
import { Mutex } from "./mutex.js";
import { ReentrancyError, ReentrancyGuard } from "./reentrancy-guard.js";

/** Lets every queued microtask and one macrotask run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("Mutex", () => {
  it("hands the lock to waiters in FIFO order", async () => {
    const mutex = new Mutex();
    const order: number[] = [];
    const release = await mutex.lock();
    const waiters = [1, 2, 3].map((n) =>
      mutex.runExclusive(async () => {
        order.push(n);
        await settle();
      }),
    );
    await settle();
    expect(order, "nobody acquires while the lock is held").toEqual([]);
    release();
    await Promise.all(waiters);
    expect(order, "waiters acquire in arrival order").toEqual([1, 2, 3]);
    expect(mutex.locked, "the lock is free once everyone released").toBe(false);
  });

  it("is not re-entrant: the holder's second lock waits until it releases", async () => {
    const mutex = new Mutex();
    const release = await mutex.lock();
    let second = false;
    const again = mutex.lock().then((r) => {
      second = true;
      return r;
    });
    await settle();
    expect(second, "a second lock by the holder must wait, as the doc says").toBe(false);
    release();
    (await again)();
    expect(second).toBe(true);
  });

  it("runExclusive releases on throw", async () => {
    const mutex = new Mutex();
    await expect(mutex.runExclusive(() => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(mutex.locked, "a throwing section must not keep the lock").toBe(false);
  });

  it("a second release call is ignored and does not wake two waiters", async () => {
    const mutex = new Mutex();
    const release = await mutex.lock();
    const got: number[] = [];
    const a = mutex.lock().then((r) => (got.push(1), r));
    const b = mutex.lock().then((r) => (got.push(2), r));
    release();
    release();
    await settle();
    expect(got, "only one waiter holds the lock after a doubled release").toEqual([1]);
    (await a)();
    (await b)();
  });
});

describe("ReentrancyGuard", () => {
  it("throws on re-entry, naming the service", () => {
    const guard = new ReentrancyGuard("fusion server");
    let inner: unknown;
    guard.enter(() => {
      try {
        guard.enter(() => undefined);
      } catch (error) {
        inner = error;
      }
    });
    expect(inner, "re-entering the same service is refused").toBeInstanceOf(ReentrancyError);
    expect((inner as Error).message).toContain("fusion server");
  });

  it("begin/end bracket one call like enter: re-entry is refused until end", () => {
    const guard = new ReentrancyGuard("svc");
    guard.begin();
    expect(guard.busy).toBe(true);
    expect(() => guard.begin(), "a second begin is a re-entry").toThrow(ReentrancyError);
    expect(() => guard.enter(() => undefined), "so is an enter").toThrow(ReentrancyError);
    expect(guard.busy, "a refused begin leaves the running call in place").toBe(true);
    guard.end();
    expect(guard.busy).toBe(false);
    expect(guard.enter(() => 7)).toBe(7);
  });

  it("clears the busy flag on throw", () => {
    const guard = new ReentrancyGuard("svc");
    expect(() =>
      guard.enter(() => {
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(guard.busy, "a throwing call leaves the service free").toBe(false);
    expect(guard.enter(() => 1), "the next call runs").toBe(1);
  });
});

describe("Deferred", () => {
  it("settles once: later resolve and reject are ignored", async () => {
    const d = new Deferred<number>();
    expect(d.settled).toBe(false);
    d.resolve(1);
    d.resolve(2);
    d.reject(new Error("late"));
    expect(d.settled).toBe(true);
    await expect(d.promise, "the first settlement wins").resolves.toBe(1);
  });

  it("a reject first stays a rejection", async () => {
    const d = new Deferred<number>();
    d.reject(new Error("first"));
    d.resolve(3);
    await expect(d.promise).rejects.toThrow("first");
  });

  it.each(["resolve", "reject"] as const)("onSettle runs once, synchronously, at the first %s", async (first) => {
    let calls = 0;
    const d = new Deferred<number>(() => calls++);
    expect(calls, "not before settling").toBe(0);
    if (first === "resolve") d.resolve(1);
    else d.reject(new Error("no"));
    expect(calls, "at once, not in a later turn").toBe(1);
    d.resolve(2);
    d.reject(new Error("late"));
    expect(calls, "later calls do not run it again").toBe(1);
    await d.promise.catch(() => undefined);
  });
});
