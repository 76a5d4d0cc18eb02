/**
 * Read coalescing on a real device (Dawn on Mesa's software GLES here): the reads of one turn cost
 * one copy submit and one `mapAsync`, each still gets its own bytes and its own error, and order
 * (work issued before a read is seen, work issued after it is not) holds across streams.
 */
import { StreamId } from "@weft/environment";
import { DeviceLostError, TaintedReadError, ValidationError } from "@weft/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestWebGpuDevice, type WebGpuDevice } from "../device/request-device.js";
import { asU32, brokenKernel, doubleKernel, incrementKernel, requestTestDevice, u32Bytes } from "../testing/gpu-test-support.js";
import { planReadCopies, readBytes, type ReadSource } from "./read-batch.js";
import { WebGpuServer } from "./webgpu-server.js";

const S0 = StreamId.of(0);
const S1 = StreamId.of(1);

const increment = incrementKernel("test/read-batch/increment");
const double = doubleKernel("test/read-batch/double");
/** Does not compile. */
const broken = brokenKernel("test/read-batch/broken", "nowhere");

let gpu: WebGpuDevice;
let server: WebGpuServer;

beforeAll(async () => {
  gpu = await requestTestDevice();
  // These tests count the submits of `turn` coalescing (`batch`, the default, is tested in webgpu-server.test.ts).
  server = new WebGpuServer(gpu.device, { readSubmit: "turn" });
});

afterAll(() => gpu?.device.destroy());

describe("read coalescing", () => {
  it("64 reads issued together cost one submit and one mapAsync, and each gets its own bytes", async () => {
    // Odd lengths put every range at an unaligned end, so the staging layout must pad each one.
    const datas = Array.from({ length: 64 }, (_, i) => Uint8Array.from({ length: 1000 + 13 * i }, (_, k) => (k * 31 + i * 7) & 0xff));
    const handles = datas.map((d) => server.create(d, S0));
    await server.sync(S0);
    for (let round = 0; round < 2; round++) {
      const before = server.stats();
      const results = await Promise.all(handles.map((h) => server.read([h.binding()], S0)));
      const after = server.stats();
      results.forEach(([bytes], i) => expect(bytes, `read ${i} returns exactly the bytes written to its own handle`).toEqual(datas[i]));
      expect(after.readMaps - before.readMaps, "the 64 reads of one turn share one mapAsync").toBe(1);
      expect(after.submits - before.submits, "with no pending work, the batch is exactly one submit (its copies)").toBe(1);
      expect(after.readBatches - before.readBatches, "one batch").toBe(1);
      expect(after.reads - before.reads, "every read was accepted").toBe(64);
      if (round === 1) expect(after.stagingCreated, "the second round reuses the pooled staging buffer").toBe(before.stagingCreated);
    }
    const buffers = new Set(
      (await Promise.all(handles.slice(0, 2).map((h) => server.read([h.binding()], S0)))).map(([b]) => b?.buffer),
    );
    expect(buffers.size, "results never share an ArrayBuffer, so one can be kept without retaining the others").toBe(2);
    for (const h of handles) h.release();
  });

  it("a tainted read in a batch rejects alone; the others resolve with their bytes", async () => {
    const a = server.create(u32Bytes([1, 2, 3, 4]), S0);
    const bad = server.empty(16, S0);
    const clean = [server.create(u32Bytes([10, 11]), S0), server.create(u32Bytes([20, 21, 22]), S0)];
    server.launch(broken, [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: bad.binding(), access: "write" }], S0, "execute");
    const before = server.stats();
    const reads = [
      server.read([clean[0]!.binding()], S0),
      server.read([bad.binding()], S0).then(
        () => "resolved",
        (e: unknown) => e,
      ),
      server.read([clean[1]!.binding()], S0),
    ];
    const [first, badOutcome, last] = await Promise.all(reads);
    expect(badOutcome, "the read of the broken kernel's output rejects with its taint").toBeInstanceOf(TaintedReadError);
    expect((badOutcome as TaintedReadError).root, "whose root is the compile error").toBeInstanceOf(ValidationError);
    expect(asU32((first as Uint8Array[])[0]), "a clean read before it in the batch resolves").toEqual([10, 11]);
    expect(asU32((last as Uint8Array[])[0]), "a clean read after it in the batch resolves").toEqual([20, 21, 22]);
    expect(server.stats().readMaps - before.readMaps, "the clean reads still shared one map").toBe(1);
    for (const h of [a, bad, ...clean]) h.release();
  });

  it("reads on two streams in one batch see each stream's pending work, including a producer on another stream", async () => {
    const x = server.create(u32Bytes([1, 2, 3, 4]), S0);
    const y = server.create(u32Bytes([100, 200]), S1);
    const z = server.empty(16, S1);
    await Promise.all([server.sync(S0), server.sync(S1)]);
    server.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    server.launch(increment, [1, 1, 1], [{ binding: y.binding(), access: "read-write" }], S1, "execute");
    // z (S1's memory) is produced by a launch on S0, from S0's pending increment of x.
    server.launch(double, [1, 1, 1], [{ binding: x.binding(), access: "read" }, { binding: z.binding(), access: "write" }], S0, "execute");
    const before = server.stats();
    const [[xs], [ys], [zs]] = await Promise.all([server.read([x.binding()], S0), server.read([y.binding()], S1), server.read([z.binding()], S1)]);
    const after = server.stats();
    expect(asU32(xs), "S0's read sees S0's pending increment").toEqual([2, 3, 4, 5]);
    expect(asU32(ys), "S1's read sees S1's pending increment").toEqual([101, 201]);
    expect(asU32(zs), "S1's read of bytes produced on S0 sees that producer (and what it read)").toEqual([4, 6, 8, 10]);
    expect(after.readMaps - before.readMaps, "reads of both streams share one map").toBe(1);
    expect(after.submits - before.submits, "one shared submit: both streams' work, then the copies").toBe(1);
    expect(after.sharedSubmitParts - before.sharedSubmitParts, "it carried both streams' work").toBe(2);
    for (const h of [x, y, z]) h.release();
  });

  it("eight streams reading shared bytes keep recording (readers never flush each other) and share one submit", async () => {
    const streams = Array.from({ length: 8 }, (_, i) => StreamId.of(10 + i));
    const w = server.create(u32Bytes([3, 5, 7, 9]), S0);
    const outs = streams.map((s) => server.empty(16, s));
    await server.sync(S0);
    const before = server.stats();
    streams.forEach((s, i) => {
      server.launch(double, [1, 1, 1], [{ binding: w.binding(), access: "read" }, { binding: outs[i]!.binding(), access: "write" }], s, "execute");
      server.launch(increment, [1, 1, 1], [{ binding: outs[i]!.binding(), access: "read-write" }], s, "execute");
    });
    expect(server.stats().submits - before.submits, "nothing is submitted while the streams only share reads").toBe(0);
    const results = await Promise.all(streams.map((s, i) => server.read([outs[i]!.binding()], s)));
    const after = server.stats();
    results.forEach(([bytes], i) => expect(asU32(bytes), `stream ${i}'s output`).toEqual([7, 11, 15, 19]));
    expect(after.submits - before.submits, "one submit for the eight streams' work and the copies").toBe(1);
    expect(after.sharedSubmitParts - before.sharedSubmitParts, "eight streams' work in it").toBe(8);
    expect(after.readMaps - before.readMaps, "one map").toBe(1);
    for (const h of [w, ...outs]) h.release();
  });

  it("a later writer on another stream runs after the pending readers, in the one shared encoder, with no submit between (their reads see the old bytes)", async () => {
    const w = server.create(u32Bytes([1, 2]), S0);
    const seen = server.empty(8, S1);
    await server.sync(S0);
    server.launch(double, [1, 1, 1], [{ binding: w.binding(), access: "read" }, { binding: seen.binding(), access: "write" }], S1, "execute");
    const before = server.stats();
    server.launch(increment, [1, 1, 1], [{ binding: w.binding(), access: "read-write" }], S0, "execute");
    expect(server.stats().submits - before.submits, "S0's write is recorded after S1's read in the same encoder: nothing to submit first").toBe(0);
    const [[seenBytes], [wBytes]] = await Promise.all([server.read([seen.binding()], S1), server.read([w.binding()], S0)]);
    expect(asU32(seenBytes), "S1's launch read w before the increment").toEqual([2, 4]);
    expect(asU32(wBytes), "w was incremented after it").toEqual([2, 3]);
    for (const h of [w, seen]) h.release();
  });

  it("a failed kernel on one stream taints only its outputs; another stream's work in the same shared submit reads clean", async () => {
    const a = server.create(u32Bytes([4, 4]), S0);
    const good = server.empty(8, S0);
    const bad = server.empty(8, S1);
    await server.sync(S0);
    server.launch(double, [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: good.binding(), access: "write" }], S0, "execute");
    server.launch(broken, [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: bad.binding(), access: "write" }], S1, "execute");
    const [goodOutcome, badOutcome] = await Promise.all([
      server.read([good.binding()], S0),
      server.read([bad.binding()], S1).then(
        () => "resolved",
        (e: unknown) => e,
      ),
    ]);
    expect(asU32((goodOutcome as Uint8Array[])[0]), "the clean stream's output").toEqual([8, 8]);
    expect(badOutcome, "the failed stream's output rejects with its taint").toBeInstanceOf(TaintedReadError);
    for (const h of [a, good, bad]) h.release();
  });

  it("a read sees a launch issued before it in the turn, and not one issued after it", async () => {
    const x = server.create(u32Bytes([5, 5, 5, 5]), S0);
    await server.sync(S0);
    const before = server.stats();
    server.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    const first = server.read([x.binding()], S0);
    // Same turn, same bytes: this launch must not leak into `first` (the batch is sealed first).
    server.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    const second = server.read([x.binding()], S0);
    server.write(x.binding(), u32Bytes([9, 9, 9, 9]), S0);
    const third = server.read([x.binding()], S0);
    const [[a], [b], [c]] = await Promise.all([first, second, third]);
    expect(asU32(a), "the first read sees exactly the launch before it").toEqual([6, 6, 6, 6]);
    expect(asU32(b), "the second read sees both launches, not the write after it").toEqual([7, 7, 7, 7]);
    expect(asU32(c), "the third read sees the host write").toEqual([9, 9, 9, 9]);
    expect(server.stats().readBatches - before.readBatches, "each overwrite of read bytes seals the batch before it").toBe(3);
    x.release();
  });

  it("a handle released right after its read is issued still reads its own bytes, not a reuse of its slice", async () => {
    const x = server.create(u32Bytes([3, 1, 4, 1]), S0);
    const pending = server.read([x.binding()], S0);
    x.release();
    const reuse = server.create(u32Bytes([0, 0, 0, 0]), S0);
    server.launch(increment, [1, 1, 1], [{ binding: reuse.binding(), access: "read-write" }], S0, "execute");
    const [bytes] = await pending;
    expect(asU32(bytes), "the read's pin kept the slice from being reused before its copy").toEqual([3, 1, 4, 1]);
    const [after] = await server.read([reuse.binding()], S0);
    expect(asU32(after), "the new allocation works on its own slice").toEqual([1, 1, 1, 1]);
    reuse.release();
  });
});

describe("read coalescing and device loss", () => {
  it("device loss rejects every read of a batch, before and after its copies were submitted", async () => {
    const own = await requestWebGpuDevice({ backend: "auto" });
    const lossy = new WebGpuServer(own.device);
    const handles = [1, 2, 3].map((v) => lossy.create(u32Bytes([v, v]), S0));
    const submitted = handles.map((h) => lossy.read([h.binding()], S0));
    await Promise.resolve(); // the batch is sealed: copies submitted, map pending
    const open = handles.map((h) => lossy.read([h.binding()], S0));
    own.device.destroy();
    const outcomes = await Promise.allSettled([...submitted, ...open]);
    for (const [i, o] of outcomes.entries()) {
      expect(o.status, `read ${i} cannot complete once the device is lost`).toBe("rejected");
      if (o.status === "rejected") expect(o.reason, `read ${i} rejects with DeviceLostError`).toBeInstanceOf(DeviceLostError);
    }
  });
});

describe("planReadCopies", () => {
  /** A stand-in buffer: the planner only reads `size` and uses identity. */
  const fake = (size: number): GPUBuffer => ({ size }) as unknown as GPUBuffer;

  it("aligns every copy to 4 bytes and points each binding at its own bytes", () => {
    const a = fake(64);
    const b = fake(64);
    const reads: ReadSource[][] = [[{ buffer: a, offset: 6, size: 5 }], [{ buffer: b, offset: 0, size: 3 }, { buffer: a, offset: 32, size: 8 }]];
    const plan = planReadCopies(reads, 1 << 20);
    expect(plan.groups.length, "everything fits one staging buffer").toBe(1);
    const copies = plan.groups[0]!.copies;
    for (const c of copies) {
      expect(c.sourceOffset % 4, "copyBufferToBuffer needs 4-byte aligned source offsets").toBe(0);
      expect(c.stagingOffset % 4, "and destination offsets").toBe(0);
      expect(c.length % 4, "and lengths").toBe(0);
    }
    expect(plan.placements, "each binding's bytes are where its copy put them, past the alignment skip").toEqual([
      [{ group: 0, at: 2, size: 5 }],
      [
        { group: 0, at: 8, size: 3 },
        { group: 0, at: 12, size: 8 },
      ],
    ]);
    expect(plan.groups[0]!.bytes, "bytes = the aligned spans, back to back").toBe(8 + 4 + 8);
  });

  it("copies a range read twice in one group once, and opens a new group when one is full", () => {
    const a = fake(1024);
    const same: ReadSource = { buffer: a, offset: 0, size: 256 };
    const plan = planReadCopies([[same], [same], [{ buffer: a, offset: 512, size: 256 }]], 512);
    expect(plan.groups[0]!.copies.length, "the second read of the same range reuses the first copy (2 copies for 3 reads)").toBe(2);
    expect(plan.placements[1], "both reads point at the same bytes").toEqual(plan.placements[0]);
    expect(plan.groups.length, "the third read fits the first group (256 + 256 ≤ 512)").toBe(1);
    const full = planReadCopies([[same], [{ buffer: a, offset: 256, size: 512 }]], 512);
    expect(full.groups.length, "a read that does not fit the current group opens the next").toBe(2);
    expect(full.placements[1]![0], "and lands at the start of it").toEqual({ group: 1, at: 0, size: 512 });
    expect(readBytes([{ buffer: a, offset: 2, size: 4 }]), "a read needs its aligned span").toBe(8);
  });
});
