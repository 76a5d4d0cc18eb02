import { StreamId } from "@weft/environment";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "../client/client.js";
import { RecordingServer } from "../testing/recording-server.js";
import { setProcessMode } from "./process-mode.js";
import type { ProcessMode } from "./process-mode.js";
import { STREAM_MODES, StreamModeOverride } from "./stream-mode.js";
import type { StreamMode } from "./stream-mode.js";

afterEach(() => {
  setProcessMode("execute");
  expect(STREAM_MODES.size, "every test disposes the overrides it opens").toBe(0);
});

/** Every ordering of `items`. */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

describe("StreamModeOverride (docs/concepts.md#streammode-overrides)", () => {
  const processModes: Array<[ProcessMode, StreamMode]> = [
    ["execute", "execute"],
    ["compile-and-autotune", "discard"],
  ];
  for (const [processMode, fallback] of processModes) {
    it(`three nested overrides dropped in every order: the newest live one decides (process mode ${processMode})`, () => {
      setProcessMode(processMode);
      const client = new Client(new RecordingServer()).withStream(StreamId.allocate());
      const modes: StreamMode[] = ["discard", "execute", "discard"];
      for (const order of permutations([0, 1, 2])) {
        const overrides = modes.map((mode) => new StreamModeOverride(mode, client));
        expect(client.mode(), `all three live: the newest (#2) decides`).toBe(modes[2]);
        const live = new Set([0, 1, 2]);
        for (const index of order) {
          overrides[index]?.dispose();
          live.delete(index);
          const newest = Math.max(...live);
          const expected = live.size === 0 ? fallback : modes[newest];
          expect(client.mode(), `order ${order.join(",")}: after dropping #${index}, live ${[...live].join(",") || "none"}`).toBe(expected);
        }
      }
    });
  }

  it("an override on one device leaves the same stream of every other device alone", () => {
    const stream = StreamId.allocate();
    const a = new Client(new RecordingServer("a"), { stream });
    const b = new Client(new RecordingServer("b"), { stream });
    expect(a.service, "two servers are two services").not.toBe(b.service);
    using _discardA = new StreamModeOverride("discard", a);
    expect(a.mode(), "the overridden device's stream is discarded").toBe("discard");
    expect(b.mode(), "stream ids are the process's: the same stream of device B keeps its mode").toBe("execute");
  });

  it("clients of one server share its service, so an override through one holds for the others", () => {
    const server = new RecordingServer();
    const stream = StreamId.allocate();
    const first = new Client(server, { stream });
    const second = new Client(server, { stream });
    using _o = new StreamModeOverride("discard", first);
    expect(second.mode(), "same (service, stream): the override applies").toBe("discard");
  });

  it("a client bound to its own stream does not follow the calling code's stream", () => {
    const server = new RecordingServer();
    const thread = new Client(server); // follows StreamId.current()
    const own = thread.withStream(StreamId.allocate());
    const callerStream = StreamId.allocate();
    StreamId.executes(callerStream, () => {
      using _o = new StreamModeOverride("discard", thread);
      expect(thread.mode(), "the calling code's stream is discarded").toBe("discard");
      expect(own.mode(), "a client bound to its own stream keeps its own stream's mode").toBe("execute");
    });
    using _ownOverride = new StreamModeOverride("discard", own);
    StreamId.executes(callerStream, () => {
      expect(thread.mode(), "an override on the bound stream never reaches the calling code's stream").toBe("execute");
    });
  });

  it("an unbound client's override holds on the stream current at creation, not the one current later", () => {
    const client = new Client(new RecordingServer());
    const s1 = StreamId.allocate();
    const s2 = StreamId.allocate();
    const o = StreamId.executes(s1, () => new StreamModeOverride("discard", client));
    try {
      expect(StreamId.executes(s1, () => client.mode()), "launches on s1 follow it").toBe("discard");
      expect(StreamId.executes(s2, () => client.mode()), "launches on s2 do not").toBe("execute");
    } finally {
      o.dispose();
    }
  });

  it("fast path: mode() never touches the entry list while no override sets the non-default mode", () => {
    const server = new RecordingServer();
    const client = new Client(server).withStream(StreamId.allocate());
    const before = STREAM_MODES.scans;
    {
      using _sameAsDefault = new StreamModeOverride("execute", client);
      using _nested = new StreamModeOverride("execute", client);
      for (let i = 0; i < 10; i++) client.mode();
      client.launch({ key: "noop", run: () => undefined }, [1, 1, 1], []);
      expect(STREAM_MODES.scans, "overrides setting the default are answered from the live counts").toBe(before);
    }
    const other = new Client(new RecordingServer("other")).withStream(StreamId.allocate());
    using _discardElsewhere = new StreamModeOverride("discard", other);
    client.mode();
    expect(STREAM_MODES.scans, "once an override sets the non-default mode, the list is searched").toBe(before + 1);
    setProcessMode("compile-and-autotune");
    const scans = STREAM_MODES.scans;
    other.mode();
    expect(STREAM_MODES.scans, "under compile-and-autotune 'discard' is the default: no search").toBe(scans);
  });

  it("disposing twice is a no-op and `using` disposes at scope end", () => {
    const client = new Client(new RecordingServer()).withStream(StreamId.allocate());
    const outer = new StreamModeOverride("discard", client);
    {
      using _inner = new StreamModeOverride("execute", client);
      expect(client.mode(), "the newest (inner) decides").toBe("execute");
    }
    expect(client.mode(), "`using` dropped the inner override at scope end").toBe("discard");
    const middle = new StreamModeOverride("execute", client);
    middle.dispose();
    middle.dispose();
    expect(middle.disposed, "disposed").toBe(true);
    expect(client.mode(), "a second dispose never removes another live override").toBe("discard");
    outer.dispose();
    expect(client.mode(), "all gone: the process mode's default").toBe("execute");
  });
});
