import { invariant } from "@weft/environment";
import type { OperationIr } from "../../../ir/operation-ir.js";
import { forEachTensor } from "../../../ir/operation-descriptor.js";
import { acceptedBy, type OperationFuser } from "../../../runtime/fusion-runtime.js";
import type { ExecutionStep } from "../../store/execution-plan-store.js";
import { DependencyGraph, isValidExecutionOrder } from "../graph/dependency-graph.js";
import { chunkNode, operationNode } from "../graph/operation-node.js";

/**
 * An execution of operations `[0, n)` of a segment: `order` is a permutation of `0 … n−1` (the
 * order they run in) and `steps` cut it, front to back, into fused blocks and unfused runs.
 *
 * **Invariant.** The step lengths sum to `n`; running the steps in order respects every hazard of
 * the operations (read after write, a free after every read).
 */
export interface BlockSchedule<O> {
  readonly order: readonly number[];
  readonly steps: readonly ExecutionStep<O>[];
}

/** A fresh fuser of the same kind as `prototype` (clones never share state with their source). */
export function freshFuser<O>(prototype: OperationFuser<O>): OperationFuser<O> {
  const fuser = prototype.clone();
  fuser.reset();
  return fuser;
}

/** The ready fuser with the highest score (the first on ties) among `fusers`, if any. */
export function bestReady<F extends { readonly fuser: OperationFuser<unknown> }>(fusers: readonly F[]): F | undefined {
  let best: F | undefined;
  let score = -Infinity;
  for (const f of fusers) {
    const p = f.fuser.properties();
    if (p.ready && f.fuser.len() > 0 && p.score > score) {
      best = f;
      score = p.score;
    }
  }
  return best;
}

/** A fuser following a block, and its index among the stream's fusers (what a plan records). */
interface Candidate<O> {
  readonly fuser: OperationFuser<O>;
  readonly index: number;
}

/** The relative tensor ids `op` touches. */
function tensorsOf(op: OperationIr): number[] {
  const ids: number[] = [];
  forEachTensor(op, (t) => ids.push(t.id));
  return ids;
}

/**
 * Cuts operations `[0, n)` of a segment into fused blocks and orders them: Weft's block-graph
 * search (Burn's `BlocksOptimizer`, reached by list scheduling instead of merge passes).
 *
 * @remarks
 * **How.** The operations' hazard graph ({@link DependencyGraph}: read after write, free after
 * read) says what must run before what. A block starts at the earliest operation not yet
 * scheduled (all of its predecessors ran), with fresh clones of the stream's fusers. Every later
 * operation is then considered once, in stream order; it joins the block when its predecessors
 * have all run or are in the block, and
 * - it shares a tensor with the block and some fuser still following the block accepts it, or
 * - it shares none (an independent operation) and the block's current best ready fuser accepts
 *   it: independent same-shape chains become one multi-output kernel, but an unrelated reduction
 *   or matmul never turns an elementwise block into another kind of kernel.
 * Fusers are only ever fed clones, so a rejected operation leaves the block as it was, and a
 * later operation the block can take is still taken (an independent `y.sum()` does not split
 * `x`'s chain; it runs as its own block after it).
 * The block keeps the longest prefix of its operations that a ready fuser covers (its best
 * one), else runs its first operation alone, unfused; the rest go back to the pool. Repeat until
 * every operation is scheduled.
 * **Why this is always valid.** A block holds only operations whose predecessors ran before it or
 * are in it, fed in stream order; so every order it produces respects read after write and free
 * after read (`isValidExecutionOrder`, checked again: a violation falls back to stream order).
 * **Cost.** At most `n` blocks, each scanning the remaining operations once and cloning the live
 * fusers for each candidate: `O(n² · fusers)` clone-and-fuse steps per exploration (explorations
 * run once per distinct graph; replays never schedule).
 */
export function scheduleBlocks<O>(ops: readonly OperationIr[], prototypes: readonly OperationFuser<O>[]): BlockSchedule<O> {
  const schedule = planBlocks(ops, prototypes);
  return isValidSchedule(ops, schedule.order, schedule.steps) ? schedule : streamOrder(ops.length);
}

/**
 * The list scheduling of {@link scheduleBlocks} without its final check (what tests check: it
 * must never need the fallback).
 */
export function planBlocks<O>(ops: readonly OperationIr[], prototypes: readonly OperationFuser<O>[]): BlockSchedule<O> {
  const n = ops.length;
  const graph = new DependencyGraph(ops.map(operationNode));
  const predecessors = graph.predecessors;
  const tensors = ops.map(tensorsOf);
  const done = new Uint8Array(n);
  const order: number[] = [];
  const steps: ExecutionStep<O>[] = [];
  const unfused = (position: number): void => {
    done[position] = 1;
    order.push(position);
    const last = steps[steps.length - 1];
    if (last?.kind === "operations") steps[steps.length - 1] = { kind: "operations", len: last.len + 1 };
    else steps.push({ kind: "operations", len: 1 });
  };

  let first = 0;
  while (first < n) {
    if (done[first] === 1) {
      first++;
      continue;
    }
    const seed = first;
    const seedOp = ops[seed] as OperationIr;
    let alive: Candidate<O>[] = [];
    prototypes.forEach((prototype, index) => {
      const fuser = freshFuser(prototype);
      fuser.fuse(seedOp);
      if (acceptedBy(fuser) === 1) alive.push({ fuser, index });
    });
    if (alive.length === 0) {
      unfused(seed);
      continue;
    }
    const members = [seed];
    const inBlock = new Uint8Array(n);
    inBlock[seed] = 1;
    const ids = new Set(tensors[seed]);
    let leader = bestReady(alive);
    let taken = leader === undefined ? undefined : { leader };
    for (let c = seed + 1; c < n; c++) {
      if (done[c] === 1) continue;
      if ((predecessors[c] ?? []).some((p) => done[p] !== 1 && inBlock[p] !== 1)) continue;
      const op = ops[c] as OperationIr;
      const accepted: Candidate<O>[] = [];
      let leaderAccepts = false;
      for (const candidate of alive) {
        const next = candidate.fuser.clone();
        next.fuse(op);
        if (acceptedBy(next) > acceptedBy(candidate.fuser)) {
          accepted.push({ fuser: next, index: candidate.index });
          if (candidate === leader) leaderAccepts = true;
        }
      }
      if (accepted.length === 0) continue;
      const connected = (tensors[c] ?? []).some((id) => ids.has(id));
      if (!connected && leader !== undefined && !leaderAccepts) continue;
      alive = accepted;
      members.push(c);
      inBlock[c] = 1;
      for (const id of tensors[c] ?? []) ids.add(id);
      leader = bestReady(alive);
      if (leader !== undefined) taken = { leader };
    }
    if (taken === undefined) {
      unfused(seed);
      continue;
    }
    // What the leader offers: the members it was fed, or a prefix of them (`len() ≤ accepted()`);
    // a prefix of the members is closed under their predecessors, the rest go back to the pool.
    const block = members.slice(0, taken.leader.fuser.len());
    const optimization = taken.leader.fuser.finish();
    for (const position of block) {
      done[position] = 1;
      order.push(position);
    }
    steps.push({ kind: "optimization", optimization, fuser: taken.leader.index, len: block.length });
  }

  invariant(order.length === n, () => `the block schedule covered ${order.length} of ${n} operations`);
  return { order, steps };
}

/** Every operation unfused, in stream order: always valid. */
export function streamOrder<O>(n: number): BlockSchedule<O> {
  return { order: Array.from({ length: n }, (_, i) => i), steps: n === 0 ? [] : [{ kind: "operations", len: n }] };
}

/**
 * Whether `steps` over `order` respect every tensor lifetime, each step taken as one unit
 * (`isValidExecutionOrder` over the steps' chunks).
 */
export function isValidSchedule<O>(ops: readonly OperationIr[], order: readonly number[], steps: readonly ExecutionStep<O>[]): boolean {
  const chunks = [];
  let at = 0;
  for (const step of steps) {
    const positions = order.slice(at, at + step.len);
    at += step.len;
    if (step.kind === "optimization") chunks.push(chunkNode(positions.map((p) => ops[p] as OperationIr), positions));
    else for (const p of positions) chunks.push(operationNode(ops[p] as OperationIr, p));
  }
  return at === order.length && isValidExecutionOrder(chunks);
}
