import { StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import { DeviceLostError, ServerError, StreamCreationError } from "../errors/server-error.js";
import { type StreamFactory, StreamPool } from "./stream-pool.js";

/** A factory that counts creations and can be told to fail. */
class CountingFactory implements StreamFactory<{ n: number; slot: StreamId }> {
  created = 0;
  fail: unknown = undefined;
  create(slot: StreamId) {
    if (this.fail !== undefined) throw this.fail;
    return { n: ++this.created, slot };
  }
}

describe("StreamPool (docs/concepts.md#streampool-streammemory-and-taint)", () => {
  it("slots are pre-sized max + special and all start uninitialised", () => {
    const factory = new CountingFactory();
    const pool = new StreamPool(factory, 4, 2);
    expect([...pool.streams()], "no stream exists before first use").toEqual([]);
    expect(pool.streamIds()).toEqual([]);
    expect(factory.created, "construction creates nothing").toBe(0);
  });

  it("getMut creates lazily through the factory, once per slot", () => {
    const factory = new CountingFactory();
    const pool = new StreamPool(factory, 4, 0);
    const first = pool.getMut(StreamId.of(1));
    expect(pool.getMut(StreamId.of(1)), "the same slot gives the same stream").toBe(first);
    expect(factory.created).toBe(1);
  });

  it("index = id % max: ids congruent modulo max share a slot", () => {
    const pool = new StreamPool(new CountingFactory(), 4, 0);
    expect(pool.streamIndex(StreamId.of(9))).toBe(1);
    expect(pool.getOrCreate(StreamId.of(9)), "9 and 1 map to slot 1").toBe(pool.getOrCreate(StreamId.of(1)));
    expect(pool.getOrCreate(StreamId.of(2))).not.toBe(pool.getOrCreate(StreamId.of(1)));
  });

  it("getOrCreate surfaces the factory's ServerError as is", () => {
    const factory = new CountingFactory();
    const pool = new StreamPool(factory, 4, 0);
    const lost = new DeviceLostError("test");
    factory.fail = lost;
    expect(() => pool.getOrCreate(StreamId.of(0)), "the factory's own error reaches the caller").toThrow(lost);
    expect(pool.tryGet(StreamId.of(0)), "a failed creation fills no slot").toBeUndefined();
    factory.fail = new Error("plain");
    expect(() => pool.getOrCreate(StreamId.of(0)), "a non-ServerError is wrapped").toThrow(StreamCreationError);
  });

  it("getMut throws 'a stream could not be created: …' wrapping the cause", () => {
    const factory = new CountingFactory();
    const pool = new StreamPool(factory, 4, 0);
    const lost = new DeviceLostError("gone");
    factory.fail = lost;
    let thrown: unknown;
    try {
      pool.getMut(StreamId.of(3));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ServerError);
    expect((thrown as Error).message).toMatch(/^a stream could not be created: the device was lost: gone/);
    expect((thrown as Error).cause, "the factory's error is kept as cause").toBe(lost);
  });

  it("special streams live after the regular ones and are not reached by stream ids", () => {
    const factory = new CountingFactory();
    const pool = new StreamPool(factory, 2, 2);
    const special = pool.getOrCreateSpecial(1);
    expect(special.slot, "special i sits in slot max + i").toBe(3);
    expect(pool.getSpecial(1)).toBe(special);
    expect(pool.tryGet(StreamId.of(3)), "id 3 maps to regular slot 1, not the special slot").toBeUndefined();
    expect(pool.streamIds(), "special slots yield no stream id").toEqual([]);
    expect([...pool.streams()], "streams() lists special streams too").toEqual([special]);
    expect(() => pool.getOrCreateSpecial(2), "only numSpecial special streams exist").toThrow(RangeError);
  });

  it("streams() lists the initialised streams in slot order, whatever the order of first use; failed creations add none", () => {
    const factory = new CountingFactory();
    const pool = new StreamPool(factory, 4, 2);
    const special = pool.getOrCreateSpecial(0);
    const s3 = pool.getOrCreate(StreamId.of(3));
    const s1 = pool.getOrCreate(StreamId.of(1));
    factory.fail = new Error("no");
    expect(() => pool.getOrCreate(StreamId.of(2))).toThrow(StreamCreationError);
    factory.fail = undefined;
    const s0 = pool.getOrCreate(StreamId.of(4));
    pool.getOrCreate(StreamId.of(5)); // slot 1 again: nothing new
    expect(pool.streams(), "regular slots 0, 1, 3, then the special one").toEqual([s0, s1, s3, special]);
    expect(pool.streams().map((s) => s.slot)).toEqual([0, 1, 3, 4]);
  });

  it("streamIds() round-trips to the same slot", () => {
    const pool = new StreamPool(new CountingFactory(), 4, 1);
    const a = pool.getMut(StreamId.of(6));
    const b = pool.getMut(StreamId.of(3));
    pool.getOrCreateSpecial(0);
    const ids = pool.streamIds();
    expect(ids, "one synthetic id per initialised regular slot, in slot order").toEqual([2, 3]);
    expect(ids.map((id) => pool.getMut(id)), "each id leads back to its stream").toEqual([a, b]);
  });

  it("tryGet never creates", () => {
    const factory = new CountingFactory();
    const pool = new StreamPool(factory, 4, 0);
    expect(pool.tryGet(StreamId.of(2))).toBeUndefined();
    expect(factory.created, "resolving an owner must not bring a stream into existence").toBe(0);
  });

  it("refuses a pool without regular slots", () => {
    expect(() => new StreamPool(new CountingFactory(), 0, 1)).toThrow(RangeError);
  });
});
