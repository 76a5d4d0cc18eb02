import { describe, expect, it } from "vitest";
import { Fifo } from "./fifo.js";

describe("Fifo", () => {
  it("keeps first-in first-out order across compactions, whatever the interleaving of pushes and shifts", () => {
    const q = new Fifo<number>();
    const model: number[] = [];
    let next = 0;
    // Pushes outpace shifts (the queue grows past the compaction threshold), then it drains.
    for (let round = 0; round < 5000; round++) {
      const pushes = round < 3000 ? 2 : 0;
      for (let p = 0; p < pushes; p++) {
        q.push(next);
        model.push(next++);
      }
      expect(q.shift(), `round ${round}: the oldest item comes out`).toBe(model.shift());
      expect(q.length, `round ${round}: length counts the waiting items`).toBe(model.length);
      expect(q.peek(), `round ${round}: peek shows the next one`).toBe(model[0]);
    }
  });

  it("takeAll empties the queue and returns the waiting items oldest first", () => {
    const q = new Fifo<string>();
    for (const s of ["a", "b", "c", "d"]) q.push(s);
    q.shift();
    expect(q.takeAll()).toEqual(["b", "c", "d"]);
    expect(q.length, "nothing waits afterwards").toBe(0);
    expect(q.shift(), "an empty queue shifts undefined").toBeUndefined();
  });

  it("unshiftAll puts items ahead of the waiting ones, in their order, before and after shifts", () => {
    const q = new Fifo<string>();
    for (const s of ["c", "d", "e"]) q.push(s);
    q.unshiftAll(["a", "b"]);
    expect(q.shift()).toBe("a");
    q.shift();
    q.shift();
    q.unshiftAll(["x", "y"]); // reuses the consumed slots
    expect(q.takeAll()).toEqual(["x", "y", "d", "e"]);
    q.unshiftAll([]);
    expect(q.length).toBe(0);
  });
});
