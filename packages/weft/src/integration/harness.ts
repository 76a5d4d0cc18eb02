/**
 * What the integration suites share: the two backends they run on, the engine behind a user
 * `Device`, and the quiescence check every scenario ends with.
 *
 * @remarks
 * **Why a harness.** Every scenario in `src/integration/*.test.ts` runs twice, on the CPU backend
 * and on WebGPU (Dawn), through the public `weft` API only; what they need beyond that API (the
 * fusion inspector, the CPU runtime's fault hook) is reached here, in one place, through the
 * device the user holds. It imports no test framework, so it stays a plain module.
 * **Invariant.** Nothing here records work on a device; it only reads engine state.
 *
 * @module
 */
import { StreamId } from "@weft/environment";
import type { FaultSpec } from "@weft/server";
import type { CpuRuntime } from "@weft/backend-cpu";
import type { FusionDevice, FusionInspector } from "@weft/fusion";
import type { Device } from "@weft/tensor";
import { RemoteDevice, createRemoteDevice } from "@weft/remote";
import { createCpuDevice, createWebGpuDevice } from "../device/backends.js";
import { SERVE_TOKEN, type ServeProcess, startServe } from "../remote/serve-process.js";

/** One backend the integration suites run on. */
export interface IntegrationBackend {
  /** `"cpu"`, `"webgpu"` or `"remote"`, used in suite names. */
  readonly name: "cpu" | "webgpu" | "remote";
  /** Creates a fresh device (one per suite file: a Dawn device costs most of a second). */
  readonly create: () => Promise<Device>;
  /** Stops what `create` started (the remote backend's servers); call it in `afterAll`. */
  readonly teardown?: () => Promise<void>;
}

/**
 * The remote backend: a router over two real `weft serve` processes (CPU) on 127.0.0.1, started on
 * the first `create` (once per suite file) and stopped by `teardown`. Streams alternate between the
 * two servers, so tensors shared across streams are aliased on one server or moved to the other.
 */
export function remoteBackend(): IntegrationBackend {
  let servers: Promise<ServeProcess[]> | undefined;
  const devices: RemoteDevice[] = [];
  return {
    name: "remote",
    create: async () => {
      servers ??= Promise.all([startServe(), startServe()]);
      const device = await createRemoteDevice({ url: (await servers).map((s) => s.url), token: SERVE_TOKEN });
      devices.push(device);
      return device;
    },
    teardown: async () => {
      for (const d of devices) d.close();
      if (servers !== undefined) await Promise.all((await servers).map((s) => s.stop()));
    },
  };
}

/** The CPU backend (fused) and WebGPU (Dawn, on Mesa's GLES here). */
export const BACKENDS: readonly IntegrationBackend[] = [
  { name: "cpu", create: () => Promise.resolve(createCpuDevice()) },
  { name: "webgpu", create: () => createWebGpuDevice() },
];

/** The fusion engine behind a user device (every device `weft` creates wraps a `FusionDevice`). */
export function engineOf(device: Device): FusionDevice<unknown> {
  return device.fusion as unknown as FusionDevice<unknown>;
}

/** The fusion inspector of `device`: executed blocks per stream, explorations, live streams. */
export function inspectorOf(device: Device): FusionInspector {
  return engineOf(device).inspector;
}

/**
 * Schedules a fault on the CPU backend behind `device` (`HostComputeServer.injectFault` through
 * `CpuRuntime.injectFault`): `{ launch: 1 }` fails the next launch that runs.
 * @throws Error when `device` is not a CPU device (only the host server can inject faults).
 */
export function injectCpuFault(device: Device, fault: FaultSpec): void {
  if (device.backend !== "cpu") throw new Error(`injectCpuFault: ${device.label} is not a CPU device`);
  (engineOf(device).runtime as unknown as CpuRuntime).injectFault(fault);
}

/** Removes every scheduled fault of the CPU device (a test that expected a fault it never hit). */
export function clearCpuFaults(device: Device): void {
  (engineOf(device).runtime as unknown as CpuRuntime).server.clearFaults();
}

/** The part of `memory()` a quiescence check compares. */
export interface MemorySnapshot {
  readonly liveTensors: number;
  readonly liveHandles: number;
  /** Lazy streams holding pending work (`memory().pendingStreams`). */
  readonly streams: number;
  readonly bytesInUse: number;
}

/** `device.memory()` without `bytesReserved` (pages are kept for reuse; that is not a leak). */
export function snapshot(device: Device): MemorySnapshot {
  const m = device.memory();
  // `streams` here are the engine's lazy streams with pending work (none at quiescence), not the
  // backend's stream slots that hold pages (`memory().streams`).
  return { liveTensors: m.liveTensors, liveHandles: m.liveHandles, streams: m.pendingStreams ?? 0, bytesInUse: m.bytesInUse };
}

/**
 * What is still alive on `device` compared with quiescence: no tensors, no handles, no streams,
 * and `bytesInUse` back to `baselineBytes`. Returns one line per problem (empty when clean), with
 * the leaked handle ids and the streams still holding work, so a failing test says what leaked.
 */
export function leaks(device: Device, baselineBytes: number): string[] {
  const m = snapshot(device);
  const inspector = inspectorOf(device);
  const problems: string[] = [];
  if (m.liveTensors !== 0) problems.push(`${m.liveTensors} live tensor wrappers`);
  if (m.liveHandles !== 0) problems.push(`${m.liveHandles} live handles: ids ${inspector.handleIds().join(", ")}`);
  if (m.streams !== 0) {
    const lengths = [...inspector.queueLengths()].map(([s, n]) => `stream ${s}: ${n} pending`);
    problems.push(`${m.streams} live streams (${lengths.join("; ")})`);
  }
  if (m.bytesInUse !== baselineBytes) problems.push(`bytesInUse ${m.bytesInUse}, baseline ${baselineBytes}`);
  return problems;
}

/**
 * `device` synced, when it is quiescent; else a fresh device of `backend`. A scenario that failed
 * half-way leaves its tensors alive (its failure is already reported); the next scenario must not
 * inherit them, or every later leak check would fail for the first one's sake.
 */
export async function quiescentDevice(device: Device, backend: IntegrationBackend): Promise<Device> {
  await device.syncAll();
  const m = snapshot(device);
  if (m.liveTensors === 0 && m.liveHandles === 0 && m.streams === 0) return device;
  return backend.create();
}

/**
 * Drains every stream of `device` (and the calling one), then reports {@link leaks} — for a remote
 * device also what each server still holds for this client (its session's live tensors).
 */
export async function settle(device: Device, baselineBytes: number): Promise<string[]> {
  await device.syncAll();
  const problems = leaks(device, baselineBytes);
  if (device instanceof RemoteDevice) {
    for (const [i, m] of (await device.serverMemory()).entries()) {
      if (m.sessionTensors !== 0) problems.push(`server ${i}: ${m.sessionTensors} live tensors of this session (${m.sessionBytes} bytes)`);
    }
  }
  return problems;
}

/** The executed-block compositions of `stream` in the inspector's log (`"fused …[…]"`). */
export function blocksOn(device: Device, stream: StreamId): string[] {
  return inspectorOf(device).composition(stream);
}

/** Lets every queued macrotask run once (`setTimeout(0)`): an interleaving point, not a sleep. */
export function macrotask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** A fresh stream id (the streams a test runs tasks on). */
export function freshStream(): StreamId {
  return StreamId.allocate();
}
