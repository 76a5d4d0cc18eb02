/// <reference types="@webgpu/types" preserve="true" />
import { invariant, type Deferred } from "@weft/environment";
import { DeviceLostError, type AllocationId, type BufferBinding, type ServerError } from "@weft/server";
import { MapMode } from "../device/gpu-constants.js";
import type { WebGpuStream } from "./webgpu-stream.js";

/**
 * One read waiting in a {@link ReadBatch}: what it reads, who waits, and the pins it holds. A
 * class, not a literal: one is built per read (docs/performance.md#allocation-sites).
 */
export class PendingRead {
  constructor(
    /** The stream the read was issued on (flushed before the batch's copies). */
    readonly stream: WebGpuStream,
    /** The byte ranges to read, in the order the result lists them. */
    readonly bindings: readonly BufferBinding[],
    /** Settled once, with one array per binding, or with the read's own error. */
    readonly done: Deferred<Uint8Array[]>,
    /**
     * Pins taken when the read was issued, so its slices cannot be reused before the copy ran and
     * the read settled; emptied by {@link releasePins}.
     */
    readonly unpins: (() => void)[],
    /**
     * Caller-owned destinations, one per binding (`undefined`: none): a binding's bytes are copied
     * from the mapped staging buffer straight into its destination, which takes its place in the
     * result, instead of into a fresh array.
     */
    readonly into: readonly (Uint8Array | undefined)[] | undefined,
  ) {}
}

/**
 * The reads issued in one turn, collected so that they cost one copy submit and one `mapAsync`.
 *
 * @remarks
 * **Why.** A read is a copy into a mappable buffer, a submit and a `mapAsync`; in Node, Dawn
 * resolves a map only when its event loop polls, so 64 reads issued together paid 64 polls. A
 * batch lets the server record the reads of a turn and perform them together when the turn ends
 * (a microtask), or earlier when later work would overwrite bytes a read has not copied yet.
 * **What stays true.** `allocations` is exactly the allocations of the reads' bindings and
 * `streams` the streams they were issued on; every read in `reads` holds its pins until the batch
 * completes or is aborted. A batch is sealed once (the server drops it when it seals it).
 */
export class ReadBatch {
  /** The reads, in issue order. Bounded by the reads of one turn. */
  readonly reads: PendingRead[] = [];
  /** Allocations some read of this batch copies; a write to one must seal the batch first. */
  readonly allocations = new Set<AllocationId>();
  /** The streams the reads were issued on. */
  readonly streams = new Set<WebGpuStream>();

  /** Adds `read` to the batch. */
  add(read: PendingRead): void {
    this.reads.push(read);
    this.streams.add(read.stream);
    for (const b of read.bindings) this.allocations.add(b.allocation);
  }

  /** Whether writing any of `bindings` would change bytes a read of this batch has yet to copy. */
  overlaps(bindings: readonly BufferBinding[]): boolean {
    for (const b of bindings) if (this.allocations.has(b.allocation)) return true;
    return false;
  }

  /** Rejects every read with `error` and releases its pins (device loss, a failed seal). */
  abort(error: unknown): void {
    for (const r of this.reads) {
      r.done.reject(error);
      releasePins(r);
    }
  }
}

/** Releases a read's pins; idempotent (each pin is released exactly once). */
export function releasePins(read: PendingRead): void {
  for (const unpin of read.unpins.splice(0)) unpin();
}

/** A resolved byte range of a read: where its bytes live in device memory. */
export interface ReadSource {
  readonly buffer: GPUBuffer;
  /** Byte offset of the range inside `buffer`. */
  readonly offset: number;
  /** Bytes of the range (the binding's size). */
  readonly size: number;
}

/**
 * A {@link ReadSource}. This module's per-read records are classes, built with `new`: a read's
 * objects from a literal site would be born in the old generation once the site was tenured by a
 * phase of large reads (docs/performance.md#allocation-sites).
 */
export function readSource(buffer: GPUBuffer, offset: number, size: number): ReadSource {
  return new SourceRange(buffer, offset, size);
}

class SourceRange implements ReadSource {
  constructor(
    readonly buffer: GPUBuffer,
    readonly offset: number,
    readonly size: number,
  ) {}
}

/** One `copyBufferToBuffer` of a batch: 4-byte aligned on both sides. */
export interface ReadCopy {
  readonly buffer: GPUBuffer;
  readonly sourceOffset: number;
  readonly stagingOffset: number;
  readonly length: number;
}

/** Where one binding's bytes land: `[at, at + size)` of staging buffer `group`. */
export interface ReadPlacement {
  readonly group: number;
  readonly at: number;
  readonly size: number;
}

/** The copies into one staging buffer: `bytes` (a multiple of 4) is what is copied and mapped. */
export interface CopyGroup {
  readonly copies: ReadCopy[];
  bytes: number;
}

/** The copy plan of a batch: groups (one staging buffer and one map each) and, per read, per binding, where its bytes land. */
export interface ReadPlan {
  readonly groups: CopyGroup[];
  readonly placements: ReadPlacement[][];
}

/** The start of the aligned span `[start, end)` copied for `source`: copies move whole 4-byte words. */
function spanStart(source: ReadSource): number {
  return source.offset - (source.offset % 4);
}

/** The end of the aligned span copied for `source` (see {@link spanStart}). */
function spanEnd(source: ReadSource): number {
  return Math.min(Math.ceil((source.offset + source.size) / 4) * 4, source.buffer.size);
}

/** The staging bytes a read of `sources` needs on its own (what decides whether it fits a group). */
export function readBytes(sources: readonly ReadSource[]): number {
  let total = 0;
  for (const s of sources) total += spanEnd(s) - spanStart(s);
  return total;
}

class Copy implements ReadCopy {
  constructor(
    readonly buffer: GPUBuffer,
    readonly sourceOffset: number,
    readonly stagingOffset: number,
    readonly length: number,
  ) {}
}

class Placement implements ReadPlacement {
  constructor(
    readonly group: number,
    readonly at: number,
    readonly size: number,
  ) {}
}

class Group implements CopyGroup {
  readonly copies = Array.of<ReadCopy>();
  bytes = 0;
}

class Plan implements ReadPlan {
  readonly groups = Array.of<CopyGroup>();
  readonly placements = Array.of<ReadPlacement[]>();
}

/**
 * Lays the reads' byte ranges out in staging buffers of at most `maxGroupBytes` bytes, in order,
 * each read wholly inside one group (so each read waits for one map). A range read twice in one
 * group (the same tensor read twice in a turn) is copied once. Reads must each fit `maxGroupBytes`
 * (see {@link readBytes}).
 */
export function planReadCopies(reads: readonly (readonly ReadSource[])[], maxGroupBytes: number): ReadPlan {
  const plan = new Plan();
  const { groups, placements } = plan;
  let group: CopyGroup | undefined;
  /** Copies already in the current group, by source buffer, then by `start:end`. */
  let seen = new Map<GPUBuffer, Map<string, number>>();
  for (const sources of reads) {
    const need = readBytes(sources);
    invariant(need <= maxGroupBytes, "reads larger than a staging buffer are rejected before planning");
    if (group === undefined || group.bytes + need > maxGroupBytes) {
      group = new Group();
      groups.push(group);
      seen = new Map();
    }
    const g = groups.length - 1;
    const mine = Array.of<ReadPlacement>();
    for (const s of sources) {
      const start = spanStart(s);
      const end = spanEnd(s);
      const key = `${start}:${end}`;
      let byRange = seen.get(s.buffer);
      let at = byRange?.get(key);
      if (at === undefined) {
        at = group.bytes;
        if (end > start) group.copies.push(new Copy(s.buffer, start, at, end - start));
        group.bytes += end - start;
        if (byRange === undefined) seen.set(s.buffer, (byRange = new Map()));
        byRange.set(key, at);
      }
      mine.push(new Placement(g, at + (s.offset - start), s.size));
    }
    placements.push(mine);
  }
  return plan;
}

/** What {@link completeReads} needs from the server, and nothing more (docs/pitfalls.md#p4: it holds no stream). */
export interface ReadCompletion {
  /** One staging buffer per plan group, each with `bytes` copied into it by a submitted command. */
  readonly staging: readonly { readonly buffer: GPUBuffer; readonly bytes: number }[];
  /** Settles when every error scope that was outstanding at submit has settled. */
  readonly settled: Promise<unknown>;
  /** The validation scope of the copy submit: an error means no read's bytes arrived. */
  readonly copyScope: Promise<GPUError | null>;
  /** The error a read of `bindings` must reject with now (taint reported since the read was issued). */
  lateError(bindings: readonly BufferBinding[]): ServerError | undefined;
  /** The device-loss error, once the device is lost. */
  lost(): DeviceLostError | undefined;
  /** Takes a staging buffer back after unmap (for reuse). */
  release(buffer: GPUBuffer): void;
  /** Turns a failed copy submit into the error every read of the batch rejects with. */
  copyFailed(error: GPUError): ServerError;
}

/**
 * Maps every staging buffer once, copies each read's bytes out of the mapping (one host copy per
 * binding: `unmap` detaches the mapping, so the bytes must be copied before it), then, after the
 * error scopes outstanding at submit settled (one wait for the whole batch), settles each read:
 * rejected with its own taint when one was reported meanwhile, else resolved with its bytes.
 * Every read's pins are released at the end, whatever happened.
 */
export async function completeReads(reads: readonly PendingRead[], plan: ReadPlan, c: ReadCompletion): Promise<void> {
  try {
    await settleReads(reads, plan, c);
  } catch (error) {
    // A bug or an unexpected throw from the mapping must not leave a read waiting forever.
    for (const r of reads) {
      r.done.reject(c.lost() ?? error);
      releasePins(r);
    }
  }
}

async function settleReads(reads: readonly PendingRead[], plan: ReadPlan, c: ReadCompletion): Promise<void> {
  const results: (Uint8Array[] | undefined)[] = reads.map((r) => new Array<Uint8Array>(r.bindings.length));
  const maps = c.staging.map((s) => (s.bytes > 0 ? s.buffer.mapAsync(MapMode.READ, 0, s.bytes) : Promise.resolve()));
  // Observe every map at once so a rejection never goes unhandled while an earlier one is awaited.
  const mapped = await Promise.allSettled(maps);
  const failed = new Map<number, unknown>();
  mapped.forEach((m, g) => {
    const staging = c.staging[g];
    invariant(staging !== undefined, "one staging buffer per map");
    if (m.status === "rejected") {
      failed.set(g, m.reason);
      staging.buffer.destroy();
      return;
    }
    if (staging.bytes > 0) {
      const bytes = new Uint8Array(staging.buffer.getMappedRange(0, staging.bytes));
      plan.placements.forEach((placements, i) => {
        const out = results[i];
        invariant(out !== undefined, "one result per read");
        placements.forEach((p, k) => {
          if (p.group !== g) return;
          const dest = reads[i]?.into?.[k];
          if (dest === undefined || dest.byteLength < p.size) out[k] = bytes.slice(p.at, p.at + p.size);
          else {
            dest.set(bytes.subarray(p.at, p.at + p.size));
            out[k] = dest;
          }
        });
      });
      staging.buffer.unmap();
    }
    if (c.lost() === undefined) c.release(staging.buffer);
  });
  const [copyError] = await Promise.all([c.copyScope, c.settled]);
  reads.forEach((r, i) => {
    try {
      const lost = c.lost();
      const group = plan.placements[i]?.[0]?.group;
      const mapError = group === undefined ? undefined : failed.get(group);
      if (lost !== undefined) r.done.reject(lost);
      else if (copyError !== null) r.done.reject(c.copyFailed(copyError));
      else if (mapError !== undefined) r.done.reject(new DeviceLostError(`mapping a readback buffer failed: ${String(mapError)}`, { cause: mapError }));
      else {
        const late = c.lateError(r.bindings);
        const out = results[i];
        if (late !== undefined) r.done.reject(late);
        else if (out !== undefined) r.done.resolve(out);
      }
    } finally {
      releasePins(r);
    }
  });
}
