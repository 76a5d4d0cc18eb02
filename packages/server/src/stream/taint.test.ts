import { StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import type { AllocationId, BufferBinding } from "../binding.js";
import { ErrorGraph } from "../errors/error-graph.js";
import { FailureStore } from "../errors/failure-store.js";
import { InjectedFaultError, SkippedLaunchError } from "../errors/server-error.js";
import { TaintedReadError } from "../errors/tainted-read-error.js";
import { ByteRangeClaims } from "./stream-memory.js";
import { StreamPool } from "./stream-pool.js";
import { taint, taintWith, written } from "./taint.js";

const bind = (stream: number, allocation: number, offset = 0, size = 16): BufferBinding => ({
  allocation: allocation as AllocationId,
  offset,
  size,
  stream: StreamId.of(stream),
});

function setup() {
  const pool = new StreamPool({ create: () => new ByteRangeClaims() }, 4, 0);
  return { pool, graph: new ErrorGraph() };
}

describe("taint / taintWith / written", () => {
  it("each binding lands on the stream that allocated it, not the one that failed", () => {
    const { pool, graph } = setup();
    const s0 = pool.getMut(StreamId.of(0));
    const s1 = pool.getMut(StreamId.of(1));
    const f = taint(pool, new InjectedFaultError("x"), [bind(1, 7)], graph);
    expect(f).toBeDefined();
    expect(s1.failure(bind(1, 7)), "the owner's memory carries the claim").toBe(f);
    expect(s0.allocations, "stream 0 holds nothing").toBe(0);
  });

  it("a binding whose slot was never initialised is skipped", () => {
    const { pool, graph } = setup();
    const f = graph.insert(new InjectedFaultError("x"));
    taintWith(pool, f, [bind(2, 1)], graph);
    expect(pool.tryGet(StreamId.of(2)), "taint never creates a stream").toBeUndefined();
    expect(graph.bytesHeld(f)).toBe(0);
  });

  it("taint prunes the failure it minted when it claimed nothing", () => {
    const { pool, graph } = setup();
    expect(taint(pool, new InjectedFaultError("x"), [bind(3, 1)], graph)).toBeUndefined();
    expect(graph.size, "a failure no byte holds is not kept").toBe(0);
  });

  it("written releases the claims, and the graph empties", () => {
    const { pool, graph } = setup();
    pool.getMut(StreamId.of(0));
    taint(pool, new InjectedFaultError("x"), [bind(0, 1), bind(0, 2)], graph);
    written(pool, [bind(0, 1), bind(0, 2)], graph);
    expect(graph.size, "every claimed byte was written again").toBe(0);
  });
});

describe("FailureStore", () => {
  it("a skipped launch's writes carry a failure caused by the one it read; the read error names root and chain", () => {
    const { pool, graph } = setup();
    pool.getMut(StreamId.of(0));
    const store = new FailureStore(pool, graph);
    const input = bind(0, 1);
    const output = bind(0, 2);
    const root = new InjectedFaultError("first launch");
    const rootId = store.failLaunch(root, [input]);
    const hit = store.checkReads([bind(0, 9), input]);
    expect(hit?.failure).toBe(rootId);
    expect(hit?.needed, "the check names the input it found claimed").toBe(input);
    expect(hit?.error).toBe(root);
    const skipped = store.skipLaunch(hit!, [output], 'kernel "mul"');
    expect(skipped).toBeDefined();
    expect(graph.root(skipped!)).toBe(rootId);

    const error = store.readError([output]);
    expect(error).toBeInstanceOf(TaintedReadError);
    expect(error?.cause, "the cause is the root error").toBe(root);
    expect(error?.chain.map((e) => e.constructor), "chain is root first").toEqual([InjectedFaultError, SkippedLaunchError]);
    expect(error?.message).toContain("Root cause: [injected] injected fault: first launch");
    expect(error?.message).toContain('kernel "mul" did not run');
    expect(store.readError([bind(0, 3)]), "a read sharing nothing with the failure is clean").toBeUndefined();
  });

  it("rewriting the root's bytes keeps the skipped output tainted and the root alive as its cause", () => {
    const { pool, graph } = setup();
    pool.getMut(StreamId.of(0));
    const store = new FailureStore(pool, graph);
    const rootId = store.failLaunch(new InjectedFaultError("r"), [bind(0, 1)])!;
    store.skipLaunch(store.checkReads([bind(0, 1)])!, [bind(0, 2)]);
    store.written([bind(0, 1)]);
    expect(store.readError([bind(0, 1)]), "the input was written again").toBeUndefined();
    expect(graph.has(rootId), "the root stays: a live failure names it as cause").toBe(true);
    expect(store.readError([bind(0, 2)])?.root.message).toContain("r");
    store.written([bind(0, 2)]);
    expect(graph.size, "with every claim gone, the chain is pruned").toBe(0);
  });
});
