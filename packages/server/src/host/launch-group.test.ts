/**
 * Launch groups on the host server (`beginGroup`/`endGroup`): a group runs as a whole, or — when
 * one of its kernels does not compile, a fault is injected into one of its launches, or it reads
 * tainted bytes from outside — its fallback runs in its place, outside the server's guard, and
 * only the writes the fallback could not produce are tainted (issue 9).
 */
import { StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import type { FallbackGap, LaunchFallback } from "../compute-server.js";
import { InjectedFaultError, LaunchError, ServerError, ValidationError } from "../errors/server-error.js";
import { DummyKernels, DummyServer, reads, writes } from "../testing/dummy-server.js";

const S0 = StreamId.DEFAULT;

/** A fallback that records what the server did with it and runs `body` when asked to. */
function recordingFallback(body: (failure: ServerError) => readonly FallbackGap[] = () => []): LaunchFallback & { calls: string[]; failure: ServerError | undefined } {
  const calls: string[] = [];
  const fallback = {
    calls,
    failure: undefined as ServerError | undefined,
    run(failure: ServerError) {
      calls.push("run");
      fallback.failure = failure;
      return body(failure);
    },
    discard() {
      calls.push("discard");
    },
  };
  return fallback;
}

describe("HostComputeServer launch groups", () => {
  it("a group whose launches can all run runs as recorded, in order, and discards its fallback", () => {
    const server = new DummyServer();
    const a = server.createF32([1, 2], S0);
    const t = server.empty(8, S0);
    const out = server.empty(8, S0);
    const fallback = recordingFallback();
    server.beginGroup(S0, fallback);
    server.copy(a.binding(), t.binding(), S0);
    server.add(t.binding(), a.binding(), out.binding(), S0);
    expect(server.stats().launched, "nothing runs before the group ends").toBe(0);
    server.endGroup(S0, "submit");
    expect(fallback.calls).toEqual(["discard"]);
    expect(server.readF32(out.binding(), S0)).toEqual([2, 4]);
    expect(server.stats().fallbacks).toBe(0);
  });

  it("an injected fault on a launch of the group: none of its launches runs, the fallback does and may launch", () => {
    const server = new DummyServer();
    const a = server.createF32([1, 2], S0);
    const out = server.createF32([0, 0], S0);
    const fallback = recordingFallback(() => {
      // The fallback launches through the same server: the guard is released for it.
      server.fill(out.binding(), 7, S0);
      return [];
    });
    server.injectFault({ launch: 2 });
    server.beginGroup(S0, fallback);
    server.copy(a.binding(), out.binding(), S0);
    server.add(a.binding(), a.binding(), out.binding(), S0);
    server.endGroup(S0, "submit");
    expect(fallback.calls).toEqual(["run"]);
    expect(fallback.failure).toBeInstanceOf(InjectedFaultError);
    expect(server.readF32(out.binding(), S0), "the fallback's fill, not the group's copy and add").toEqual([7, 7]);
    expect(server.stats().fallbacks).toBe(1);
  });

  it("a kernel that does not compile makes the group fall back; gaps are tainted with their error", () => {
    const server = new DummyServer();
    const a = server.createF32([1, 2], S0);
    const out = server.empty(8, S0);
    const other = server.empty(8, S0);
    const gapError = new LaunchError("this output could not be recomputed");
    const fallback = recordingFallback(() => {
      server.fill(other.binding(), 3, S0);
      return [{ binding: out.binding(), error: gapError }];
    });
    server.beginGroup(S0, fallback);
    server.launch(DummyKernels.invalid("no"), [1, 1, 1], [reads(a.binding()), writes(out.binding())], S0, "execute");
    server.endGroup(S0, "submit");
    expect(fallback.failure).toBeInstanceOf(ValidationError);
    expect(() => server.readF32(out.binding(), S0)).toThrow(/this output could not be recomputed/);
    expect(server.readF32(other.binding(), S0)).toEqual([3, 3]);
  });

  it("a group reading tainted bytes from outside falls back; tainted bytes it writes itself first do not count", () => {
    const server = new DummyServer();
    const bad = server.empty(8, S0);
    server.injectFault({ launch: 1 });
    server.fill(bad.binding(), 1, S0); // fails: `bad` is tainted
    const fromOutside = recordingFallback();
    server.beginGroup(S0, fromOutside);
    server.add(bad.binding(), bad.binding(), server.empty(8, S0).binding(), S0);
    server.endGroup(S0, "submit");
    expect(fromOutside.calls, "an input tainted outside the group").toEqual(["run"]);

    const rewritten = recordingFallback();
    const out = server.empty(8, S0);
    server.beginGroup(S0, rewritten);
    server.fill(bad.binding(), 2, S0); // the group writes `bad` first…
    server.add(bad.binding(), bad.binding(), out.binding(), S0); // …then reads it
    server.endGroup(S0, "submit");
    expect(rewritten.calls, "bytes the group writes before reading are the group's own").toEqual(["discard"]);
    expect(server.readF32(out.binding(), S0)).toEqual([4, 4]);
  });

  it("an aborted group drops its launches and discards its fallback; groups do not nest", () => {
    const server = new DummyServer();
    const out = server.createF32([5, 5], S0);
    const fallback = recordingFallback();
    server.beginGroup(S0, fallback);
    expect(() => server.beginGroup(S0, recordingFallback()), "a second group on the same stream").toThrow(LaunchError);
    server.fill(out.binding(), 9, S0);
    server.endGroup(S0, "abort");
    expect(fallback.calls).toEqual(["discard"]);
    expect(server.readF32(out.binding(), S0), "the aborted fill never ran").toEqual([5, 5]);
    expect(() => server.endGroup(S0, "submit"), "no group is open any more").toThrow(LaunchError);
  });

  it("groups open on several streams at once stay apart, whichever ends first; their pins are given back", () => {
    const server = new DummyServer();
    const streams = [StreamId.of(1), StreamId.of(2), StreamId.of(3)];
    const outs = streams.map((s) => server.createF32([0, 0], s));
    const fallbacks = streams.map(() => recordingFallback());
    streams.forEach((s, k) => server.beginGroup(s, fallbacks[k]!));
    streams.forEach((s, k) => server.fill(outs[k]!.binding(), k + 1, s));
    expect(server.stats().launched, "each launch waits in its own group").toBe(0);
    // The second and first end before the last: the slot and the map both hand back the right group.
    server.endGroup(streams[1]!, "submit");
    server.endGroup(streams[0]!, "abort");
    expect(() => server.endGroup(streams[0]!, "submit"), "ended").toThrow(LaunchError);
    server.endGroup(streams[2]!, "submit");
    expect(fallbacks.map((f) => f.calls)).toEqual([["discard"], ["discard"], ["discard"]]);
    expect(streams.map((s, k) => server.readF32(outs[k]!.binding(), s))).toEqual([[0, 0], [2, 2], [3, 3]]);
    for (const out of outs) out.release();
    expect(server.memoryUsage().liveAllocations, "no pin outlives its group").toBe(0);
  });
});
