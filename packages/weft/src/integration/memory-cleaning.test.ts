/**
 * Cross-stream memory cleaning through the public API (our equivalent of Burn's
 * `memory_cleaning.rs`, pitfalls docs/pitfalls.md#p1, docs/pitfalls.md#p2, docs/pitfalls.md#p7, docs/pitfalls.md#p14, docs/pitfalls.md#p17): a tensor shared from an owner stream to one
 * and to eight peer streams, re-shared onward, dropped in every order, read while the owner's work
 * is pending, shared before it is computed — for f32, i32, bool and sliced/permuted views, on the
 * CPU backend and on WebGPU. Every scenario checks the values and then that `memory()` is back to
 * zero tensors, handles and streams with `bytesInUse` at its baseline.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Deferred, Stream, type StreamPolicy, getStreamPolicy, setStreamPolicy } from "@weft/environment";
import { type Device, type Tensor, setDevice } from "@weft/tensor";
import { BACKENDS, blocksOn, freshStream, inspectorOf, macrotask, quiescentDevice, remoteBackend, settle, snapshot } from "./harness.js";
import { SOURCES, valuesOf } from "./sources.js";

// Remotely too: a router over two `weft serve` processes; every scenario also ends with nothing on either server.
describe.each([...BACKENDS, remoteBackend()])("memory cleaning on $name", (backend) => {
  let device: Device;
  let baseline = 0;
  let savedPolicy: StreamPolicy;

  beforeAll(async () => {
    device = await backend.create();
  });
  afterAll(async () => {
    await device.syncAll();
    await backend.teardown?.();
  });
  beforeEach(async () => {
    setDevice(device);
    savedPolicy = getStreamPolicy();
    setStreamPolicy("per-task");
    device = await quiescentDevice(device, backend);
    setDevice(device);
    baseline = snapshot(device).bytesInUse;
  });
  afterEach(() => {
    setStreamPolicy(savedPolicy);
  });

  /** The scenario's end: everything disposed → synced → nothing left. */
  async function expectClean(why: string): Promise<void> {
    expect(await settle(device, baseline), `${why}: once every tensor is disposed and every stream synced nothing may remain`).toEqual([]);
  }

  describe.each(SOURCES)("a $name tensor", (src) => {
    it("shared to one peer before it is computed, the owner dropping first, leaves nothing behind", async () => {
      const owner = freshStream();
      const peer = freshStream();
      const x = Stream.run(owner, () => src.make());
      const mine = Stream.run(peer, () => x.clone());
      const y = Stream.run(peer, () => src.peer(mine));
      Stream.run(owner, () => x.dispose());
      expect(await Stream.run(peer, () => valuesOf(y)), "the peer computes from the shared values after the owner let go").toEqual(src.peerValues);
      expect(await Stream.run(peer, () => valuesOf(mine)), "the peer's clone still reads the shared values").toEqual(src.values);
      Stream.run(peer, () => {
        y.dispose();
        mine.dispose();
      });
      await expectClean("owner first");
    });

    it("shared to one peer, the peer dropping first while its use is pending, leaves nothing behind", async () => {
      const owner = freshStream();
      const peer = freshStream();
      const x = Stream.run(owner, () => src.make());
      const y = Stream.run(peer, () => {
        const mine = x.clone();
        const out = src.peer(mine);
        mine.dispose(); // pending use becomes the consuming one
        return out;
      });
      expect(await Stream.run(peer, () => valuesOf(y)), "the peer's result").toEqual(src.peerValues);
      Stream.run(peer, () => y.dispose());
      expect(await Stream.run(owner, () => valuesOf(x)), "the owner's tensor is intact after the peer consumed its alias").toEqual(src.values);
      Stream.run(owner, () => x.dispose());
      await expectClean("peer first");
    });

    it("borrowed by a peer (no clone) and disposed by the owner while the peer's op is pending, leaves nothing behind", async () => {
      const owner = freshStream();
      const peer = freshStream();
      const x = Stream.run(owner, () => src.make());
      const y = Stream.run(peer, () => src.peer(x)); // a borrowing use: a shared view cached on x
      Stream.run(owner, () => x.dispose()); // the view is dropped on the peer stream, a foreign drop
      expect(await Stream.run(peer, () => valuesOf(y)), "the pending peer op still sees the values after the owner's dispose").toEqual(src.peerValues);
      Stream.run(peer, () => y.dispose());
      await expectClean("owner disposes while a borrowed view is pending");
    });

    it("with a peer's clone disposed from the owner's stream (a foreign drop of a pending input), leaves nothing behind", async () => {
      const owner = freshStream();
      const peer = freshStream();
      const x = Stream.run(owner, () => src.make());
      const mine = Stream.run(peer, () => x.clone());
      const y = Stream.run(peer, () => src.peer(mine));
      const before = Stream.run(peer, () => inspectorOf(device).queueLengths().get(peer));
      Stream.run(owner, () => mine.dispose()); // foreign: mine lives on the peer stream
      expect(inspectorOf(device).queueLengths().get(peer), "a foreign drop never enters the peer's pending segment").toBe(before);
      Stream.run(owner, () => x.dispose());
      expect(await Stream.run(peer, () => valuesOf(y)), "the peer's pending op still computes").toEqual(src.peerValues);
      Stream.run(peer, () => y.dispose());
      await expectClean("foreign drop of a pending input");
    });

    it("re-shared onward along a chain of four streams and dropped from the middle out, leaves nothing behind", async () => {
      const chain = [freshStream(), freshStream(), freshStream(), freshStream()];
      const held: Tensor[] = [Stream.run(chain[0]!, () => src.make())];
      for (let i = 1; i < chain.length; i++) held.push(Stream.run(chain[i]!, () => held[i - 1]!.clone()));
      const last = chain[chain.length - 1]!;
      const y = Stream.run(last, () => src.peer(held[held.length - 1]!));
      // Drop order: the middle links first (each from its own stream), then the owner.
      for (const i of [2, 1]) Stream.run(chain[i]!, () => held[i]!.dispose());
      Stream.run(chain[0]!, () => held[0]!.dispose());
      expect(await Stream.run(last, () => valuesOf(y)), "the end of the chain computes after every link above it died").toEqual(src.peerValues);
      expect(await Stream.run(last, () => valuesOf(held[3]!)), "the last alias still reads the values").toEqual(src.values);
      Stream.run(last, () => {
        y.dispose();
        held[3]!.dispose();
      });
      await expectClean("chained share");
    });

    it("read by a peer while the owner's later work is pending, leaves the owner's segment alone and nothing behind", async () => {
      const owner = freshStream();
      const peer = freshStream();
      const x = Stream.run(owner, () => src.make());
      await Stream.run(owner, () => x.data()); // materialised now
      const later = Stream.run(owner, () => src.peer(x)); // pending on the owner, references x
      const pending = inspectorOf(device).queueLengths().get(owner);
      const executedBefore = blocksOn(device, owner).length;
      expect(await Stream.run(peer, () => valuesOf(x)), "a foreign read of a computed tensor").toEqual(src.values);
      expect(inspectorOf(device).queueLengths().get(owner), "the foreign read did not run the owner's pending work").toBe(pending);
      expect(blocksOn(device, owner).length, "no block of the owner stream executed for the peer's read").toBe(executedBefore);
      Stream.run(owner, () => x.dispose());
      expect(await Stream.run(owner, () => valuesOf(later)), "the owner's pending work still computes").toEqual(src.peerValues);
      Stream.run(owner, () => later.dispose());
      await expectClean("foreign read while pending");
    });

    it("shared to eight concurrent tasks dropped in every order, with the owner dropping in the middle, leaves nothing behind", async () => {
      const owner = freshStream();
      const x = Stream.run(owner, () => src.make());
      const ownerGone = new Deferred<void>();
      let started = 0;
      const peers = Array.from({ length: 8 }, (_, i) =>
        Stream.spawn(async () => {
          // Half the peers clone (a view homed here), half borrow x directly (a view cached on x).
          const mine = i % 2 === 0 ? x.clone() : undefined;
          const y = src.peer(mine ?? x);
          if (i % 4 === 0) mine?.dispose(); // drop before the read: the pending use consumes it
          started++;
          if (started === 8) {
            // The owner lets go while every peer has pending work on its alias.
            Stream.run(owner, () => x.dispose());
            ownerGone.resolve();
          }
          await macrotask();
          if (i % 3 === 0) await ownerGone.promise;
          const values = await valuesOf(y);
          const own = mine !== undefined && !mine.disposed ? await valuesOf(mine) : undefined;
          await macrotask();
          y.dispose();
          mine?.dispose();
          return { values, own };
        }),
      );
      const results = await Promise.all(peers);
      for (const [i, r] of results.entries()) {
        expect(r.values, `peer ${i} computes from the shared tensor`).toEqual(src.peerValues);
        if (r.own !== undefined) expect(r.own, `peer ${i}'s clone reads the shared values`).toEqual(src.values);
      }
      await expectClean("eight concurrent peers");
    });

    it("shared to eight concurrent tasks that each re-share onward and outlive the owner, leaves nothing behind", async () => {
      const x = src.make(); // on the root task's stream
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          Stream.spawn(async () => {
            const mine = x.clone();
            await macrotask();
            // Re-share to a nested task (a grandpeer), which computes and drops the view it got.
            const nested = await Stream.spawn(async () => {
              const theirs = mine.clone();
              await macrotask();
              const y = src.peer(theirs);
              theirs.dispose();
              const v = await valuesOf(y);
              y.dispose();
              return v;
            });
            if (i % 2 === 0) await macrotask();
            const v = await valuesOf(mine);
            mine.dispose();
            return { nested, v };
          }),
        ),
      );
      x.dispose();
      for (const [i, r] of results.entries()) {
        expect(r.nested, `grandpeer of peer ${i}`).toEqual(src.peerValues);
        expect(r.v, `peer ${i}`).toEqual(src.values);
      }
      await expectClean("re-shared by concurrent tasks");
    });
  });
});
