/**
 * The conformance kit in headless Chromium through a router over two `weft serve` processes: the
 * page connects with the browser's own `WebSocket` (`?urls=ws://…,ws://…&token=…`), runs every case
 * of `@weft/tensor/testing/core` on its own stream (so cases alternate between the servers) against
 * the unfused CPU oracle in the page, and checks that nothing is left on the client or on either
 * server. Bundled and opened by `remote-browser.test.ts` through `runInBrowser`.
 */
import { checkReleased, conformanceCases, runConformanceCase } from "@weft/tensor/testing/core";
import { check, runRegisteredTests, test } from "@weft/browser-harness/page";
import { Stream, StreamId } from "@weft/environment";
import { type RemoteDevice, createRemoteDevice } from "@weft/remote";
import { createCpuDevice } from "../device/backends.js";
import { REMOTE_BROWSER_CATALOGUE, REMOTE_CONNECT_TEST, REMOTE_RELEASE_TEST } from "./remote-suite.js";

const params = new URLSearchParams((globalThis as { location?: { search: string } }).location?.search ?? "");
const urls = (params.get("urls") ?? "").split(",").filter((u) => u.length > 0);
const oracle = createCpuDevice({ fusion: false });
const started: { device: RemoteDevice; baseline: number } | { error: unknown } = await createRemoteDevice({ url: urls, token: params.get("token") ?? "" }).then(
  (device) => ({ device, baseline: device.memory().liveTensors }),
  (error: unknown) => ({ error }),
);
const remote = (): { device: RemoteDevice; baseline: number } => {
  if ("error" in started) throw new Error(`no remote device in the page: ${started.error instanceof Error ? `${started.error.name}: ${started.error.message}` : String(started.error)}`);
  return started;
};

test(REMOTE_CONNECT_TEST, () => {
  const { device } = remote();
  check(typeof (globalThis as { WebSocket?: unknown }).WebSocket === "function", "the page has the browser's WebSocket");
  check(device.runtime.connections.length === 2, `the device routes over ${device.runtime.connections.length} servers, not 2`);
});

for (const c of conformanceCases(REMOTE_BROWSER_CATALOGUE)) {
  test(c.name, async () => {
    // The case's synchronous part (uploads, recorded ops) runs on a fresh stream: its server.
    const result = await Stream.run(StreamId.allocate(), () => runConformanceCase(c, remote().device, oracle));
    check(result.ok, result.message ?? "");
  });
}

test(REMOTE_RELEASE_TEST, async () => {
  const { device, baseline } = remote();
  await device.syncAll();
  const result = await checkReleased(device, baseline);
  check(result.ok, result.message ?? "");
  for (const r of device.servers()) check(r.stats.ops > 0, `${r.url} received no operation: the router did not spread the cases`);
  for (const [i, m] of (await device.serverMemory()).entries()) check(m.sessionTensors === 0, `server ${i} still holds ${m.sessionTensors} tensors of this session`);
  device.close();
});

await runRegisteredTests();
