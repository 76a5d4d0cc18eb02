/**
 * `Client.group`: the launches `fn` records form one launch group with a fallback (issue 9). The
 * fallback may launch through the same client although the server calls it from inside a
 * guarded call; outside `execute` mode the fallback is discarded and the launches go their usual
 * way; a throwing `fn` aborts the group.
 */
import { StreamId } from "@weft/environment";
import { DummyKernels, DummyServer, reads, writes } from "@weft/server/testing";
import type { LaunchFallback } from "@weft/server";
import { describe, expect, it } from "vitest";
import { withProcessMode } from "../mode/process-mode.js";
import { Client } from "./client.js";

function fallbackLaunching(body: () => void): LaunchFallback & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    run() {
      calls.push("run");
      body();
      return [];
    },
    discard() {
      calls.push("discard");
    },
  };
}

describe("Client.group", () => {
  it("a group that falls back runs its fallback, which launches through the same client", () => {
    const server = new DummyServer();
    const client = new Client(server, { stream: StreamId.DEFAULT });
    const out = server.createF32([0, 0], StreamId.DEFAULT);
    const fallback = fallbackLaunching(() => client.launch(DummyKernels.fill(4), [1, 1, 1], [writes(out.binding())]));
    client.group(fallback, () => client.launch(DummyKernels.invalid(), [1, 1, 1], [writes(out.binding())]));
    expect(fallback.calls).toEqual(["run"]);
    expect(server.readF32(out.binding(), StreamId.DEFAULT), "the fallback's launch ran (no ReentrancyError)").toEqual([4, 4]);
  });

  it("under compile-and-autotune the fallback is discarded and the launch compiled only", () => {
    const server = new DummyServer();
    const client = new Client(server, { stream: StreamId.DEFAULT });
    const out = server.createF32([1, 1], StreamId.DEFAULT);
    const fallback = fallbackLaunching(() => undefined);
    withProcessMode("compile-and-autotune", () => client.group(fallback, () => client.launch(DummyKernels.fill(9), [1, 1, 1], [writes(out.binding())])));
    expect(fallback.calls).toEqual(["discard"]);
    expect(server.readF32(out.binding(), StreamId.DEFAULT)).toEqual([1, 1]);
  });

  it("a throwing fn aborts the group: its launches never run, the fallback is discarded", () => {
    const server = new DummyServer();
    const client = new Client(server, { stream: StreamId.DEFAULT });
    const a = server.createF32([1, 2], StreamId.DEFAULT);
    const out = server.createF32([0, 0], StreamId.DEFAULT);
    const fallback = fallbackLaunching(() => undefined);
    expect(() =>
      client.group(fallback, () => {
        client.launch(DummyKernels.copy, [1, 1, 1], [reads(a.binding()), writes(out.binding())]);
        throw new Error("the block failed half-way");
      }),
    ).toThrow(/half-way/);
    expect(fallback.calls).toEqual(["discard"]);
    expect(server.readF32(out.binding(), StreamId.DEFAULT)).toEqual([0, 0]);
    const later = fallbackLaunching(() => undefined);
    client.group(later, () => client.launch(DummyKernels.copy, [1, 1, 1], [reads(a.binding()), writes(out.binding())]));
    expect(later.calls, "the stream has no group left open").toEqual(["discard"]);
    expect(server.readF32(out.binding(), StreamId.DEFAULT)).toEqual([1, 2]);
  });
});
