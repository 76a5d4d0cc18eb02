/// <reference types="@webgpu/types" />
/**
 * Weft on the bench's `GPUDevice`, twice: fused (the product) and unfused (every op its own
 * kernel: the baseline fusion is measured against), wired the way `weft`'s own
 * `createWebGpuDevice` does it.
 *
 * @remarks
 * **Why not `weft.init()`.** `init` requests its own `GPUDevice`; the ratios need every variant on
 * one device and one queue, and the bench needs the `FusionDevice` itself for its inspector
 * (explorations, executed blocks), which `Device` exposes only structurally.
 * **Peak memory.** The memory report gives the bytes in use *now*; the peak during an execution is
 * observed by a {@link PeakMeter} wrapped around the `WebGpuServer`: it samples the server's
 * `memoryUsage().bytesInUse` after every allocation and launch.
 *
 * @module
 */
import { createWebGpuRuntime, WebGpuServer, type WebGpuDevice, type WebGpuServerOptions, type WgslKernel } from "@weft/backend-webgpu";
import { FusionDevice, type FusionClient } from "@weft/fusion";
import type { ComputeServer } from "@weft/server";
import { Device, type Tensor } from "@weft/tensor";
import type { Timed } from "../harness/measure.js";

/**
 * The highest `bytesInUse` a server reached since the last {@link PeakMeter.reset}.
 *
 * @remarks **Bound.** One number; sampled after `empty`, `create` and `launch` (the calls that can
 * raise the figure), so it sees every allocation the engine makes — only between
 * {@link PeakMeter.reset} and {@link PeakMeter.stop}: a sample walks every stream's memory, and
 * a meter sampling all the time would add that to every launch of every other workload's timing
 * (the host-overhead figure above all). The wrapper binds each method once, not per call.
 */
export class PeakMeter {
  #peak = 0;
  /** Whether calls are sampled now (from `reset` to `stop`). */
  #armed = false;
  readonly #server: ComputeServer<WgslKernel>;

  constructor(server: ComputeServer<WgslKernel>) {
    this.#server = server;
  }

  /** The peak since the last reset, in bytes. */
  get peak(): number {
    return this.#peak;
  }

  /** Starts a new measurement from the bytes in use now (sampling until {@link PeakMeter.stop}). */
  reset(): void {
    this.#armed = true;
    this.#peak = this.#server.memoryUsage().bytesInUse;
  }

  /** Stops sampling; `peak` keeps the last measurement. */
  stop(): void {
    this.#armed = false;
  }

  /** @internal Samples the server (while armed). */
  sample(): void {
    if (this.#armed) this.#peak = Math.max(this.#peak, this.#server.memoryUsage().bytesInUse);
  }

  /** `server`, with every allocating or launching call followed by a sample. */
  wrap(): ComputeServer<WgslKernel> {
    const sampled = new Set(["empty", "create", "launch"]);
    /** One bound function per method name (bounded by the server's methods). */
    const bound = new Map<string | symbol, unknown>();
    return new Proxy(this.#server, {
      get: (target, key, receiver) => {
        const cached = bound.get(key);
        if (cached !== undefined) return cached;
        const value: unknown = Reflect.get(target, key, receiver);
        if (typeof value !== "function") return value;
        const fn = value as (...args: unknown[]) => unknown;
        const method =
          typeof key !== "string" || !sampled.has(key)
            ? fn.bind(target)
            : (...args: unknown[]) => {
                const result = fn.apply(target, args);
                this.sample();
                return result;
              };
        bound.set(key, method);
        return method;
      },
    });
  }
}

/** One Weft device and the fusion engine under it. */
export interface WeftVariant {
  readonly device: Device;
  readonly fusion: FusionClient;
  /** The peak-memory meter around this device's server. */
  readonly meter: PeakMeter;
  /** The server under the device (its counters: submits, read batches, maps). */
  readonly server: WebGpuServer;
  /** Resolves once background autotuning (matmul tile choice) has finished, so timing sees the winner. */
  readonly settle: () => Promise<void>;
}

/** Creates a Weft device on `gpu` (`fusion: false` runs every op alone). */
export async function createWeftVariant(gpu: WebGpuDevice, fusion: boolean, options?: WebGpuServerOptions): Promise<WeftVariant> {
  const server = new WebGpuServer(gpu.device, options);
  const meter = new PeakMeter(server);
  const runtime = await createWebGpuRuntime({ device: gpu.device, fusion, server: meter.wrap() });
  const engine = new FusionDevice(runtime);
  const device = new Device(engine, { label: `webgpu${fusion ? "" : " unfused"} (${gpu.info.description})` });
  return { device, fusion: engine, meter, server, settle: () => runtime.autotuneIdle() };
}

/**
 * The timed steps of a Weft workload that produces one tensor per iteration: only the newest
 * output stays alive (freed memory is reused, as in a loop that consumes its results), and a
 * non-awaited sync runs each iteration at once (one submit, like the other libraries' variants),
 * so disposing the previous output never elides it as dead code.
 */
export function newestOutputLoop(w: WeftVariant, produce: () => Tensor): Timed {
  let outs: Tensor[] = [];
  return {
    step: () => {
      outs.push(produce());
      void w.device.sync();
      if (outs.length > 1) outs.shift()?.dispose();
    },
    wait: () => w.device.sync(),
    release: () => {
      for (const o of outs) o.dispose();
      outs = [];
    },
  };
}
