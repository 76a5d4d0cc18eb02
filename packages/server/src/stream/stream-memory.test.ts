import { StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import type { AllocationId, BufferBinding } from "../binding.js";
import { ErrorGraph } from "../errors/error-graph.js";
import { InjectedFaultError } from "../errors/server-error.js";
import { ByteRangeClaims } from "./stream-memory.js";

const A = 1 as AllocationId;
const B = 2 as AllocationId;
const bind = (offset: number, size: number, allocation = A): BufferBinding => ({
  allocation,
  offset,
  size,
  stream: StreamId.DEFAULT,
});

function setup() {
  const graph = new ErrorGraph();
  const claims = new ByteRangeClaims();
  const f = graph.insert(new InjectedFaultError("f"));
  const g = graph.insert(new InjectedFaultError("g"));
  return { graph, claims, f, g };
}

describe("ByteRangeClaims", () => {
  it("a claim covers exactly its range: tainting 0–63 says nothing about 64–127", () => {
    const { graph, claims, f } = setup();
    claims.taint(bind(0, 64), f, graph);
    expect(claims.failure(bind(64, 64)), "the untouched half is clean").toBeUndefined();
    expect(claims.failure(bind(63, 2)), "a read straddling the edge sees the claim").toBe(f);
    expect(claims.failure(bind(0, 64, B)), "another allocation is clean").toBeUndefined();
    expect(graph.bytesHeld(f), "the graph counts the claimed bytes").toBe(64);
  });

  it("overlapping taints split the older claim and move exactly the overlap", () => {
    const { graph, claims, f, g } = setup();
    claims.taint(bind(0, 64), f, graph);
    claims.taint(bind(32, 64), g, graph);
    expect(claims.claims(A)).toEqual([
      { start: 0, end: 32, failure: f },
      { start: 32, end: 96, failure: g },
    ]);
    expect(graph.bytesHeld(f), "f keeps only what g did not overwrite").toBe(32);
    expect(graph.bytesHeld(g)).toBe(64);
  });

  it("adjacent taints of the same failure merge; of different failures stay apart", () => {
    const { graph, claims, f, g } = setup();
    claims.taint(bind(0, 16), f, graph);
    claims.taint(bind(16, 16), f, graph);
    claims.taint(bind(32, 16), g, graph);
    expect(claims.claims(A)).toEqual([
      { start: 0, end: 32, failure: f },
      { start: 32, end: 48, failure: g },
    ]);
    expect(claims.failure(bind(48, 16)), "the byte after the last claim is clean").toBeUndefined();
  });

  it("a nested taint splits the outer claim in three", () => {
    const { graph, claims, f, g } = setup();
    claims.taint(bind(0, 100), f, graph);
    claims.taint(bind(40, 20), g, graph);
    expect(claims.claims(A)).toEqual([
      { start: 0, end: 40, failure: f },
      { start: 40, end: 60, failure: g },
      { start: 60, end: 100, failure: f },
    ]);
    expect(graph.bytesHeld(f)).toBe(80);
  });

  it("re-tainting a range with its own failure never prunes it in between", () => {
    const { graph, claims, f } = setup();
    claims.taint(bind(0, 64), f, graph);
    claims.taint(bind(0, 64), f, graph);
    expect(graph.has(f), "the failure survives being re-applied").toBe(true);
    expect(graph.bytesHeld(f)).toBe(64);
  });

  it("writing a sub-range releases only that sub-range", () => {
    const { graph, claims, f } = setup();
    claims.taint(bind(0, 64), f, graph);
    claims.written(bind(16, 16), graph);
    expect(claims.failure(bind(16, 16)), "the written bytes are clean").toBeUndefined();
    expect(claims.failure(bind(0, 16))).toBe(f);
    expect(claims.failure(bind(32, 32))).toBe(f);
    expect(graph.bytesHeld(f)).toBe(48);
  });

  it("a write across two claims releases both overlaps and prunes a failure left with nothing", () => {
    const { graph, claims, f, g } = setup();
    claims.taint(bind(0, 32), f, graph);
    claims.taint(bind(32, 32), g, graph);
    claims.written(bind(16, 48), graph);
    expect(claims.claims(A)).toEqual([{ start: 0, end: 16, failure: f }]);
    expect(graph.has(g), "g held only the written bytes, so it is pruned").toBe(false);
    expect(graph.bytesHeld(f)).toBe(16);
  });

  it("a full write removes the allocation's entry; forget drops a freed allocation's claims", () => {
    const { graph, claims, f } = setup();
    claims.taint(bind(0, 8), f, graph);
    claims.taint(bind(0, 8, B), f, graph);
    claims.written(bind(0, 8), graph);
    expect(claims.allocations, "an allocation without claims has no entry").toBe(1);
    claims.forget(B, graph);
    expect(claims.allocations).toBe(0);
    expect(graph.has(f), "nothing holds f any more").toBe(false);
  });

  it("zero-size bindings claim and release nothing", () => {
    const { graph, claims, f } = setup();
    claims.taint(bind(0, 8), f, graph);
    claims.taint(bind(4, 0), f, graph);
    claims.written(bind(0, 0), graph);
    expect(claims.failure(bind(4, 0)), "an empty read reads no tainted byte").toBeUndefined();
    expect(graph.bytesHeld(f)).toBe(8);
  });
});
