import { describe, expect, it } from "vitest";
import { SlotTable } from "./slot-table.js";

describe("SlotTable", () => {
  it("hands out small keys, gives each value back once, and reuses a freed key before growing", () => {
    const table = new SlotTable<{ name: string }>();
    const a = { name: "a" };
    const b = { name: "b" };
    expect([table.add(a), table.add(b)]).toEqual([0, 1]);
    expect(table.size).toBe(2);
    expect(table.take(0)).toBe(a);
    expect(table.size).toBe(1);
    expect(() => table.take(0), "a key is taken once").toThrow(RangeError);
    expect(() => table.take(7), "a key never handed out").toThrow(RangeError);
    const c = { name: "c" };
    expect(table.add(c), "the freed key is reused").toBe(0);
    const d = { name: "d" };
    expect(table.add(d), "then the table grows").toBe(2);
    expect(table.values(), "by key").toEqual([c, b, d]);
    expect(table.take(1)).toBe(b);
    expect(table.values()).toEqual([c, d]);
  });

  it("stays as long as the most values held at once, however many pass through it", () => {
    const table = new SlotTable<number[]>();
    let most = 0;
    for (let round = 0; round < 1000; round++) {
      const keys = Array.from({ length: 32 }, () => table.add([round]));
      most = Math.max(most, ...keys);
      for (const key of keys) table.take(key);
    }
    expect(most, "32 at a time: keys 0–31 only").toBe(31);
    expect(table.size).toBe(0);
  });
});
