import { describe, expect, it } from "vitest";
import { Stream, StreamId } from "./stream-id.js";

describe("StreamId.current resolution order", () => {
  it("step 3: with no override and no scope, the policy's stream 0", () => {
    expect(StreamId.current()).toBe(StreamId.DEFAULT);
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
});
