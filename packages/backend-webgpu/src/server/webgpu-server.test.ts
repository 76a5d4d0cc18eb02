/**
 * The WebGPU server on a real device (Dawn on Mesa's software GLES here, Vulkan on a GPU
 * machine): ordering on the one queue, batching, cross-stream lifetimes, taint from compile
 * errors, discard mode, out-of-memory and device loss.
 */
import { StreamId } from "@weft/environment";
import { DeviceLostError, OutOfMemoryError, TaintedReadError, ValidationError } from "@weft/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestWebGpuDevice, type WebGpuDevice } from "../device/request-device.js";
import type { WgslKernel } from "../kernel.js";
import { asU32, brokenKernel, doubleKernel, incrementKernel, requestTestDevice, u32Bytes } from "../testing/gpu-test-support.js";
import { PipelineStore } from "./pipeline-store.js";
import { WebGpuServer } from "./webgpu-server.js";

const S0 = StreamId.of(0);
const S1 = StreamId.of(1);

/** `out[i] = a[i] + p.add` over u32. */
const addUniform: WgslKernel = {
  key: "test/add-uniform",
  source: `
struct P { add: u32 }
@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> p: P;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < arrayLength(&out)) { out[g.x] = a[g.x] + p.add; }
}`,
};

const increment = incrementKernel("test/increment");
/** Does not compile. */
const broken = brokenKernel("test/broken", "undefined_name");

const params = (add: number): Uint8Array => u32Bytes([add]);

let gpu: WebGpuDevice;
let server: WebGpuServer;

beforeAll(async () => {
  gpu = await requestTestDevice();
  server = new WebGpuServer(gpu.device);
});

afterAll(() => gpu?.device.destroy());

describe("WebGpuServer", () => {
  it("ready() compiles ahead without holding reads: its validation is tracked only once a launch uses the pipeline", async () => {
    const tracked: Promise<void>[] = [];
    const store = new PipelineStore(gpu.device, (p) => tracked.push(p));
    const kernel = incrementKernel("test/ready-ahead");
    const ahead = store.getOrCompile(kernel, false);
    expect([ahead.tracked, tracked.length], "compiled ahead of any launch: reads do not wait for it").toEqual([false, 0]);
    const launched = store.getOrCompile(kernel);
    expect(launched, "the same entry").toBe(ahead);
    expect([launched.tracked, tracked.length], "a launch asks for it: tracked once").toEqual([true, 1]);
    store.getOrCompile(kernel);
    expect(tracked.length, "never twice").toBe(1);
    await launched.ready;
    expect(launched.state.kind, "it compiled").toBe("valid");
    const fresh = incrementKernel("test/ready-launched-first");
    store.getOrCompile(fresh);
    expect(tracked.length, "a pipeline first asked for by a launch is tracked at once, as before").toBe(2);
    const s = new WebGpuServer(gpu.device);
    const other = incrementKernel("test/ready-server");
    expect(s.ready(other, false), "not cached, not compiled: not ready, and nothing started").toBe(false);
    expect(s.stats().pipelinesHeld, "peeking compiles nothing").toBe(0);
    s.ready(other);
    expect(s.stats().pipelinesHeld, "ready() starts the compile").toBe(1);
    for (let i = 0; i < 100 && !s.ready(other); i++) await new Promise((r) => setTimeout(r, 10));
    expect(s.ready(other, false), "compiled").toBe(true);
  });

  it("compiles a kernel's text exactly as given and refuses a read-only storage declaration, naming the fix", () => {
    const readOnly: WgslKernel = {
      key: "test/read-only",
      source: `
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1) fn main() { out[0] = a[0]; }`,
    };
    let thrown: unknown;
    try {
      server.compile(readOnly);
    } catch (error) {
      thrown = error;
    }
    expect(thrown, "the server never rewrites the declaration: it refuses it").toBeInstanceOf(ValidationError);
    expect(String((thrown as Error).message), "naming the binding and the declaration to use").toMatch(/'a'.*var<storage, read_write>/);
  });

  it("uploads and reads back any byte length, padding to 4 bytes without losing bytes", async () => {
    for (const length of [1, 3, 4, 5, 1027]) {
      const data = Uint8Array.from({ length }, (_, i) => (i * 37 + length) & 0xff);
      const handle = server.create(data, S0);
      const [back] = await server.read([handle.binding()], S0);
      expect(back, `round trip of ${length} bytes must return exactly the bytes written`).toEqual(data);
      handle.release();
    }
  });

  it("reads into caller-owned destinations: the bytes land in them and they take their place in the result", async () => {
    const a = Uint8Array.from({ length: 1024 }, (_, i) => (i * 13) & 0xff);
    const b = Uint8Array.from({ length: 64 }, (_, i) => (i * 7 + 1) & 0xff);
    const ha = server.create(a, S0);
    const hb = server.create(b, S0);
    const dest = new Uint8Array(1030).fill(9);
    const short = new Uint8Array(10);
    // Two reads of one turn share a batch; the second's destination is too short and is ignored.
    const [first, second] = await Promise.all([server.read([ha.binding(), hb.binding()], S0, [dest, undefined]), server.read([hb.binding()], S0, [short])]);
    expect(first?.[0], "the destination itself is returned").toBe(dest);
    expect(dest.subarray(0, 1024)).toEqual(a);
    expect([...dest.subarray(1024)], "bytes past the binding stay as they were").toEqual([9, 9, 9, 9, 9, 9]);
    expect(first?.[1]).toEqual(b);
    expect(second?.[0], "a destination shorter than the binding is not written").not.toBe(short);
    expect(second?.[0]).toEqual(b);
    expect([...short]).toEqual(new Array(10).fill(0));
    ha.release();
    hb.release();
  });

  it("launches a hand-written WGSL kernel with uniforms and reads its output", async () => {
    const a = server.create(u32Bytes([1, 2, 3, 4, 5]), S0);
    const out = server.empty(20, S0);
    server.launch(addUniform, [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: out.binding(), access: "write" }], S0, "execute", params(10));
    const [bytes] = await server.read([out.binding()], S0);
    expect(asU32(bytes as Uint8Array), "each element is a[i] + 10").toEqual([11, 12, 13, 14, 15]);
    a.release();
    out.release();
  });

  it("batches many dispatches per submit", async () => {
    const x = server.create(u32Bytes(new Array(64).fill(0)), S0);
    await server.sync(S0);
    const before = server.stats();
    const n = 200;
    for (let i = 0; i < n; i++) server.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    const [bytes] = await server.read([x.binding()], S0);
    const after = server.stats();
    expect(asU32(bytes as Uint8Array).every((v) => v === n), "every launch ran, in order").toBe(true);
    expect(after.dispatches - before.dispatches, "one dispatch per launch").toBe(n);
    // 200 dispatches at 64 per submit: 3 full submits, the tail at the read, and the read's copy.
    expect(after.submits - before.submits, "dispatches are batched, not submitted one by one").toBeLessThanOrEqual(Math.ceil(n / 64) + 2);
    x.release();
  });

  it("the syncs of one turn share one submit at the turn's end; each resolves after its work ran", async () => {
    const x = server.create(u32Bytes([0, 0, 0, 0]), S0);
    const y = server.create(u32Bytes([0, 0]), S1);
    await server.sync(S0);
    const before = server.stats();
    const syncs: Promise<void>[] = [];
    for (let i = 0; i < 20; i++) {
      server.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
      server.launch(increment, [1, 1, 1], [{ binding: y.binding(), access: "read-write" }], S1, "execute");
      syncs.push(server.sync(S0), server.sync(S1));
    }
    expect(server.stats().submits - before.submits, "nothing is submitted while the turn runs").toBe(0);
    await Promise.all(syncs);
    expect(server.stats().submits - before.submits, "one shared submit for 40 syncs on two streams").toBe(1);
    const [[xs], [ys]] = await Promise.all([server.read([x.binding()], S0), server.read([y.binding()], S1)]);
    expect(asU32(xs), "every launch ran").toEqual([20, 20, 20, 20]);
    expect(asU32(ys)).toEqual([20, 20]);
    x.release();
    y.release();
  });

  it("every stream records into one shared encoder: eight streams' launches are one encoder, one pass and one submit; a cross-stream read sees the write before it", async () => {
    const streams = Array.from({ length: 8 }, (_, i) => StreamId.of(i));
    const own = streams.map((s, i) => server.create(u32Bytes([i, 100 + i]), s));
    const doubled = server.create(u32Bytes([0, 0]), S1);
    await server.sync(S0);
    const device = gpu.device;
    const create = device.createCommandEncoder;
    let encoders = 0;
    device.createCommandEncoder = function (this: GPUDevice, ...args: Parameters<GPUDevice["createCommandEncoder"]>) {
      encoders++;
      return create.apply(this, args);
    };
    try {
      const before = server.stats();
      streams.forEach((s, i) => server.launch(increment, [1, 1, 1], [{ binding: (own[i] as (typeof own)[number]).binding(), access: "read-write" }], s, "execute"));
      await Promise.all(streams.map((s) => server.sync(s)));
      const after = server.stats();
      expect([encoders, after.submits - before.submits, after.sharedSubmitParts - before.sharedSubmitParts], "one encoder and one submit carried the eight streams' work").toEqual([1, 1, 8]);
      // S1 doubles S0's bytes right after S0 incremented them, in the same turn: ordered by the
      // encoder, no submit between them.
      server.compile(doubleKernel("test/shared-double"));
      await server.sync(S0);
      const mid = server.stats();
      server.launch(increment, [1, 1, 1], [{ binding: (own[0] as (typeof own)[number]).binding(), access: "read-write" }], S0, "execute");
      server.launch(doubleKernel("test/shared-double"), [1, 1, 1], [{ binding: (own[0] as (typeof own)[number]).binding(), access: "read" }, { binding: doubled.binding(), access: "write" }], S1, "execute");
      expect(server.stats().submits - mid.submits, "a consumer on another stream needs no submit of its producer first").toBe(0);
      const reads = await Promise.all(streams.map((s, i) => server.read([(own[i] as (typeof own)[number]).binding()], s)));
      expect(reads.map(([bytes]) => asU32(bytes as Uint8Array)), "every stream's launch ran once (S0's twice)").toEqual(streams.map((_, i) => (i === 0 ? [2, 102] : [i + 1, 101 + i])));
      const [[d]] = await Promise.all([server.read([doubled.binding()], S1)]);
      expect(asU32(d as Uint8Array), "the cross-stream read saw S0's second increment").toEqual([4, 204]);
    } finally {
      device.createCommandEncoder = create;
      for (const b of own) b.release();
      doubled.release();
    }
  });

  it("readSubmit 'read': a read submits the work recorded so far when issued (every stream's: one shared encoder); the copies and the map stay shared by the turn", async () => {
    const eager = new WebGpuServer(gpu.device, { readSubmit: "read" });
    const x = eager.create(u32Bytes([1, 2, 3, 4]), S0);
    const y = eager.create(u32Bytes([10, 20]), S1);
    eager.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    await eager.read([x.binding()], S0); // the pipeline is validated: launches now encode at the call
    const before = eager.stats();
    eager.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    eager.launch(increment, [1, 1, 1], [{ binding: y.binding(), access: "read-write" }], S1, "execute");
    const reads = Promise.all([eager.read([x.binding()], S0), eager.read([y.binding()], S1)]);
    expect(eager.stats().submits - before.submits, "the first read submitted both streams' launches (one encoder); the second found nothing left").toBe(1);
    const [[xs], [ys]] = await reads;
    const after = eager.stats();
    expect([after.submits - before.submits, after.readMaps - before.readMaps], "then one submit of the copies and one map for both").toEqual([2, 1]);
    expect([asU32(xs as Uint8Array), asU32(ys as Uint8Array)], "each read saw the launch issued before it").toEqual([[3, 4, 5, 6], [11, 21]]);
    x.release();
    y.release();
    eager.destroy();
    expect(() => new WebGpuServer(gpu.device, { readSubmit: "eager" as never }), "an unknown choice names the valid ones").toThrow(/readSubmit.*"turn", "read", "batch"/);
  });

  it("readSubmit 'batch': every readBatch reads of a turn submit all recorded work once; the copies and the map stay shared", async () => {
    const batched = new WebGpuServer(gpu.device, { readSubmit: "batch", readBatch: 2 });
    const xs = [S0, S1, S0].map((s, k) => ({ s, m: batched.create(u32Bytes([k, k + 1]), s) }));
    batched.launch(increment, [1, 1, 1], [{ binding: xs[0]!.m.binding(), access: "read-write" }], S0, "execute");
    await batched.read([xs[0]!.m.binding()], S0); // the pipeline is validated: launches now encode at the call
    const before = batched.stats();
    for (const { s, m } of xs) batched.launch(increment, [1, 1, 1], [{ binding: m.binding(), access: "read-write" }], s, "execute");
    const first = Promise.all(xs.slice(0, 2).map(({ s, m }) => batched.read([m.binding()], s)));
    expect(batched.stats().submits - before.submits, "the second read submitted both streams' work in one submit").toBe(1);
    const third = batched.read([xs[2]!.m.binding()], S0);
    expect(batched.stats().submits - before.submits, "the third read waits for the turn").toBe(1);
    const values = [...(await first), await third].map(([v]) => asU32(v as Uint8Array));
    const after = batched.stats();
    expect([after.submits - before.submits, after.readMaps - before.readMaps], "then one submit of the copies and one map for all three").toEqual([2, 1]);
    expect(values, "each read saw the launches issued before it").toEqual([[2, 3], [2, 3], [3, 4]]);
    for (const { m } of xs) m.release();
    batched.destroy();
    expect(() => new WebGpuServer(gpu.device, { readBatch: 0 }), "a read batch of 0 is refused").toThrow(/readBatch/);
  });

  it("readSubmit 'turn' (the default): reads of one turn submit nothing until the turn ends, then once", async () => {
    const x = server.create(u32Bytes([1, 2, 3, 4]), S0);
    const y = server.create(u32Bytes([10, 20]), S1);
    await server.sync(S0);
    const before = server.stats();
    server.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    server.launch(increment, [1, 1, 1], [{ binding: y.binding(), access: "read-write" }], S1, "execute");
    const reads = Promise.all([server.read([x.binding()], S0), server.read([y.binding()], S1)]);
    expect(server.stats().submits - before.submits, "nothing submitted yet").toBe(0);
    const [[xs], [ys]] = await reads;
    expect(server.stats().submits - before.submits, "one shared submit: both streams' work and the copies").toBe(1);
    expect([asU32(xs as Uint8Array), asU32(ys as Uint8Array)]).toEqual([[2, 3, 4, 5], [11, 21]]);
    x.release();
    y.release();
  });

  it("a stream submits by itself once its unsubmitted launches write maxPendingBytes", async () => {
    const small = new WebGpuServer(gpu.device, { maxPendingBytes: 32 });
    const x = small.create(u32Bytes(new Array(4).fill(0)), S0);
    // Once the pipeline is validated, launches are encoded at the call (not queued behind it).
    small.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    await small.read([x.binding()], S0);
    const before = small.stats();
    // 16 bytes written per launch: the second reaches 32 and submits.
    for (let i = 0; i < 6; i++) small.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    expect(small.stats().submits - before.submits, "one submit per 32 bytes written").toBe(3);
    const [bytes] = await small.read([x.binding()], S0);
    expect(asU32(bytes as Uint8Array)).toEqual([7, 7, 7, 7]);
    x.release();
    small.destroy();
  });

  it("a stream submits by itself once its unsubmitted launches bind maxPendingWork, read or written", async () => {
    // A loop of launches that read much and write little (a full sum) must not wait for
    // `tasksMax` launches before the device starts the first.
    const small = new WebGpuServer(gpu.device, { maxPendingWork: 64 });
    const x = small.create(u32Bytes([1, 2, 3, 4]), S0);
    const ys = Array.from({ length: 4 }, () => small.empty(16, S0));
    small.launch(addUniform, [1, 1, 1], [{ binding: x.binding(), access: "read" }, { binding: ys[0]!.binding(), access: "write" }], S0, "execute", params(1));
    await small.read([ys[0]!.binding()], S0);
    const before = small.stats();
    // 16 bytes read and 16 written per launch: every second launch reaches 64 and submits.
    for (const y of ys) small.launch(addUniform, [1, 1, 1], [{ binding: x.binding(), access: "read" }, { binding: y.binding(), access: "write" }], S0, "execute", params(10));
    expect(small.stats().submits - before.submits, "one submit per 64 bytes bound (read or written); none by the bytes written alone").toBe(2);
    const read = await small.read(ys.map((y) => y.binding()), S0);
    for (const bytes of read) expect(asU32(bytes as Uint8Array)).toEqual([11, 12, 13, 14]);
    x.release();
    for (const y of ys) y.release();
    small.destroy();
  });

  it("orders a host write after a dispatch still pending in the encoder (docs/pitfalls.md#p15)", async () => {
    const x = server.create(u32Bytes([5, 5, 5, 5]), S0);
    server.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    server.write(x.binding(), u32Bytes([100, 200, 300, 400]), S0);
    const [bytes] = await server.read([x.binding()], S0);
    expect(asU32(bytes as Uint8Array), "the write comes after the increment, so it is not incremented").toEqual([100, 200, 300, 400]);
    x.release();
  });

  it("a host write on one stream waits for any stream's recorded launch that binds the bytes (docs/pitfalls.md#p15)", async () => {
    const S2 = StreamId.of(2);
    const x = server.create(u32Bytes([5, 5, 5, 5]), S0);
    const seen = server.empty(16, S2);
    await server.sync(S0);
    // S2 (neither the writer nor the owner) records a read of x; then S1 writes x from the host.
    server.launch(doubleKernel("test/write-after-read"), [1, 1, 1], [{ binding: x.binding(), access: "read" }, { binding: seen.binding(), access: "write" }], S2, "execute");
    server.write(x.binding(), u32Bytes([1, 2, 3, 4]), S1);
    const [[s], [xs]] = await Promise.all([server.read([seen.binding()], S2), server.read([x.binding()], S0)]);
    expect(asU32(s as Uint8Array), "S2's launch read x before the write").toEqual([10, 10, 10, 10]);
    expect(asU32(xs as Uint8Array), "the write landed after it").toEqual([1, 2, 3, 4]);
    x.release();
    seen.release();
  });

  it("reads on one stream a buffer another stream produced, after the producer's pending work", async () => {
    const x = server.create(u32Bytes([1, 2, 3, 4]), S0);
    server.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    const y = server.empty(16, S1);
    server.launch(addUniform, [1, 1, 1], [{ binding: x.binding(), access: "read" }, { binding: y.binding(), access: "write" }], S1, "execute", params(100));
    x.release(); // the consumer's pin keeps the slice until its work is done (docs/pitfalls.md#p14)
    const reuse = server.create(u32Bytes([9, 9, 9, 9]), S0);
    const [bytes] = await server.read([y.binding()], S1);
    expect(asU32(bytes as Uint8Array), "the consumer saw the producer's increment, not a reused slice").toEqual([102, 103, 104, 105]);
    reuse.release();
    y.release();
  });

  it("reuses a freed slice while earlier work on it is pending, without corrupting that work", async () => {
    const x = server.create(u32Bytes([7, 7, 7, 7]), S0);
    const y = server.empty(16, S0);
    server.launch(addUniform, [1, 1, 1], [{ binding: x.binding(), access: "read" }, { binding: y.binding(), access: "write" }], S0, "execute", params(1));
    x.release();
    server.flush(S0);
    const slicesBefore = server.memoryUsage().slices;
    const z = server.create(u32Bytes([50, 50, 50, 50]), S0);
    expect(server.memoryUsage().slices, "the freed slice is reused, not a new one carved").toBe(slicesBefore);
    const [yBytes, zBytes] = await server.read([y.binding(), z.binding()], S0);
    expect(asU32(yBytes as Uint8Array), "the launch read x's bytes before the slice was rewritten").toEqual([8, 8, 8, 8]);
    expect(asU32(zBytes as Uint8Array)).toEqual([50, 50, 50, 50]);
    y.release();
    z.release();
  });

  it("a compile error taints exactly the outputs of its launches; other reads succeed", async () => {
    const a = server.create(u32Bytes([1, 1, 1, 1]), S0);
    const bad = server.empty(16, S0);
    const good = server.empty(16, S0);
    const derived = server.empty(16, S0);
    server.launch(broken, [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: bad.binding(), access: "write" }], S0, "execute");
    server.launch(addUniform, [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: good.binding(), access: "write" }], S0, "execute", params(2));
    server.launch(addUniform, [1, 1, 1], [{ binding: bad.binding(), access: "read" }, { binding: derived.binding(), access: "write" }], S0, "execute", params(3));
    const badRead = server.read([bad.binding()], S0).catch((e: unknown) => e);
    const derivedRead = server.read([derived.binding()], S0).catch((e: unknown) => e);
    const [goodBytes] = await server.read([good.binding()], S0);
    expect(asU32(goodBytes as Uint8Array), "a launch sharing nothing with the failure runs").toEqual([3, 3, 3, 3]);
    const badError = await badRead;
    expect(badError, "the broken kernel's output rejects").toBeInstanceOf(TaintedReadError);
    expect((badError as TaintedReadError).root, "naming the compile error as root").toBeInstanceOf(ValidationError);
    const derivedError = await derivedRead;
    expect(derivedError, "a launch reading tainted bytes is skipped and taints its output").toBeInstanceOf(TaintedReadError);
    expect((derivedError as TaintedReadError).chain.length, "the chain is root then skip").toBe(2);
    expect(() => server.compile(broken), "compiling a known-invalid kernel throws its ValidationError").toThrow(ValidationError);
    for (const h of [a, bad, good, derived]) h.release();
  });

  it("one validation scope spans a shared submit: an error in it taints the writes of every stream in the submit, and later work runs", async () => {
    const s = new WebGpuServer(gpu.device);
    const x = s.create(u32Bytes([1, 1, 1, 1]), S0);
    const y = s.create(u32Bytes([2, 2]), S1);
    await s.sync(S0);
    await s.sync(S1);
    s.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    s.launch(increment, [1, 1, 1], [{ binding: y.binding(), access: "read-write" }], S1, "execute");
    const device = gpu.device;
    const queue = device.queue;
    const push = device.pushErrorScope.bind(device);
    const submit = queue.submit.bind(queue);
    let pushes = 0;
    let injected = false;
    device.pushErrorScope = (filter: GPUErrorFilter): undefined => {
      pushes++;
      push(filter);
    };
    // A validation error raised right before the shared submit, inside its scope.
    queue.submit = (buffers: Iterable<GPUCommandBuffer>): undefined => {
      if (!injected) {
        injected = true;
        device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE });
      }
      return submit(buffers);
    };
    try {
      await Promise.all([s.sync(S0), s.sync(S1)]);
    } finally {
      device.pushErrorScope = push;
      queue.submit = submit;
    }
    expect(injected, "the two streams' work went out in one submit").toBe(true);
    expect(pushes, "one scope for the submit and both streams' finishes (three before)").toBe(1);
    const [xs, ys] = await Promise.all([s.read([x.binding()], S0).catch((e: unknown) => e), s.read([y.binding()], S1).catch((e: unknown) => e)]);
    for (const e of [xs, ys]) {
      expect(e, "each stream's writes carry the submit's error").toBeInstanceOf(TaintedReadError);
      expect(String((e as TaintedReadError).root?.message), "naming the failed submission").toMatch(/a submission of stream \d+ failed/);
    }
    const z = s.create(u32Bytes([5, 5]), S0);
    s.launch(increment, [1, 1, 1], [{ binding: z.binding(), access: "read-write" }], S0, "execute");
    const [zs] = await s.read([z.binding()], S0);
    expect(asU32(zs as Uint8Array), "later work on the same server runs").toEqual([6, 6]);
    for (const h of [x, y, z]) h.release();
    s.destroy();
  });

  it("a shared submit asks the queue for its completion once, however many streams hold pins of another stream's memory and however many syncs wait for it", async () => {
    const s = new WebGpuServer(gpu.device);
    const S2 = StreamId.of(2);
    const w = s.create(u32Bytes([7, 7, 7, 7]), S2);
    await s.sync(S2);
    const outs = [s.empty(16, S0), s.empty(16, S1)];
    s.launch(addUniform, [1, 1, 1], [{ binding: w.binding(), access: "read" }, { binding: outs[0]!.binding(), access: "write" }], S0, "execute", params(1));
    s.launch(addUniform, [1, 1, 1], [{ binding: w.binding(), access: "read" }, { binding: outs[1]!.binding(), access: "write" }], S1, "execute", params(2));
    // The weights' owner frees them while both launches (on other streams) still read them.
    w.release();
    const queue = gpu.device.queue;
    const done = queue.onSubmittedWorkDone.bind(queue);
    let asked = 0;
    queue.onSubmittedWorkDone = (): Promise<undefined> => {
      asked++;
      return done();
    };
    let idle = 0;
    try {
      await Promise.all([s.sync(S0), s.sync(S1)]);
      idle = asked;
      await s.sync(S0);
      idle = asked - idle;
    } finally {
      queue.onSubmittedWorkDone = done;
    }
    expect(asked - idle, "once for the two streams' pins and the turn's syncs together: the syncs wait on the submit's completion (three questions before, then two)").toBe(1);
    expect(idle, "a sync with nothing to submit still asks the queue (earlier submits may be running)").toBe(1);
    const [[a], [b]] = await Promise.all([s.read([outs[0]!.binding()], S0), s.read([outs[1]!.binding()], S1)]);
    expect([asU32(a as Uint8Array), asU32(b as Uint8Array)], "both read the freed weights as they were").toEqual([
      [8, 8, 8, 8],
      [9, 9, 9, 9],
    ]);
    for (const h of outs) h.release();
    s.destroy();
  });

  it("compiles pipelines off the request path: never the blocking createComputePipeline, and a compile error still reaches exactly its launch's output", async () => {
    const device = gpu.device;
    const blocking = device.createComputePipeline.bind(device);
    let blockingCalls = 0;
    device.createComputePipeline = (descriptor) => {
      blockingCalls++;
      return blocking(descriptor);
    };
    try {
      const own = new WebGpuServer(device);
      const a = own.create(u32Bytes([1, 2]), S0);
      const out = own.empty(8, S0);
      const bad = own.empty(8, S0);
      own.launch(doubleKernel("test/async-double"), [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: out.binding(), access: "write" }], S0, "execute");
      own.launch(brokenKernel("test/async-broken", "still_undefined"), [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: bad.binding(), access: "write" }], S0, "execute");
      const badRead = own.read([bad.binding()], S0).catch((e: unknown) => e);
      const [bytes] = await own.read([out.binding()], S0);
      expect(asU32(bytes as Uint8Array), "the kernel compiled asynchronously ran").toEqual([2, 4]);
      expect(((await badRead) as TaintedReadError).root, "the rejected pipeline's own output carries its ValidationError").toBeInstanceOf(ValidationError);
      expect(blockingCalls, "no pipeline was created with the blocking call").toBe(0);
      for (const h of [a, out, bad]) h.release();
      own.destroy();
    } finally {
      device.createComputePipeline = blocking;
    }
  });

  it("failureOf answers, without side effects, what a read of the bytes would reject with", async () => {
    const a = server.create(u32Bytes([1, 1, 1, 1]), S0);
    const bad = server.empty(16, S0);
    server.launch(broken, [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: bad.binding(), access: "write" }], S0, "execute");
    await server.read([bad.binding()], S0).catch(() => undefined);
    expect(server.failureOf([bad.binding()]), "the broken launch's output is claimed").toBeInstanceOf(TaintedReadError);
    expect(server.failureOf([bad.binding(4, 4)]), "so is any sub-range of it").toBeInstanceOf(TaintedReadError);
    expect(server.failureOf([a.binding()]), "its input is clean").toBeUndefined();
    expect(server.failureOf([bad.binding()]), "asking twice changes nothing").toBeInstanceOf(TaintedReadError);
    server.write(bad.binding(), u32Bytes([7, 7, 7, 7]), S0);
    expect(server.failureOf([bad.binding()]), "a host write releases the claim").toBeUndefined();
    const [bytes] = await server.read([bad.binding()], S0);
    expect(asU32(bytes as Uint8Array), "and the bytes read back").toEqual([7, 7, 7, 7]);
    for (const h of [a, bad]) h.release();
  });

  it("discard mode compiles but leaves memory untouched", async () => {
    const kernel: WgslKernel = { ...increment, key: "test/increment-discard" };
    const x = server.create(u32Bytes([4, 4, 4, 4]), S0);
    const before = server.stats();
    server.launch(kernel, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "discard");
    const [bytes] = await server.read([x.binding()], S0);
    expect(asU32(bytes as Uint8Array), "a discarded launch does not run").toEqual([4, 4, 4, 4]);
    expect(server.stats().pipelines - before.pipelines, "but its pipeline was created").toBe(1);
    expect(server.stats().dispatches, "and nothing was dispatched").toBe(before.dispatches);
    x.release();
  });

  it("reclaims and retries once on out-of-memory, then throws a transient OutOfMemoryError", () => {
    const small = new WebGpuServer(gpu.device, { pageSize: 4096 });
    const big = 64 * 1024; // larger than a page: needs a dedicated page
    small.injectAllocationFailures(1);
    const first = small.empty(big, S0);
    expect(first.size, "one injected failure is absorbed by the reclaim-and-retry").toBe(big);
    first.release();
    small.cleanup();
    small.injectAllocationFailures(2);
    let error: unknown;
    try {
      small.empty(big, S0);
    } catch (e) {
      error = e;
    }
    expect(error, "a second failure after the retry is reported").toBeInstanceOf(OutOfMemoryError);
    expect((error as OutOfMemoryError).transient, "out-of-memory is transient").toBe(true);
    const after = small.empty(16, S0);
    expect(after.size, "the server still works after an out-of-memory").toBe(16);
    after.release();
  });
});

describe("WebGpuServer device loss", () => {
  it("rejects pending reads with DeviceLostError and throws it on later calls", async () => {
    const own = await requestWebGpuDevice({ backend: "auto" });
    const lossy = new WebGpuServer(own.device);
    const x = lossy.create(u32Bytes([1, 2, 3, 4]), S0);
    lossy.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
    const pending = lossy.read([x.binding()], S0);
    own.device.destroy();
    await expect(pending, "a read in flight when the device goes rejects").rejects.toBeInstanceOf(DeviceLostError);
    await own.device.lost;
    await Promise.resolve();
    expect(() => lossy.empty(16, S0), "later calls throw DeviceLostError").toThrow(DeviceLostError);
    await expect(lossy.sync(S0)).rejects.toBeInstanceOf(DeviceLostError);
    const fresh = await requestWebGpuDevice({ backend: "auto" });
    const again = new WebGpuServer(fresh.device);
    const [bytes] = await again.read([again.create(u32Bytes([42]), S0).binding()], S0);
    expect(asU32(bytes as Uint8Array), "a new server on a new device works").toEqual([42]);
    fresh.device.destroy();
  });
});

/** A server on its own device with one launch recorded on S0 and not yet submitted (the device may be lost or broken by the test). */
async function serverWithPendingLaunch(): Promise<{ own: WebGpuDevice; s: WebGpuServer }> {
  const own = await requestWebGpuDevice({ backend: "auto" });
  const s = new WebGpuServer(own.device);
  const x = s.create(u32Bytes([1, 2, 3, 4]), S0);
  await s.sync(S0);
  s.launch(increment, [1, 1, 1], [{ binding: x.binding(), access: "read-write" }], S0, "execute");
  return { own, s };
}

describe("WebGpuServer syncs when the submit fails", () => {
  it("a sync whose submit is in flight when the device goes rejects with DeviceLostError", async () => {
    const { own, s } = await serverWithPendingLaunch();
    const pending = s.sync(S0);
    // The turn's submit (and the sync's wait on its completion) happen in a microtask; lose the device after.
    await Promise.resolve();
    own.device.destroy();
    await expect(pending, "the sync rejects, it does not hang").rejects.toBeInstanceOf(DeviceLostError);
  });

  it("a turn's syncs reject with the error when its shared submit throws at once, instead of waiting forever", async () => {
    const { own, s } = await serverWithPendingLaunch();
    const queue = own.device.queue;
    const submit = queue.submit.bind(queue);
    const failure = new Error("injected: queue.submit threw");
    queue.submit = () => {
      throw failure;
    };
    try {
      const syncs = [s.sync(S0), s.sync(S1)];
      for (const sync of syncs) await expect(sync, "each sync of the turn rejects with the submit's error").rejects.toBe(failure);
    } finally {
      queue.submit = submit;
      s.destroy();
      own.device.destroy();
    }
  });
});

describe("WebGpuServer release", () => {
  // Dawn's Node binding holds a device's listeners from native code: a listener left behind keeps
  // the server and every native object it made alive (+2.6 MiB per re-init before this test).
  it.each(["destroy", "device loss"] as const)("removes every device listener it added on %s", async (how) => {
    const own = await requestWebGpuDevice({ backend: "auto" });
    const added = new Set<unknown>();
    const device = own.device;
    const add = device.addEventListener.bind(device);
    const remove = device.removeEventListener.bind(device);
    device.addEventListener = ((type: string, listener: unknown, options?: unknown) => {
      added.add(listener);
      add(type as "uncapturederror", listener as EventListener, options as AddEventListenerOptions);
    }) as typeof device.addEventListener;
    device.removeEventListener = ((type: string, listener: unknown, options?: unknown) => {
      added.delete(listener);
      remove(type as "uncapturederror", listener as EventListener, options as EventListenerOptions);
    }) as typeof device.removeEventListener;
    const server = new WebGpuServer(device);
    expect(added.size, "the server listens for uncaptured errors").toBeGreaterThan(0);
    if (how === "destroy") server.destroy();
    else {
      device.destroy();
      await device.lost;
      await Promise.resolve();
    }
    expect(added.size, "no listener is left on the device").toBe(0);
    device.destroy();
  });
});
