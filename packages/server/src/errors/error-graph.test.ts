import { describe, expect, it } from "vitest";
import { ErrorGraph } from "./error-graph.js";
import { InjectedFaultError, LaunchError } from "./server-error.js";

describe("ErrorGraph", () => {
  it("a failure caused by reading a tainted input links to its root; chain is root first", () => {
    const graph = new ErrorGraph();
    const root = graph.insert(new InjectedFaultError("root"));
    const mid = graph.insert(new LaunchError("mid"), root);
    const leaf = graph.insert(new LaunchError("leaf"), mid);
    expect(graph.root(leaf), "the root is the first failure of the chain").toBe(root);
    expect(graph.chain(leaf), "chain lists root first, the failure itself last").toEqual([root, mid, leaf]);
    expect(graph.root(root), "a failure without cause is its own root").toBe(root);
  });

  it("prune removes a failure only when no bytes hold it and no live failure names it as cause", () => {
    const graph = new ErrorGraph();
    const root = graph.insert(new InjectedFaultError("root"));
    const leaf = graph.insert(new LaunchError("leaf"), root);
    graph.hold(leaf, 8);
    expect(graph.prune(root), "a cause of a live failure stays").toBe(false);
    expect(graph.prune(leaf), "bytes still hold the leaf").toBe(false);
    graph.unhold(leaf, 8);
    expect(graph.has(leaf), "the last byte going prunes the leaf").toBe(false);
    expect(graph.has(root), "the root, named by nothing now and holding nothing, goes with it").toBe(false);
    expect(graph.size).toBe(0);
  });

  it("a cause that still holds bytes survives its dependents", () => {
    const graph = new ErrorGraph();
    const root = graph.insert(new InjectedFaultError("root"));
    graph.hold(root, 4);
    const leaf = graph.insert(new LaunchError("leaf"), root);
    expect(graph.prune(leaf), "a leaf holding nothing is pruned").toBe(true);
    expect(graph.has(root), "the root still holds 4 bytes").toBe(true);
    expect(graph.bytesHeld(root)).toBe(4);
  });

  it("counts bytes across holds and refuses to unhold more than held", () => {
    const graph = new ErrorGraph();
    const f = graph.insert(new InjectedFaultError("f"));
    graph.hold(f, 10);
    graph.hold(f, 6);
    graph.unhold(f, 10);
    expect(graph.bytesHeld(f)).toBe(6);
    expect(() => graph.unhold(f, 7), "unholding more than held is an internal bug").toThrow(/internal/);
  });

  it("insert with a cause that is not live is an internal bug", () => {
    const graph = new ErrorGraph();
    const f = graph.insert(new InjectedFaultError("f"));
    graph.prune(f);
    expect(() => graph.insert(new LaunchError("x"), f)).toThrow(/not a live failure/);
  });
});
