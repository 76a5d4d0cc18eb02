import { invariant, type StreamId } from "@weft/environment";
import type { TensorIr } from "@weft/fusion";
import { contiguousStrides, deviceBytesPerElement, elementCount } from "@weft/fusion";
import { storageElement } from "../codegen/wgsl/types.js";
import { contiguousHandle, offsetHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import type { ElementwiseOutput } from "../kernels/elementwise.js";
import type { Launcher } from "./launcher.js";

/**
 * Where one written output of an elementwise block lives when the block packs its single-element
 * outputs: in the allocation of output `leader` (the first of its pack), at element `offset`.
 * The leader (`offset` 0) allocates `count` elements for the whole pack.
 */
export interface PackSlot {
  readonly leader: number;
  readonly offset: number;
  readonly count: number;
}

/**
 * Packs the single-element outputs of one elementwise block: every written output that is not in
 * place shares one allocation (and one binding) with the others of its WGSL storage type.
 *
 * @remarks
 * **Why.** A chain of dependent ops on a one-element tensor (a counter, a scalar recurrence) keeps
 * every intermediate alive until its `tidy` ends, so a fused block must write each of them; with
 * one binding per output the device's storage-binding limit (16 on the software adapter) cut such
 * a chain into kernels of 14 ops. Packed, a block of 64 ops binds two buffers. The fuser counts
 * bindings the same way (`TraceFuser`, packing classes), so a block it accepts always fits.
 * **When.** Only when the block's shape has exactly one element (`count` × 4 bytes, at most
 * `MAX_FUSED_OPS` elements: a surviving output keeps at most 256 bytes of its pack alive), only
 * 4-byte storage types (`f16` never packs), and only for packs of two or more.
 * **Layout.** A member is a dense view at its element offset; it is never written in place later
 * (`canWriteInPlace` needs offset 0 and an allocation of exactly its bytes), is read through its
 * offset (`offsetHandle`), and its memory is freed with the last member.
 * Returns `undefined` when nothing is packed.
 */
export function planPacks(outputs: readonly ElementwiseOutput[], elements: number): (PackSlot | undefined)[] | undefined {
  if (elements !== 1) return undefined;
  const leaders = new Map<string, number>();
  const members = new Map<number, number>();
  const slots: { leader: number; offset: number }[] = [];
  outputs.forEach((o, k) => {
    if (o.inPlaceSlot !== undefined || o.dtype === "f16") return;
    const type = storageElement(o.dtype, 1);
    const leader = leaders.get(type);
    if (leader === undefined) {
      leaders.set(type, k);
      members.set(k, 1);
      slots[k] = { leader: k, offset: 0 };
      return;
    }
    const count = members.get(leader) ?? 1;
    members.set(leader, count + 1);
    slots[k] = { leader, offset: count };
  });
  let packed = false;
  const out: (PackSlot | undefined)[] = outputs.map((_, k) => {
    const s = slots[k];
    const count = s === undefined ? 1 : (members.get(s.leader) ?? 1);
    if (s === undefined || count < 2) return undefined;
    packed = true;
    return { leader: s.leader, offset: s.offset, count: s.leader === k ? count : 0 };
  });
  return packed ? out : undefined;
}

/** `outputs` with the packed members writing through their leader's binding at their offset. */
export function packedOutputs(outputs: readonly ElementwiseOutput[], packs: readonly (PackSlot | undefined)[] | undefined, shape: readonly number[]): ElementwiseOutput[] {
  if (packs === undefined) return [...outputs];
  return outputs.map((o, k) => {
    const p = packs[k];
    if (p === undefined || p.leader === k) return o;
    return { ...o, packedWith: p.leader, layout: { shape, strides: contiguousStrides(shape), offset: p.offset } };
  });
}

/**
 * The handle written output `k` (tensor `t`) gets: in place into `inPlace` (a new reference on its
 * memory), a pack member (a reference on its leader's allocation, at its offset), a pack leader
 * (the whole pack's allocation), or an allocation of its own. `earlier` are the handles of outputs
 * `0..k-1`. Whether the launch binds it: {@link outputBound}.
 */
export function outputHandle(
  launcher: Launcher,
  stream: StreamId,
  t: TensorIr,
  k: number,
  inPlace: WebGpuHandle | undefined,
  pack: PackSlot | undefined,
  earlier: readonly WebGpuHandle[],
): WebGpuHandle {
  if (inPlace !== undefined) {
    inPlace.memory.retain();
    launcher.counters.inPlaceWrites++;
    return contiguousHandle(inPlace.memory, t.shape, t.dtype);
  }
  if (pack !== undefined && pack.leader !== k) {
    const leader = earlier[pack.leader];
    invariant(leader !== undefined, () => `packed output ${k} precedes its leader ${pack.leader}`);
    leader.memory.retain();
    return offsetHandle(leader.memory, t.shape, t.dtype, pack.offset);
  }
  const copies = pack === undefined ? 1 : pack.count;
  const bytes = copies * elementCount(t.shape) * deviceBytesPerElement(t.dtype);
  return contiguousHandle(launcher.empty(bytes, stream), t.shape, t.dtype);
}

/**
 * Whether the launch binds output `k`'s {@link outputHandle}: an allocation of its own or a pack
 * leader's, yes; written in place or a pack member (through another binding), no.
 */
export function outputBound(k: number, inPlace: WebGpuHandle | undefined, pack: PackSlot | undefined): boolean {
  return inPlace === undefined && (pack === undefined || pack.leader === k);
}
