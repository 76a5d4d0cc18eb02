/**
 * `FailureStore`'s answers while no failure is live: every launch asks `checkReads`, `pendingOf`
 * and `written`, and with an empty graph they answer without looking at any stream (no byte can
 * be claimed then). The properties: the shortcut never hides a live claim — a failure on one
 * stream is found from any binding it claims, on any stream's slot, right after the store was
 * empty — and once the last claim went the answers are clean again, with nothing left behind.
 */
import { StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import type { AllocationId, BufferBinding } from "../binding.js";
import { ByteRangeClaims } from "../stream/stream-memory.js";
import { StreamPool } from "../stream/stream-pool.js";
import { FailureStore } from "./failure-store.js";
import { LaunchError } from "./server-error.js";

const bind = (allocation: number, stream = 0, offset = 0, size = 16): BufferBinding => ({ allocation: allocation as AllocationId, offset, size, stream: StreamId.of(stream) });

function store(): FailureStore<ByteRangeClaims> {
  const pool = new StreamPool({ create: () => new ByteRangeClaims() }, 4, 0);
  for (let i = 0; i < 4; i++) pool.getMut(StreamId.of(i));
  return new FailureStore(pool);
}

describe("FailureStore with no live failure", () => {
  it("answers clean, and a failure recorded after that is found at once, on its own stream only", () => {
    const s = store();
    expect(s.hasClaims).toBe(false);
    expect(s.checkReads([bind(1), bind(2, 3)]), "nothing is claimed").toBeUndefined();
    expect(s.pendingOf([bind(1)]), "no check is pending").toEqual([]);
    s.written([bind(1)]); // releases nothing, changes nothing
    expect(s.hasClaims).toBe(false);
    const failure = s.failLaunch(new LaunchError("the add failed"), [bind(7, 2, 8, 8)]);
    expect(failure).toBeDefined();
    expect(s.hasClaims, "the failure claims bytes 8..16 of allocation 7").toBe(true);
    expect(s.checkReads([bind(1), bind(7, 2)])?.failure, "found through the stream that owns allocation 7").toBe(failure);
    expect(s.checkReads([bind(7, 2, 0, 8)]), "its bytes 0..8 are clean").toBeUndefined();
    expect(s.readError([bind(7, 2)])?.message, "a read of it rejects naming the failure").toMatch(/the add failed/);
  });

  it("goes back to clean once the last claimed byte is written again: nothing stale answers", () => {
    const s = store();
    const a = bind(3, 1);
    s.failLaunch(new LaunchError("first"), [a]);
    const check = s.suspect(new LaunchError("status not read back yet"), [bind(4, 1)]);
    expect(check).toBeDefined();
    expect(s.pendingOf([bind(4, 1)]), "the pending check is reported").toEqual([check]);
    s.written([a]);
    expect(s.hasClaims, "the check still holds allocation 4").toBe(true);
    s.settle(check as never);
    s.written([bind(4, 1)]);
    expect(s.hasClaims, "every claim went").toBe(false);
    expect([s.checkReads([a, bind(4, 1)]), s.readError([a])], "and every answer is clean").toEqual([undefined, undefined]);
    const again = s.failLaunch(new LaunchError("second"), [a]);
    expect(s.checkReads([a])?.failure, "a new failure on the same bytes is found again").toBe(again);
  });
});
