/**
 * Test support: a `weft serve`-equivalent server on 127.0.0.1 inside the test process, on the CPU
 * backend, and clients for it. The end-to-end suites in `weft` run real `weft serve` processes; the
 * package's own tests use this to reach every line of the protocol quickly.
 *
 * @module
 */
import { createCpuRuntime } from "@weft/backend-cpu";
import { FusionDevice } from "@weft/fusion";
import { Device } from "@weft/tensor";
import type { RemoteLimits } from "../protocol/messages.js";
import { type RemoteServer, startServer } from "../server/remote-server.js";

/** The token the in-process servers use. */
export const TEST_TOKEN = "test-token";

/** A CPU device for a server (fused) or an oracle (`fusion: false`). */
export function cpuDevice(fusion = true): Device {
  return new Device(new FusionDevice(createCpuRuntime({ fusion })));
}

/** A server on 127.0.0.1 (any free port) over a fresh CPU device. */
export async function startTestServer(limits: Partial<RemoteLimits> = {}, options: { heartbeatMs?: number } = {}): Promise<{ server: RemoteServer; device: Device; url: string }> {
  const device = cpuDevice();
  const server = await startServer({
    device: { fusion: device.fusion, backend: "cpu", dtypes: device.dtypes },
    token: TEST_TOKEN,
    port: 0,
    host: "127.0.0.1",
    limits,
    ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
  });
  return { server, device, url: `ws://127.0.0.1:${server.port}` };
}
