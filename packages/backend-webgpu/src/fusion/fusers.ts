import type { BlockFallbackPort, FuserProperties, FuserStatus, OperationFuser, OperationIr, TensorId, TensorIr } from "@weft/fusion";
import { broadcastsInto, operationInputs, readsIndex, sameShape, SoftmaxPattern, tensorAt } from "@weft/fusion";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import { isExpression } from "./elementwise-ops.js";
import type { Launcher } from "./launcher.js";
import { ElementwiseOptimization, MatmulChainOptimization, MatmulOptimization, MatmulSoftmaxOptimization, ReduceOptimization, SoftmaxOptimization, type FusedKind, type WebGpuOptimization } from "./optimization.js";
import type { MatmulChooser } from "./run-matmul.js";

/** Most operations one fused block takes (Burn's limit). */
export const MAX_FUSED_OPS = 64;

/**
 * The relative shape id of a dimension of size 1. Fusers see operations in the fusion engine's
 * relative form (`OperationConverter`): every distinct dim value becomes a dense shape id and
 * size 1 is always id 0, so "broadcasts" means "equal id, or id 0".
 */
const SIZE_ONE = 0;

/** What every fuser hands to the optimizations it builds, and the bound on a block's tensors. */
export interface FuserKit {
  /** Where the optimizations launch (the runtime's kernel cache and client). */
  readonly launcher: Launcher;
  /** How a matmul block picks its tile configuration (the runtime's tuner, or the heuristic). */
  readonly chooseMatmul: MatmulChooser;
  /** Distinct tensors one block may touch: `maxStorageBuffersPerShaderStage - 1`. */
  readonly maxBindings: number;
  /** What a block whose kernel the device rejects re-runs op by op with (see `WebGpuOptimization`). */
  readonly fallback: BlockFallbackPort<WebGpuHandle>;
}

/** Packing classes: single-element outputs of one class share one allocation (and binding). */
const PACK_CLASSES = 3;

/**
 * The packing class of a product (relative form) whose outputs a packing kernel may share with
 * others: `f32` 0, `i32` 1, `u32` and `bool` (stored as `u32`) 2; `undefined` unless it has exactly
 * one element (every relative dim is the size-1 id) and a 4-byte storage type.
 */
function packClass(t: TensorIr): number | undefined {
  for (const d of t.shape) if (d !== SIZE_ONE) return undefined;
  switch (t.dtype) {
    case "f32":
      return 0;
    case "i32":
      return 1;
    case "u32":
    case "bool":
      return 2;
    case "f16":
      return undefined;
    default:
      return t.dtype satisfies never;
  }
}

/** Whether an input of `op` before position `pos` is the tensor `id` (an op reading a tensor twice binds it once). */
function seenBefore(op: OperationIr, pos: number, id: TensorId): boolean {
  for (let p = 0; p < pos; p++) if (tensorAt(op, p)?.id === id) return true;
  return false;
}

/**
 * The shared trace logic of the three fusers: phases of elementwise ops over one reference shape,
 * bounded bindings, `drop`s accepted once something was fused.
 *
 * @remarks
 * **Bounded by** {@link MAX_FUSED_OPS} operations and `maxBindings` storage bindings
 * (`maxStorageBuffersPerShaderStage - 1`). The bindings a block's kernel needs are its inputs
 * (tensors read from outside the block) plus its *written* outputs: a tensor produced in the block
 * whose last use (a `ReadWrite` use or a `drop`) lies inside the block is never written
 * (`BlockGraph`'s write elision) and takes no binding. The fuser counts exactly that after
 * every accepted operation, so every prefix it offers fits the device: a `tidy` loop whose
 * intermediates are dropped at the end of each step fuses step after step instead of closing once
 * 15 distinct tensors were touched.
 * **Invariant.** `len()` counts exactly the accepted prefix (the elementwise fuser may offer a
 * shorter one: {@link ElementwiseFuser}); once closed, `fuse` ignores ops.
 * **No allocation per operation**: the two sets are updated in place (`tensorAt` walks the op).
 */
abstract class TraceFuser implements OperationFuser<WebGpuOptimization> {
  protected readonly kit: FuserKit;
  protected count = 0;
  protected computeOps = 0;
  protected closed = false;
  /** Tensors the block reads from outside it (input bindings); bounded by `maxBindings`. */
  protected inputs = new Set<TensorId>();
  /**
   * Tensors produced in the block whose last use is not in it yet (they would be written: output
   * bindings). Added with their producer, removed by a consuming use or a `drop` in the block;
   * the bindings they and `inputs` take exceed `maxBindings` only past {@link TraceFuser.fit}
   * (the elementwise fuser, which then offers a shorter prefix).
   */
  protected live = new Set<TensorId>();
  /**
   * Per packing class (see {@link packClass}: f32, i32, u32/bool), the live products of that
   * class whose outputs are packed into one allocation and so share one binding; always zero
   * unless {@link TraceFuser.packsScalars}. Changed with `live`.
   */
  readonly #packed = new Int32Array(PACK_CLASSES);
  /** The class of each live packed product (a subset of `live`, same bound). */
  #packClass = new Map<TensorId, number>();
  /** Scratch copy of `#packed` for {@link TraceFuser.bindingsWith} (no allocation per op). */
  readonly #scratch = new Int32Array(PACK_CLASSES);
  /**
   * Whether the kernel this fuser's block runs as packs single-element outputs of one storage
   * type into one allocation (one binding: the elementwise kernel does, `runElementwiseBlock`).
   */
  protected readonly packsScalars: boolean = false;

  /**
   * The longest accepted prefix that writes nothing (every tensor it produced died in it), and its
   * compute operations; 0 when there is none. Such a prefix launches no kernel at all. Only the
   * elementwise fuser cuts its block there (see {@link ElementwiseFuser}).
   */
  protected clean = 0;
  protected cleanComputeOps = 0;

  /**
   * The longest accepted prefix whose kernel fits `maxBindings`, and its compute operations. Equal
   * to `count` unless the fuser {@link TraceFuser.overflows} and went past the limit.
   */
  protected fit = 0;
  protected fitComputeOps = 0;

  /**
   * Whether the fuser goes on accepting operations past `maxBindings`: the elementwise fuser
   * (it can offer a shorter prefix, see {@link ElementwiseFuser}) and the matmul+softmax fuser (it
   * is ready only once its block fits, see {@link MatmulSoftmaxFuser}); the others close there.
   */
  protected readonly overflows: boolean = false;

  constructor(kit: FuserKit) {
    this.kit = kit;
  }

  abstract readonly kind: FusedKind;
  /** Whether `op` (not a `drop`) extends the block; may update the phase. */
  protected abstract accept(op: Exclude<OperationIr, { kind: "drop" }>): boolean;
  protected abstract ready(): boolean;
  protected abstract fresh(): TraceFuser;

  fuse(op: OperationIr): void {
    if (this.closed) return;
    if (this.count >= MAX_FUSED_OPS) {
      this.closed = true;
      return;
    }
    if (op.kind === "drop") {
      if (this.count === 0) this.closed = true;
      else {
        this.count++;
        this.#kill(op.tensor.id);
        this.dropped(op.tensor.id);
        this.markClean();
        if (this.fit === this.count - 1 || this.bindingsNow() <= this.kit.maxBindings) this.#markFit();
      }
      return;
    }
    const over = this.bindingsWith(op) > this.kit.maxBindings;
    if ((over && (!this.overflows || this.count === 0)) || !this.accept(op)) {
      this.closed = true;
      return;
    }
    for (let pos = 0; ; pos++) {
      const t = tensorAt(op, pos);
      if (t === undefined || t === op.out) break;
      if (this.live.has(t.id)) {
        if (t.status === "ReadWrite") this.#kill(t.id);
      } else this.inputs.add(t.id);
    }
    this.live.add(op.out.id);
    const cls = this.packsScalars ? packClass(op.out) : undefined;
    if (cls !== undefined) {
      this.#packClass.set(op.out.id, cls);
      this.#packed[cls] = (this.#packed[cls] ?? 0) + 1;
    }
    this.count++;
    this.computeOps++;
    if (!over) this.#markFit();
  }

  /** Records the accepted prefix as fitting the binding limit. */
  #markFit(): void {
    this.fit = this.count;
    this.fitComputeOps = this.computeOps;
  }

  /** The bindings the accepted prefix's kernel needs: inputs, written products, one per packing class in use. */
  protected bindingsNow(): number {
    let n = this.inputs.size + this.live.size - this.#packClass.size;
    for (let c = 0; c < PACK_CLASSES; c++) if ((this.#packed[c] ?? 0) > 0) n++;
    return n;
  }

  /** Records the accepted prefix as clean when it writes nothing. */
  protected markClean(): void {
    if (this.live.size !== 0 || this.computeOps === 0) return;
    this.clean = this.count;
    this.cleanComputeOps = this.computeOps;
  }

  /** A product of the block died in it (a consuming use or a `drop`): it is not written. */
  #kill(id: TensorId): void {
    if (!this.live.delete(id)) return;
    const cls = this.#packClass.get(id);
    if (cls === undefined) return;
    this.#packClass.delete(id);
    this.#packed[cls] = (this.#packed[cls] ?? 0) - 1;
  }

  /**
   * The bindings of the block extended by `op` (counted without changing anything): inputs, plus
   * one per written product not packed, plus one per packing class in use.
   */
  protected bindingsWith(op: Exclude<OperationIr, { kind: "drop" }>): number {
    const packed = this.#scratch;
    packed.set(this.#packed);
    let plain = this.live.size - this.#packClass.size;
    let n = this.inputs.size;
    for (let pos = 0; ; pos++) {
      const t = tensorAt(op, pos);
      if (t === undefined || t === op.out) break;
      if (this.live.has(t.id)) {
        // A consuming use of a block output: it is no longer written (once, even if read twice).
        if (t.status === "ReadWrite" && !seenBefore(op, pos, t.id)) {
          const cls = this.#packClass.get(t.id);
          if (cls === undefined) plain--;
          else packed[cls] = (packed[cls] ?? 0) - 1;
        }
      } else if (!this.inputs.has(t.id) && !seenBefore(op, pos, t.id)) n++;
    }
    const cls = this.packsScalars ? packClass(op.out) : undefined;
    if (cls === undefined) plain++;
    else packed[cls] = (packed[cls] ?? 0) + 1;
    n += plain;
    for (let c = 0; c < PACK_CLASSES; c++) if ((packed[c] ?? 0) > 0) n++;
    return n;
  }

  abstract finish(): WebGpuOptimization;

  /** A `drop` of `id` was accepted (the dropped tensor dies inside the block). */
  protected dropped(_id: TensorId): void {}

  reset(): void {
    this.count = 0;
    this.computeOps = 0;
    this.closed = false;
    this.inputs.clear();
    this.live.clear();
    this.#packClass.clear();
    this.#packed.fill(0);
    this.clean = 0;
    this.cleanComputeOps = 0;
    this.fit = 0;
    this.fitComputeOps = 0;
    this.resetPhase();
  }

  protected abstract resetPhase(): void;

  status(): FuserStatus {
    return this.closed ? "closed" : "open";
  }

  properties(): FuserProperties {
    return { ready: this.ready(), score: this.ready() ? this.computeOps * 10 + this.bonus() : 0 };
  }

  protected bonus(): number {
    return 0;
  }

  len(): number {
    return this.count;
  }

  clone(): OperationFuser<WebGpuOptimization> {
    const copy = this.fresh();
    copy.count = this.count;
    copy.computeOps = this.computeOps;
    copy.closed = this.closed;
    copy.inputs = new Set(this.inputs);
    copy.live = new Set(this.live);
    copy.#packClass = new Map(this.#packClass);
    copy.#packed.set(this.#packed);
    copy.clean = this.clean;
    copy.cleanComputeOps = this.cleanComputeOps;
    copy.fit = this.fit;
    copy.fitComputeOps = this.fitComputeOps;
    this.copyPhase(copy);
    return copy;
  }

  protected abstract copyPhase(into: TraceFuser): void;
}

/** Whether `op` is an expression (elementwise or creation) that fits a block whose outputs all have shape `ref`. */
function fitsShape(op: Exclude<OperationIr, { kind: "drop" }>, ref: readonly number[]): boolean {
  if (!isExpression(op) || !sameShape(op.out.shape, ref)) return false;
  for (let pos = 0; ; pos++) {
    const t = tensorAt(op, pos);
    if (t === undefined || t === op.out) return true;
    if (!broadcastsInto(t.shape, ref, SIZE_ONE)) return false;
  }
}

/**
 * Fuses a chain of elementwise operations (with broadcast inputs) whose outputs share one shape
 * into ONE kernel; `drop`s make write elision and in-place writes possible. Burn's
 * `ElemwiseFuser`.
 *
 * @remarks
 * **Cut at a clean prefix.** Once closed, the block offered is the longest accepted prefix that
 * writes nothing, when there is one (every tensor it produced died in it: dead code, so it
 * launches no kernel), instead of the whole accepted run. The operations after the cut start the
 * next block, where they fuse with what follows. A `tidy` loop whose steps drop their
 * intermediates then runs no kernel at all, where the whole run would have written the outputs
 * of the step the limit cut in half. Never worse in kernels: the cut prefix launches nothing, and
 * the rest needed a kernel in any case.
 *
 * **Past the binding limit.** An operation that takes the block past `maxBindings` does not close
 * it: the products alive now may still die in it (a `tidy` step's drops come after its last
 * operation), and a prefix that writes nothing launches nothing, whatever it touched. The fuser
 * goes on (to {@link MAX_FUSED_OPS} or an operation it cannot take) and offers, while the run
 * does not fit, its clean prefix when there is one, else its longest prefix that fits;
 * `accepted()` counts what it took, so the block search grows the block by it
 * (`OperationFuser.accepted`). On a device with WebGPU's default 8 storage buffers per stage, a
 * `tidy` step of ten live results closed the block at its seventh operation: the recording loop
 * (`profile-host.mjs record webgpu` on Dawn's null adapter, 8 buffers) launched 0.07–0.10 kernels
 * per op, each writing results the step then dropped; now none (2026-11-30, 2-core machine,
 * three alternating pairs: 5.5–8.3 → 2.8–3.2 µs per op). **Invariant**: `len()` is always a
 * prefix whose kernel fits the device, or one that launches nothing.
 */
export class ElementwiseFuser extends TraceFuser {
  readonly kind = "elementwise" as const;
  protected override readonly packsScalars = true;
  protected override readonly overflows = true;
  #ref: readonly number[] | undefined;

  /**
   * The prefix offered, when not the whole run (`undefined`): the whole run when it writes nothing
   * or fits while the fuser is open; else the clean prefix, when there is one; else the longest
   * fitting prefix.
   */
  #offer(): { readonly len: number; readonly computeOps: number } | undefined {
    if (this.clean === this.count) return undefined; // the whole run writes nothing
    const fits = this.fit === this.count;
    if (fits && !this.closed) return undefined;
    if (this.clean > 0) return { len: this.clean, computeOps: this.cleanComputeOps };
    return fits ? undefined : { len: this.fit, computeOps: this.fitComputeOps };
  }
  override len(): number {
    return this.#offer()?.len ?? this.count;
  }
  accepted(): number {
    return this.count;
  }
  override properties(): FuserProperties {
    const offer = this.#offer();
    if (offer === undefined) return super.properties();
    return { ready: offer.computeOps > 0, score: offer.computeOps * 10 };
  }

  protected accept(op: Exclude<OperationIr, { kind: "drop" }>): boolean {
    const ref = this.#ref ?? op.out.shape;
    if (!fitsShape(op, ref)) return false;
    this.#ref = ref;
    return true;
  }
  protected ready(): boolean {
    return this.computeOps > 0;
  }
  finish(): WebGpuOptimization {
    return new ElementwiseOptimization(this.kit.launcher, this.len(), this.kit.fallback);
  }
  protected fresh(): TraceFuser {
    return new ElementwiseFuser(this.kit);
  }
  protected resetPhase(): void {
    this.#ref = undefined;
  }
  protected copyPhase(into: TraceFuser): void {
    (into as ElementwiseFuser).#ref = this.#ref;
  }
}

/**
 * Fuses an elementwise prologue (on the reduce input's shape), one reduction, and an elementwise
 * epilogue (on the reduced shape) into one kernel. Burn's `ReduceFuser`.
 *
 * @remarks
 * **Decided at fuse time.** The reduce kernel writes only the epilogue's outputs: a prologue
 * tensor still used after the block cannot be produced. So the fuser is ready only once the
 * reduction was seen *and* every prologue output dies inside the block (a consuming use in the
 * prologue or by the reduction, or a `drop`); an epilogue operation reading a prologue output
 * closes it. What it offers is exactly what `planReduceBlock` plans, so execution never falls back
 * to running the block op by op.
 */
export class ReduceFuser extends TraceFuser {
  readonly kind = "reduce" as const;
  #prologue: readonly number[] | undefined;
  #epilogue: readonly number[] | undefined;
  /**
   * Prologue outputs (relative ids) that do not die inside the accepted prefix yet. Added when a
   * prologue op is accepted, removed by a consuming use before the epilogue or by a `drop`;
   * cleared by `reset`. Bounded by the block's operations.
   */
  #live = new Set<TensorId>();
  /** Every prologue output, live or not (an epilogue op may read none of them). */
  #produced = new Set<TensorId>();

  protected accept(op: Exclude<OperationIr, { kind: "drop" }>): boolean {
    if (this.#epilogue !== undefined) {
      if (operationInputs(op).some((t) => this.#produced.has(t.id))) return false;
      return fitsShape(op, this.#epilogue);
    }
    if (op.kind === "reduce") {
      if (this.#prologue !== undefined && !sameShape(op.input.shape, this.#prologue)) return false;
      this.#epilogue = op.out.shape;
      this.#consume(op);
      return true;
    }
    const ref = this.#prologue ?? op.out.shape;
    if (!fitsShape(op, ref) || readsIndex(op)) return false;
    this.#prologue = ref;
    this.#consume(op);
    this.#live.add(op.out.id);
    this.#produced.add(op.out.id);
    return true;
  }
  /** A consuming (`ReadWrite`) use of a prologue output before the epilogue is its last. */
  #consume(op: Exclude<OperationIr, { kind: "drop" }>): void {
    for (const t of operationInputs(op)) if (t.status === "ReadWrite") this.#live.delete(t.id);
  }
  protected override dropped(id: TensorId): void {
    this.#live.delete(id);
  }
  protected ready(): boolean {
    return this.#epilogue !== undefined && this.#live.size === 0;
  }
  protected override bonus(): number {
    return 5;
  }
  finish(): WebGpuOptimization {
    return new ReduceOptimization(this.kit.launcher, this.count, this.kit.fallback);
  }
  protected fresh(): TraceFuser {
    return new ReduceFuser(this.kit);
  }
  protected resetPhase(): void {
    this.#prologue = undefined;
    this.#epilogue = undefined;
    this.#live = new Set();
    this.#produced = new Set();
  }
  protected copyPhase(into: TraceFuser): void {
    const copy = into as ReduceFuser;
    copy.#prologue = this.#prologue;
    copy.#epilogue = this.#epilogue;
    copy.#live = new Set(this.#live);
    copy.#produced = new Set(this.#produced);
  }
}

/** Fuses a matmul and the elementwise epilogue on its output into one kernel. */
export class MatmulFuser extends TraceFuser {
  readonly kind = "matmul" as const;
  #out: readonly number[] | undefined;

  protected accept(op: Exclude<OperationIr, { kind: "drop" }>): boolean {
    if (this.#out === undefined) {
      if (op.kind !== "matmul") return false;
      this.#out = op.out.shape;
      return true;
    }
    return fitsShape(op, this.#out) && !readsIndex(op);
  }
  protected ready(): boolean {
    return this.#out !== undefined;
  }
  protected override bonus(): number {
    return 5;
  }
  finish(): WebGpuOptimization {
    return new MatmulOptimization(this.kit.launcher, this.count, this.kit.fallback, this.kit.chooseMatmul);
  }
  protected fresh(): TraceFuser {
    return new MatmulFuser(this.kit);
  }
  protected resetPhase(): void {
    this.#out = undefined;
  }
  protected copyPhase(into: TraceFuser): void {
    (into as MatmulFuser).#out = this.#out;
  }
}

/**
 * Fuses a matmul, an elementwise epilogue on its output, and the op sequence `Tensor.softmax`
 * records along the last axis of one of their products (see {@link SoftmaxFuser}) into ONE kernel
 * (`MatmulSoftmaxOptimization`): a classifier head, `softmax(h · W + b)`, in one launch instead of
 * two.
 *
 * @remarks
 * Ready once every product but the softmax's output died in the block (only `y` is written) and
 * the kernel's bindings (operands, epilogue inputs, `y`) fit the device. Until the `tidy`'s drops
 * arrive the block holds up to seven live products, more than WebGPU's default 8 storage buffers
 * allow, so the fuser goes on past `maxBindings` ({@link TraceFuser.overflows}): what it is ready
 * with is always the whole accepted run. The fuser sees relative shapes only: a product too
 * large for one workgroup per row (`matmulChainFits`) runs at execution as the matmul block and
 * the softmax block it would otherwise have been, two launches.
 */
export class MatmulSoftmaxFuser extends TraceFuser {
  readonly kind = "matmul" as const;
  protected override readonly overflows = true;
  #out: readonly number[] | undefined;
  /** The matmul's and its epilogue's products (relative ids): the softmax's input is one of them. */
  #produced = new Set<TensorId>();
  /** The softmax match, from its `max` on. */
  #pattern: SoftmaxPattern | undefined;

  protected accept(op: Exclude<OperationIr, { kind: "drop" }>): boolean {
    if (this.#out === undefined) {
      if (op.kind !== "matmul" || op.out.dtype !== "f32") return false;
      this.#out = op.out.shape;
      this.#produced.add(op.out.id);
      return true;
    }
    if (this.#pattern !== undefined) return this.#pattern.accept(op);
    if (op.kind === "reduce") {
      if (!this.#produced.has(op.input.id) || !sameShape(op.input.shape, this.#out)) return false;
      const pattern = new SoftmaxPattern();
      if (!pattern.accept(op)) return false;
      this.#pattern = pattern;
      return true;
    }
    if (!fitsShape(op, this.#out) || readsIndex(op)) return false;
    this.#produced.add(op.out.id);
    return true;
  }
  /** As {@link MatmulChainFuser}'s: its kernel (the chain's, one layer) binds no status words, so every storage buffer counts; the runner checks the bindings it really makes. */
  protected ready(): boolean {
    return this.#pattern?.complete === true && this.live.size === 1 && this.bindingsNow() <= this.kit.maxBindings + 1;
  }
  protected override bonus(): number {
    return 6;
  }
  finish(): WebGpuOptimization {
    return new MatmulSoftmaxOptimization(this.kit.launcher, this.count, this.kit.fallback, this.kit.chooseMatmul);
  }
  protected fresh(): TraceFuser {
    return new MatmulSoftmaxFuser(this.kit);
  }
  protected resetPhase(): void {
    this.#out = undefined;
    this.#produced = new Set();
    this.#pattern = undefined;
  }
  protected copyPhase(into: TraceFuser): void {
    const copy = into as MatmulSoftmaxFuser;
    copy.#out = this.#out;
    copy.#produced = new Set(this.#produced);
    copy.#pattern = this.#pattern?.clone();
  }
}

/**
 * Fuses a chain of products whose left operand is the previous product's epilogue result — a
 * small MLP's layers, `gelu(gelu(x · W1 + b1) · W2 + b2) · W3 + b3` — with each layer's
 * elementwise epilogue and, optionally, the op sequence `Tensor.softmax` records along the last
 * axis of the last layer's result, into ONE kernel (`MatmulChainOptimization`): one workgroup per
 * row computes every layer, the intermediate rows never leave it.
 *
 * @remarks
 * **Layers.** A matmul continues the chain when its left operand is a product of the current
 * layer (the chain's value) and its right operand comes from outside the block; the product's rows
 * (batch dims and `M`) must be the chain's. An epilogue op may read the current layer's products
 * and tensors from outside the block, never an earlier layer's products (the kernel does not keep
 * them). At least two layers: one layer and a softmax is {@link MatmulSoftmaxFuser}'s.
 * **Ready** once only the chain's output is alive (every other product died in the block: the
 * `tidy`'s drops) and the kernel's bindings (the first operand, every right operand and epilogue
 * input, the output) fit the device. Until the drops arrive the block holds every layer's
 * products, so the fuser goes on past `maxBindings` ({@link TraceFuser.overflows}); it stays open
 * until the read that needs the block (it accepts the drops), which is what lets every
 * intermediate die inside it.
 * **Past the kernel's bounds** (`matmulChainFits`: rows wider than a workgroup, many
 * multiply-adds) the block runs at execution as one matmul block per layer and the softmax block,
 * each drop after its tensor's last use (`MatmulChainOptimization`).
 */
export class MatmulChainFuser extends TraceFuser {
  readonly kind = "matmul" as const;
  protected override readonly overflows = true;
  #layers = 0;
  /** The current layer's product shape. */
  #out: readonly number[] | undefined;
  /** The current layer's products (relative ids): the next matmul's left operand is one of them. */
  #current = new Set<TensorId>();
  /** Every product of the block before the current layer: nothing may read them any more. */
  #earlier = new Set<TensorId>();
  /** The softmax match, from its `max` on. */
  #pattern: SoftmaxPattern | undefined;

  protected accept(op: Exclude<OperationIr, { kind: "drop" }>): boolean {
    if (this.#out === undefined) {
      if (op.kind !== "matmul" || op.out.dtype !== "f32" || op.out.shape.length < 2) return false;
      this.#layers = 1;
      this.#out = op.out.shape;
      this.#current.add(op.out.id);
      return true;
    }
    if (this.#pattern !== undefined) return this.#pattern.accept(op);
    for (const t of operationInputs(op)) if (this.#earlier.has(t.id)) return false;
    if (op.kind === "matmul") {
      const out = this.#out;
      const rows = out.slice(0, -1);
      if (op.out.dtype !== "f32" || !this.#current.has(op.lhs.id) || op.lhs.dtype !== "f32" || this.#current.has(op.rhs.id) || !sameShape(op.lhs.shape, out)) return false;
      if (!sameShape(op.out.shape.slice(0, -1), rows)) return false;
      for (const id of this.#current) this.#earlier.add(id);
      this.#current = new Set([op.out.id]);
      this.#out = op.out.shape;
      this.#layers++;
      return true;
    }
    if (op.kind === "reduce") {
      if (this.#layers < 2 || !this.#current.has(op.input.id) || !sameShape(op.input.shape, this.#out)) return false;
      const pattern = new SoftmaxPattern();
      if (!pattern.accept(op)) return false;
      this.#pattern = pattern;
      return true;
    }
    if (!fitsShape(op, this.#out) || readsIndex(op)) return false;
    this.#current.add(op.out.id);
    return true;
  }
  /**
   * The kernel binds its operands, epilogue inputs and output, nothing else: every storage buffer
   * of the device (`maxBindings` keeps one back for kernels that also bind status words). The
   * runner checks the bindings it really makes (a tensor used twice is bound twice) and runs the
   * parts when they do not fit.
   */
  protected ready(): boolean {
    if (this.#layers < 2 || this.live.size !== 1 || this.bindingsNow() > this.kit.maxBindings + 1) return false;
    if (this.#pattern !== undefined) return this.#pattern.complete;
    for (const id of this.live) if (!this.#current.has(id)) return false;
    return true;
  }
  protected override bonus(): number {
    return 7;
  }
  finish(): WebGpuOptimization {
    return new MatmulChainOptimization(this.kit.launcher, this.count, this.kit.fallback, this.kit.chooseMatmul);
  }
  protected fresh(): TraceFuser {
    return new MatmulChainFuser(this.kit);
  }
  protected resetPhase(): void {
    this.#layers = 0;
    this.#out = undefined;
    this.#current = new Set();
    this.#earlier = new Set();
    this.#pattern = undefined;
  }
  protected copyPhase(into: TraceFuser): void {
    const copy = into as MatmulChainFuser;
    copy.#layers = this.#layers;
    copy.#out = this.#out;
    copy.#current = new Set(this.#current);
    copy.#earlier = new Set(this.#earlier);
    copy.#pattern = this.#pattern?.clone();
  }
}

/**
 * Fuses the op sequence `Tensor.softmax` records along the last axis — `m = max(x)`,
 * `d = x − m`, `e = exp(d)`, `s = sum(e)`, `y = e / s` (f32, reduced axes kept) — with the
 * `drop`s of `m`, `d`, `e` and `s`, into ONE kernel (`SoftmaxOptimization`): four kernels and
 * four block executions fewer than the reduce and elementwise fusers' best (max | sub+exp | sum |
 * div), which is most of a served classifier's softmax.
 *
 * @remarks
 * **Pattern, not a new op.** The sequence stays five primitive ops in the IR (autodiff, the CPU
 * backend and the remote wire see nothing new); this fuser recognises exactly it, in the relative
 * form, and is ready only once the four intermediates died in the block (their `drop`s), so only
 * `y` is written. Rows too long for one workgroup's loop, or inputs that are not dense rows, run
 * the five ops one by one at execution (the fuser sees relative shapes only).
 */
export class SoftmaxFuser extends TraceFuser {
  readonly kind = "reduce" as const;
  #pattern = new SoftmaxPattern();

  protected accept(op: Exclude<OperationIr, { kind: "drop" }>): boolean {
    return this.#pattern.accept(op);
  }
  protected ready(): boolean {
    return this.#pattern.complete && this.live.size === 1;
  }
  protected override bonus(): number {
    return 5;
  }
  finish(): WebGpuOptimization {
    return new SoftmaxOptimization(this.kit.launcher, this.count, this.kit.fallback);
  }
  protected fresh(): TraceFuser {
    return new SoftmaxFuser(this.kit);
  }
  protected resetPhase(): void {
    this.#pattern.reset();
  }
  protected copyPhase(into: TraceFuser): void {
    (into as SoftmaxFuser).#pattern = this.#pattern.clone();
  }
}
