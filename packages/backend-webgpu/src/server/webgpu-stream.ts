/// <reference types="@webgpu/types" preserve="true" />
import type { StreamId } from "@weft/environment";
import type { GpuBufferStorage } from "../memory/gpu-buffer-storage.js";
import {
  ByteRangeClaims,
  type AllocationId,
  type BufferBinding,
  type ErrorGraph,
  type FailureId,
  type MemoryManagement,
  type ServerError,
  type StatusCheck,
  type StreamMemory,
} from "@weft/server";

/** How many failures a stream's log keeps (the oldest are dropped). */
export const FAILURE_LOG_LIMIT = 32;

/**
 * One uniform buffer and its host mirror: launches copy their parameters into `mirror` at their
 * (aligned) offset and bind the buffer with a dynamic offset; the server writes `mirror[0, used)`
 * to `buffer` once, before the submit of the commands that read it.
 */
export interface UniformArena {
  readonly buffer: GPUBuffer;
  readonly mirror: Uint8Array;
}

/** A status check waiting for the submit of the launch that writes its status (see `WebGpuServer.verify`). */
export interface PendingStatusCheck {
  /** The pending check in the error graph. */
  readonly id: FailureId;
  readonly check: StatusCheck;
  /** Releases the pin that keeps the status bytes alive until they are read back. */
  readonly unpin: () => void;
}

/**
 * The CPU-side state of one server stream (cubecl-wgpu's `WgpuStream`): its open command encoder
 * and compute pass, what that encoder refers to, its pins, its memory and its taint claims.
 *
 * @remarks
 * **Why per stream.** Every stream funnels into the one `GPUQueue`, so order between streams is
 * submission order; what a stream keeps is what it has recorded and not yet submitted.
 * **Bounded state.** Everything below "since the last submit" is cleared by the server's flush
 * of this stream, which happens at least every `tasksMax` dispatches, so it never holds more than
 * `tasksMax` launches' worth of entries. `failures` keeps the last {@link FAILURE_LOG_LIMIT}.
 * **StreamMemory.** Taint claims on this stream's allocations live in `claims`; the stream
 * delegates to it so the shared `FailureStore` can find them through the pool.
 */
export class WebGpuStream implements StreamMemory {
  /** The open encoder, created on first use after a submit; `undefined` when nothing is recorded. */
  encoder: GPUCommandEncoder | undefined;
  /** The open compute pass of `encoder`; ended before copies and at submit. */
  pass: GPUComputePassEncoder | undefined;
  /** Dispatches recorded in `encoder` since the last submit. */
  dispatches = 0;
  /** Host writes (`writeBuffer`) since the last submit of any kind; reset at every submit. */
  writesSinceSubmit = 0;
  /** Allocations the unsubmitted encoder refers to (any stream's); cleared at submit. */
  readonly encodedAllocations = new Set<AllocationId>();
  /** Bytes the unsubmitted encoder writes; tainted if its submission fails; cleared at submit. */
  submissionWrites: BufferBinding[] = [];
  /** Pins on this stream's own slices held until the encoder is submitted; released at submit. */
  submitPins: Array<() => void> = [];
  /** Pins on other streams' slices, released when this stream's next submission completes. */
  foreignPins: Array<() => void> = [];
  /**
   * Uniform arenas holding the parameters of the unsubmitted encoder's launches: their bytes are
   * gathered in each arena's host mirror and written with one `writeBuffer` per arena right before
   * the submit; recycled when that submission completes.
   */
  uniformBuffers: UniformArena[] = [];
  /** Next free byte of the last of `uniformBuffers`; reset when they are released at submit. */
  uniformCursor = 0;
  /**
   * Status checks of launches in the unsubmitted encoder: their status words are copied out right
   * after the encoder's submit and read back then. Cleared at submit.
   */
  pendingChecks: PendingStatusCheck[] = [];
  /** Failures that reached this stream outside any launch (uncaptured errors, failed submits). */
  readonly failures: ServerError[] = [];
  /** Taint claims on this stream's allocations. */
  readonly claims = new ByteRangeClaims();

  constructor(
    /** The slot's synthetic id; the `stream` of every allocation of this stream's memory. */
    readonly id: StreamId,
    /** This stream's pages and slices. Set once by the server right after construction. */
    public memory: MemoryManagement<GPUBuffer>,
    /** The buffers behind `memory` (retained pool, failures). Set once with `memory`. */
    public storage?: GpuBufferStorage,
  ) {}

  /** Whether the unsubmitted encoder holds any command. */
  get hasPendingWork(): boolean {
    return this.encoder !== undefined || this.pendingChecks.length > 0;
  }

  /** Records a failure in the bounded log. */
  logFailure(error: ServerError): void {
    this.failures.push(error);
    if (this.failures.length > FAILURE_LOG_LIMIT) this.failures.shift();
  }

  failure(binding: BufferBinding, accept?: (failure: FailureId) => boolean): FailureId | undefined {
    return this.claims.failure(binding, accept);
  }

  taint(binding: BufferBinding, failure: FailureId, graph: ErrorGraph): void {
    this.claims.taint(binding, failure, graph);
  }

  written(binding: BufferBinding, graph: ErrorGraph): void {
    this.claims.written(binding, graph);
  }
}
