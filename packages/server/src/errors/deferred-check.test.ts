/**
 * Deferred checks in the error graph and the failure store: a kernel that reports a failure
 * through a status word (a GPU gather's out-of-range index) claims its writes with a *pending*
 * check; work computed from them meanwhile inherits it; settling the check fails or clears the
 * whole family at once (docs/semantics.md, "Index errors").
 */
import { StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import type { AllocationId, BufferBinding } from "../binding.js";
import { ByteRangeClaims } from "../stream/stream-memory.js";
import { StreamPool } from "../stream/stream-pool.js";
import { ErrorGraph } from "./error-graph.js";
import { FailureStore } from "./failure-store.js";
import { IndexOutOfRangeError, InjectedFaultError, LaunchError } from "./server-error.js";

const bind = (allocation: number, offset = 0, size = 16): BufferBinding => ({ allocation: allocation as AllocationId, offset, size, stream: StreamId.of(0) });

function store(): FailureStore<ByteRangeClaims> {
  const pool = new StreamPool({ create: () => new ByteRangeClaims() }, 2, 0);
  pool.getMut(StreamId.of(0));
  return new FailureStore(pool);
}

describe("ErrorGraph deferred checks", () => {
  it("a derived failure is pending while a check is, failed once one fails, passed once all pass", () => {
    const graph = new ErrorGraph();
    const a = graph.insertCheck(new LaunchError("a pending"));
    const b = graph.insertCheck(new LaunchError("b pending"));
    const d = graph.insertDerived(new LaunchError("d"), [a, b]);
    expect([graph.state(a), graph.state(d)]).toEqual(["pending", "pending"]);
    graph.settle(a);
    expect(graph.state(d), "one check passed, the other still pending").toBe("pending");
    graph.settle(b, new IndexOutOfRangeError("gather", 5, 3, [3], 0));
    expect(graph.state(d), "a failed check fails everything derived from it").toBe("failed");
    expect(graph.chain(d), "the chain runs from the failed check to the derived failure").toEqual([b, d]);
    expect(graph.get(b)?.kind, "the settled error replaces the placeholder").toBe("index-out-of-range");
  });

  it("a derived failure names checks only, and pruning walks every cause", () => {
    const graph = new ErrorGraph();
    const a = graph.insertCheck(new LaunchError("a"));
    const b = graph.insertCheck(new LaunchError("b"));
    const d = graph.insertDerived(new LaunchError("d"), [a, b]);
    expect(() => graph.insertDerived(new LaunchError("x"), [d]), "a derived failure is never a cause of another").toThrow(/not a check/);
    expect(graph.prune(d), "no byte holds d").toBe(true);
    expect(graph.size, "a and b went with it (nothing held them)").toBe(0);
    graph.settle(a);
    expect(graph.size, "settling a pruned check is ignored").toBe(0);
  });
});

describe("FailureStore deferred checks", () => {
  it("pending bytes neither fail a read nor skip a launch; work on them inherits the check and fails with it", () => {
    const s = store();
    const out = bind(1);
    const check = s.suspect(new LaunchError("gather: not read back yet"), [out]);
    expect(check).toBeDefined();
    expect(s.checkReads([out]), "pending is not failed: a launch reading it runs").toBeUndefined();
    expect(s.readError([out]), "and a read issued now is not rejected (the driver makes it wait)").toBeUndefined();
    const pending = s.pendingOf([out, bind(9)]);
    expect(pending, "the check behind the bytes").toEqual([check]);
    // A launch reads `out` and writes `y`; then another reads `y` and writes `z`.
    const y = bind(2);
    s.writtenFrom(pending, [y], "kernel 'add'");
    const z = bind(3);
    const fromY = s.pendingOf([y]);
    expect(fromY, "the derived claim names the check itself, not the intermediate").toEqual([check]);
    s.writtenFrom(fromY, [z], "kernel 'exp'");
    s.settle(check as never, new IndexOutOfRangeError("gather", 5, 3, [3], 0));
    for (const b of [out, y, z]) {
      const error = s.readError([b]);
      expect(error?.root.kind, `allocation ${b.allocation} fails with the gather's error as root cause`).toBe("index-out-of-range");
    }
    expect(s.checkReads([z]), "a launch reading z is now skipped").toBeDefined();
  });

  it("work written in place over a check's only bytes keeps the check: it fails with it later", () => {
    const s = store();
    const g = bind(1);
    const check = s.suspect(new LaunchError("gather: not read back yet"), [g]);
    // `g.add(1)` reusing g's bytes: it reads and writes the same allocation.
    s.writtenFrom(s.pendingOf([g]), [g], "kernel 'add' (in place)");
    expect(s.pendingOf([g]), "the check survives losing its last byte").toEqual([check]);
    s.settle(check as never, new IndexOutOfRangeError("gather", 9, 3, [3], 0));
    expect(s.readError([g])?.root.kind, "the in-place output fails with the gather's error").toBe("index-out-of-range");
    s.written([g]);
    expect(s.graph.size, "rewritten again, everything is pruned").toBe(0);
  });

  it("a passed check leaves every byte clean; rewriting bytes drops their claim", () => {
    const s = store();
    const out = bind(1);
    const check = s.suspect(new LaunchError("pending"), [out]);
    const y = bind(2);
    s.writtenFrom(s.pendingOf([out]), [y]);
    s.settle(check as never);
    expect(s.readError([out]), "out is clean").toBeUndefined();
    expect(s.readError([y]), "so is what was computed from it").toBeUndefined();
    expect(s.pendingOf([out, y]), "nothing is pending").toEqual([]);
    s.written([out, y]);
    expect(s.graph.size, "rewritten bytes release the claims, and the graph prunes").toBe(0);
  });

  it("checked work computed from checked work keeps the earlier check: the earlier failure reaches the later output", () => {
    // gather(gather(x, bad), good): the second launch ran on pending bytes, inherited the first
    // check, then its own status check claims the same output.
    for (const second of ["passes", "fails"] as const) {
      const s = store();
      const g1 = bind(1);
      const first = s.suspect(new LaunchError("gather 1 pending"), [g1]);
      const g2 = bind(2);
      s.writtenFrom(s.pendingOf([g1]), [g2], "gather 2");
      const own = s.suspect(new LaunchError("gather 2 pending"), [g2], "gather 2");
      expect(s.pendingOf([g2]), "g2 waits on both checks, the earlier first").toEqual([first, own]);
      s.settle(own as never, second === "fails" ? new IndexOutOfRangeError("gather", 9, 3, [3], 0) : undefined);
      s.settle(first as never, new IndexOutOfRangeError("gather", 5, 3, [3], 0));
      const error = s.readError([g2]);
      expect(error?.root.kind, `the second gather's own check ${second}: g2 still fails`).toBe("index-out-of-range");
      expect((error?.root as IndexOutOfRangeError | undefined)?.index, "the root cause is the first gather's index, as on the CPU").toBe(5);
      s.written([g1, g2]);
      expect(s.graph.size, "rewritten bytes release every claim").toBe(0);
    }
  });

  it("checked work on clean bytes still gets a plain check, and a plain failure on its writes is kept", () => {
    const s = store();
    const out = bind(1);
    const check = s.suspect(new LaunchError("pending"), [out]);
    expect(s.pendingOf([out])).toEqual([check]);
    const failed = bind(2);
    s.failLaunch(new InjectedFaultError("boom"), [failed]);
    s.suspect(new LaunchError("pending"), [failed]);
    expect(s.readError([failed])?.root.kind, "the failure stays").toBe("injected");
  });

  it("a failed claim still wins over a pending one: the launch is skipped as before", () => {
    const s = store();
    const a = bind(1);
    s.suspect(new LaunchError("pending"), [a]);
    const b = bind(2);
    s.failLaunch(new InjectedFaultError("boom"), [b]);
    expect(s.checkReads([a, b])?.needed, "the failed input is found").toEqual(b);
  });
});
