/// <reference types="@webgpu/types" preserve="true" />
import { UnsupportedError, invariant } from "@weft/environment";
import { LaunchError, type BufferBinding, type DeviceLostError, type FailureStore } from "@weft/server";
import { MapMode } from "../device/gpu-constants.js";
import { StagingPool, type StagingPoolOptions, type StagingPoolStats } from "../memory/staging-pool.js";
import { ReadBatch, completeReads, planReadCopies, readBytes, releasePins, type PendingRead, type ReadSource } from "./read-batch.js";
import type { PendingStatusCheck, SubmissionCounters, WebGpuStream } from "./webgpu-stream.js";

/** One staging buffer of a batch and the bytes copied into it (a class: one per batch group). */
class StagingCopy {
  constructor(
    readonly buffer: GPUBuffer,
    readonly bytes: number,
  ) {}
}

/** Read counters a server reports. They only grow. */
export interface ReadCounters {
  /** Read batches performed (one copy submit each). */
  readBatches: number;
  /** `mapAsync` calls. */
  readMaps: number;
}

/** What the readback needs from its server, and nothing more. */
export interface ReadbackHost {
  readonly device: GPUDevice;
  readonly failures: FailureStore<WebGpuStream>;
  readonly counters: SubmissionCounters & ReadCounters;
  /**
   * Submits every stream's recorded work and then `tail` in one `queue.submit` (and starts the
   * readback of every pending status check); returns the submit's validation scope.
   */
  submitAll(tail?: GPUCommandBuffer): Promise<GPUError | null>;
  /** Where `binding`'s bytes live (its owner stream's memory). */
  source(binding: BufferBinding): ReadSource;
  /** Registers a promise reads must wait for (a status readback). */
  track(promise: Promise<unknown>): void;
  /** The error scopes and validations not settled yet (a read waits for them before settling). */
  outstanding(): readonly Promise<unknown>[];
  /** The device-loss error, once the device is lost. */
  lost(): DeviceLostError | undefined;
}

/**
 * A server's reads: the open {@link ReadBatch} of the current turn and the pool of staging
 * buffers its copies land in.
 *
 * @remarks
 * **Coalescing.** Reads issued in one turn join one batch, sealed by a single microtask (no timer,
 * nothing per read), or earlier when later work would overwrite bytes a waiting read has not
 * copied yet ({@link Readback.sealOverlapping}). Sealing makes one shared submit: every stream's
 * recorded work (the reads' producers and any other stream's ready work), then the copies of
 * every binding into its aligned range of one staging buffer; it maps that buffer once;
 * {@link completeReads} settles each read. So N requests in flight on N streams whose reads meet
 * in one turn cost one `queue.submit` and one `mapAsync` (docs/performance.md#shared-submits).
 * **Errors.** A read of tainted bytes rejects alone, when issued; the taint is checked again once
 * the scopes outstanding at the copy settled. A failed copy submit rejects the batch's reads with a
 * `LaunchError` (a shared submit fails whole: then every stream's work in it is tainted too, so no
 * read resolves with bytes that were not computed); device loss rejects the open batch.
 * **Status checks.** The status words of checked launches (`WebGpuServer.verify`) are read back
 * here too ({@link Readback.readChecks}), right after the submit of the launches that wrote them;
 * a read first flushes every stream with checks not copied yet, and waits for their readback.
 * **State.** At most one open batch (cleared when sealed); the staging pool is bounded by its
 * options.
 */
export class Readback {
  readonly #host: ReadbackHost;
  /** Free staging buffers (MAP_READ | COPY_DST) by size class; bounded by its options. */
  readonly #staging: StagingPool;
  /** The reads issued in the current turn, not yet copied; `undefined` when none waits. */
  #batch: ReadBatch | undefined;
  /** The device's `maxBufferSize`, read once (each `GPUSupportedLimits` attribute is a native getter). */
  readonly #maxBufferSize: number;

  constructor(host: ReadbackHost, options?: StagingPoolOptions) {
    this.#host = host;
    this.#maxBufferSize = host.device.limits.maxBufferSize;
    this.#staging = new StagingPool(host.device, options);
  }

  /** The staging pool's counters. */
  stagingStats(): StagingPoolStats {
    return this.#staging.stats();
  }

  /**
   * Adds `read` to the current turn's batch (opening one, and scheduling its seal at the end of
   * the turn, when none is open) and returns how many reads the batch holds now. A read of
   * tainted bytes rejects here, alone (and returns 0).
   */
  enqueue(read: PendingRead): number {
    const tainted = this.#host.failures.readError(read.bindings);
    if (tainted !== undefined) {
      read.done.reject(tainted);
      releasePins(read);
      return 0;
    }
    let batch = this.#batch;
    if (batch === undefined) {
      const opened = new ReadBatch();
      this.#batch = batch = opened;
      queueMicrotask(() => this.#seal(opened));
    }
    batch.add(read);
    return batch.reads.length;
  }

  /** Performs the open batch first when writing `bindings` would change bytes one of its reads has yet to copy. */
  sealOverlapping(bindings: readonly BufferBinding[]): void {
    if (this.#batch?.overlaps(bindings)) this.#seal(this.#batch);
  }

  /** Performs the open batch now (`cleanup`). */
  sealOpen(): void {
    if (this.#batch !== undefined) this.#seal(this.#batch);
  }

  /** Rejects the open batch's reads with `error` (device loss). */
  abort(error: DeviceLostError): void {
    const batch = this.#batch;
    this.#batch = undefined;
    batch?.abort(error);
  }

  /** Destroys every kept staging buffer. */
  purge(): void {
    this.#staging.purge();
  }

  /**
   * Copies the status words of `checks` into one staging buffer (one submit, after the submit of
   * the launches that wrote them), maps it, and settles each check with its decoded failure (or as
   * clean). Tracked as outstanding, so reads wait for it. A failure to copy or map settles every
   * check as failed with that error: an unverified output must never read as valid.
   */
  readChecks(checks: readonly PendingStatusCheck[]): void {
    const host = this.#host;
    const device = host.device;
    const bytes = 8 * checks.length;
    const finish = (settle: (c: PendingStatusCheck, i: number) => void): void => {
      checks.forEach((c, i) => {
        settle(c, i);
        c.unpin();
      });
    };
    const failAll = (reason: string, cause?: unknown): void =>
      finish((c) => host.failures.settle(c.id, host.lost() ?? new LaunchError(`${c.check.what}: its status could not be read back (${reason})`, { cause })));
    let staging: GPUBuffer;
    device.pushErrorScope("validation");
    try {
      staging = this.#staging.acquire(bytes);
      const encoder = device.createCommandEncoder({ label: "weft status checks" });
      checks.forEach((c, i) => {
        const source = host.source(c.check.status);
        encoder.copyBufferToBuffer(source.buffer, source.offset, staging, 8 * i, 8);
      });
      device.queue.submit([encoder.finish()]);
      host.counters.submits++;
    } catch (error) {
      void device.popErrorScope().catch(() => undefined);
      failAll(String(error), error);
      return;
    }
    const scope = device.popErrorScope();
    const buffer = staging;
    const done = Promise.all([scope, buffer.mapAsync(MapMode.READ, 0, bytes)]).then(
      ([error]) => {
        if (error !== null) {
          buffer.unmap();
          buffer.destroy();
          failAll(error.message);
          return;
        }
        const words = new Uint32Array(buffer.getMappedRange(0, bytes).slice(0));
        buffer.unmap();
        this.#staging.release(buffer);
        finish((c, i) => host.failures.settle(c.id, c.check.decode(words.subarray(2 * i, 2 * i + 2))));
      },
      (error: unknown) => {
        buffer.destroy();
        failAll(String(error), error);
      },
    );
    host.track(done);
  }

  /**
   * Performs `batch` if it is still the open one; a failure to encode rejects the batch's reads
   * (settled reads ignore it; the others must not wait forever).
   */
  #seal(batch: ReadBatch): void {
    if (this.#batch !== batch) return;
    this.#batch = undefined;
    const lost = this.#host.lost();
    if (lost !== undefined) {
      batch.abort(lost);
      return;
    }
    try {
      this.#perform(batch);
    } catch (error) {
      batch.abort(this.#host.lost() ?? new LaunchError(`performing a batch of ${batch.reads.length} reads failed: ${String(error)}`, { cause: error }));
    }
  }

  /** Submits every stream's work and the copies of every binding in one submit, maps once (see the type doc). */
  #perform(batch: ReadBatch): void {
    const host = this.#host;
    const device = host.device;
    const maxGroup = Math.floor(this.#maxBufferSize / 4) * 4;
    // `Array.of` and classes for a batch's records, not literals (docs/performance.md#allocation-sites).
    const reads = Array.of<PendingRead>();
    const sources = Array.of<ReadSource[]>();
    for (const r of batch.reads) {
      const mine = r.bindings.map((b) => host.source(b));
      if (readBytes(mine) > maxGroup) {
        r.done.reject(
          new UnsupportedError(
            "reads larger than one staging buffer",
            `a read of ${r.bindings.length} bindings needs ${readBytes(mine)} bytes; the device's maxBufferSize is ` +
              `${this.#maxBufferSize}; read the bindings in separate calls`,
          ),
        );
        releasePins(r);
        continue;
      }
      reads.push(r);
      sources.push(mine);
    }
    if (reads.length === 0) {
      void host.submitAll();
      return;
    }
    const plan = planReadCopies(sources, maxGroup);
    const staging = Array.of<StagingCopy>();
    // One scope around the staging buffers and the copies' encoding, one around the shared submit:
    // an error in either means no read of the batch got its bytes (completeReads then rejects them
    // all with it).
    device.pushErrorScope("validation");
    let thrown: { error: unknown } | undefined;
    let copies: GPUCommandBuffer | undefined;
    try {
      for (const g of plan.groups) staging.push(new StagingCopy(this.#staging.acquire(Math.max(4, g.bytes)), g.bytes));
      const encoder = device.createCommandEncoder({ label: "weft readback" });
      plan.groups.forEach((g, i) => {
        const target = staging[i];
        invariant(target !== undefined, "one staging buffer per group");
        for (const c of g.copies) encoder.copyBufferToBuffer(c.buffer, c.sourceOffset, target.buffer, c.stagingOffset, c.length);
      });
      copies = encoder.finish();
    } catch (error) {
      thrown = { error };
    }
    const encodeScope = device.popErrorScope();
    // The streams' work goes out either way; the copies only when they were encoded.
    const submitScope = host.submitAll(thrown === undefined ? copies : undefined);
    if (thrown !== undefined) {
      void encodeScope.catch(() => undefined);
      for (const st of staging) st.buffer.destroy();
      const failure = new LaunchError(`encoding the copies of ${reads.length} reads failed: ${String(thrown.error)}`, { cause: thrown.error });
      for (const r of reads) {
        r.done.reject(failure);
        releasePins(r);
      }
      return;
    }
    host.counters.readBatches++;
    host.counters.readMaps += staging.filter((st) => st.bytes > 0).length;
    void completeReads(reads, plan, {
      staging,
      settled: Promise.all(host.outstanding()),
      copyScope: Promise.all([encodeScope, submitScope]).then(([encoded, submitted]) => encoded ?? submitted),
      lateError: (bindings) => host.failures.readError(bindings),
      lost: () => host.lost(),
      release: (buffer) => this.#staging.release(buffer),
      copyFailed: (error) => new LaunchError(`the copy submit of ${reads.length} reads failed: ${error.message}`),
    });
  }
}
