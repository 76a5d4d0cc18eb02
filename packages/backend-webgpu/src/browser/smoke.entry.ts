/**
 * The server-level smoke suite run in Chromium by `browser.test.ts`: a device from
 * `navigator.gpu`, a write, a tiny WGSL launch, a readback, and the compile-error taint case.
 */
import { StreamId } from "@weft/environment";
import { TaintedReadError, ValidationError } from "@weft/server";
import { requestWebGpuDevice } from "../device/request-device.js";
import type { WgslKernel } from "../kernel.js";
import { WebGpuServer } from "../server/webgpu-server.js";
import { check, runRegisteredTests, test } from "@weft/browser-harness/page";

const S0 = StreamId.of(0);
const u32 = (values: number[]): Uint8Array => new Uint8Array(new Uint32Array(values).buffer);
const values = (bytes: Uint8Array | undefined): number[] => (bytes ? [...new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)] : []);

const double: WgslKernel = {
  key: "smoke/double",
  source: `
@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(32) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < arrayLength(&out)) { out[g.x] = a[g.x] * 2u; }
}`,
};
const broken: WgslKernel = { key: "smoke/broken", source: "@compute @workgroup_size(1) fn main() { let x: u32 = nope; }" };

const gpu = await requestWebGpuDevice();
const server = new WebGpuServer(gpu.device);

test("the adapter comes from navigator.gpu", () => {
  check(gpu.info.backend === "browser", `backend is ${gpu.info.backend}`);
});

test("write then read returns the bytes, odd lengths included", async () => {
  const data = Uint8Array.from([1, 2, 3, 4, 5, 6, 7]);
  const h = server.create(data, S0);
  const [back] = await server.read([h.binding()], S0);
  check(JSON.stringify([...(back ?? [])]) === JSON.stringify([...data]), `got ${String(back)}`);
  h.release();
});

test("a tiny WGSL kernel runs and its output reads back", async () => {
  const a = server.create(u32([1, 2, 3, 40]), S0);
  const out = server.empty(16, S0);
  server.launch(double, [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: out.binding(), access: "write" }], S0, "execute");
  const [bytes] = await server.read([out.binding()], S0);
  check(JSON.stringify(values(bytes)) === "[2,4,6,80]", `got ${JSON.stringify(values(bytes))}`);
  a.release();
  out.release();
});

test("a compile error taints its output and spares other reads", async () => {
  const a = server.create(u32([3]), S0);
  const bad = server.empty(4, S0);
  const good = server.empty(4, S0);
  server.launch(broken, [1, 1, 1], [{ binding: bad.binding(), access: "write" }], S0, "execute");
  server.launch(double, [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: good.binding(), access: "write" }], S0, "execute");
  const badRead = server.read([bad.binding()], S0).then(() => undefined, (e: unknown) => e);
  const [goodBytes] = await server.read([good.binding()], S0);
  check(values(goodBytes)[0] === 6, `good output is ${values(goodBytes)[0]}`);
  const error = await badRead;
  check(error instanceof TaintedReadError, `bad read rejected with ${String(error)}`);
  check(error.root instanceof ValidationError, `root is ${String(error.root)}`);
});

await runRegisteredTests();
