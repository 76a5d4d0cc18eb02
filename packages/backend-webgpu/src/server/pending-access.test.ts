import type { AllocationId } from "@weft/server";
import { describe, expect, it } from "vitest";
import { PendingAccess, accessBits } from "./webgpu-stream.js";

const A = 1 as AllocationId;
const R = accessBits("read");
const W = accessBits("write");

describe("PendingAccess", () => {
  it("says another stream may conflict exactly when another stream writes, or this use writes and another uses it", () => {
    const p = new PendingAccess();
    expect(p.othersMayConflict(A, W, 0), "nobody refers to it").toBe(false);
    p.note(A, 0, R); // stream 1 reads A
    expect(p.othersMayConflict(A, R, 0), "two readers never conflict").toBe(false);
    expect(p.othersMayConflict(A, W, 0), "a writer follows another stream's reader").toBe(true);
    expect(p.othersMayConflict(A, W, R), "the only reader is this stream itself").toBe(false);
    p.note(A, 0, W); // stream 2 writes A
    expect(p.othersMayConflict(A, R, R), "stream 1 reading again must follow stream 2's write").toBe(true);
    expect(p.othersMayConflict(A, R, W), "stream 2 reading its own write: stream 1 only reads").toBe(false);
    p.forget(A, W);
    expect(p.othersMayConflict(A, R, 0), "stream 2 submitted: only a reader is left").toBe(false);
    p.note(A, R, R | W); // stream 1 now also writes
    expect(p.othersMayConflict(A, R, 0)).toBe(true);
    p.forget(A, R | W);
    expect(p.size, "no entry once every encoder submitted").toBe(0);
  });
});
