import { describe, expect, it } from "vitest";
import type { OperationIr } from "../../../ir/operation-ir.js";
import type { TensorId, TensorIr, TensorStatus } from "../../../ir/tensor-ir.js";
import type { OperationFuser, Optimization } from "../../../runtime/fusion-runtime.js";
import { ElementwiseFuser, TappedFuser } from "../../../testing/fusers.js";
import type { TestHandle, TestRuntime } from "../../../testing/test-runtime.js";
import { DependencyGraph, isValidExecutionOrder } from "../graph/dependency-graph.js";
import { operationNode } from "../graph/operation-node.js";
import { BlockSearch } from "./block-search.js";
import { isValidSchedule, planBlocks, scheduleBlocks } from "./schedule-blocks.js";

// Relative operations: tensors by small ids, two shapes that differ and a reduced one.
const A = [1, 2];
const B = [3, 4];
const R = [1, 0];
const t = (id: number, shape: readonly number[] = A, status: TensorStatus = "ReadOnly"): TensorIr => ({ id: id as TensorId, shape, dtype: "f32", status });
const un = (input: TensorIr, out: number): OperationIr => ({ kind: "unary", op: "exp", input, out: t(out, input.shape, "NotInit") });
const bin = (lhs: TensorIr, rhs: TensorIr, out: number): OperationIr => ({ kind: "binary", op: "add", lhs, rhs, out: t(out, lhs.shape, "NotInit") });
const sum = (input: TensorIr, out: number): OperationIr => ({ kind: "reduce", op: "sum", input, axes: [1], keepDims: true, out: t(out, R, "NotInit") });
const matmul = (lhs: TensorIr, rhs: TensorIr, out: number): OperationIr => ({ kind: "matmul", lhs, rhs, out: t(out, lhs.shape, "NotInit") });
const drop = (id: number, shape: readonly number[] = A): OperationIr => ({ kind: "drop", tensor: t(id, shape, "ReadWrite") });
/** The test runtime's elementwise fuser (never executed here, so it needs no runtime). */
const fusers = (): OperationFuser<Optimization<TestHandle>>[] => [new ElementwiseFuser(undefined as unknown as TestRuntime)];

/** The schedule as `[kind, positions]` per step. */
function steps(ops: readonly OperationIr[]): [string, number[]][] {
  const s = scheduleBlocks(ops, fusers());
  let at = 0;
  return s.steps.map((step) => {
    const positions = s.order.slice(at, (at += step.len));
    return [step.kind, positions];
  });
}

describe("DependencyGraph (Burn's search/graph tests)", () => {
  const node = (produced: number[], read: number[], freed: number[], position: number) => ({ produced, read, freed, position });

  it("an edge-free graph keeps stream order; read after write beats position", () => {
    expect(new DependencyGraph([node([1], [], [], 0), node([2], [], [], 1), node([3], [], [], 2)]).topologicalOrder()).toEqual([0, 1, 2]);
    // node 0 reads what node 2 produces: 2 must come first however late it is.
    expect(new DependencyGraph([node([1], [3], [], 0), node([2], [], [], 1), node([3], [], [], 2)]).topologicalOrder()).toEqual([1, 2, 0]);
  });

  it("write after read orders the freeing node after every reader; a cycle has no order", () => {
    const g = new DependencyGraph([node([2], [1], [1], 0), node([3], [1], [], 1)]);
    expect(g.topologicalOrder()).toEqual([1, 0]);
    const cyclic = new DependencyGraph([node([1], [2], [], 0), node([2], [1], [], 1)]);
    expect(cyclic.topologicalOrder()).toBeUndefined();
    expect(cyclic.isAcyclic()).toBe(false);
    expect(() => cyclic.reachability()).toThrow(RangeError);
  });

  it("reachability is transitive, over a diamond and past 64 nodes", () => {
    const diamond = new DependencyGraph([node([1], [], [], 0), node([2], [1], [], 1), node([3], [1], [], 2), node([4], [2, 3], [], 3)]).reachability();
    expect(diamond.reaches(0, 3)).toBe(true);
    expect(diamond.reaches(1, 2)).toBe(false);
    expect(diamond.reaches(3, 0)).toBe(false);
    const chain = new DependencyGraph(Array.from({ length: 100 }, (_, i) => node([i + 1], i === 0 ? [] : [i], [], i))).reachability();
    expect(chain.reaches(0, 99)).toBe(true);
    expect(chain.reaches(70, 31)).toBe(false);
  });

  it("lifetime validation: a read of a freed or not yet produced resource is invalid; external inputs are live", () => {
    expect(isValidExecutionOrder([node([2], [1], [], 0), node([3], [2], [2], 1)])).toBe(true);
    expect(isValidExecutionOrder([node([3], [2], [], 1), node([2], [1], [], 0)])).toBe(false);
    expect(isValidExecutionOrder([node([2], [1], [1], 0), node([3], [1], [], 1)])).toBe(false);
  });

  it("an operation frees its ReadWrite inputs and a drop its tensor", () => {
    expect(operationNode(bin(t(1), t(2, A, "ReadWrite"), 3), 4)).toEqual({ produced: [3], read: [1, 2], freed: [2], position: 4 });
    expect(operationNode(drop(5), 0)).toEqual({ produced: [], read: [5], freed: [5], position: 0 });
  });
});

describe("scheduleBlocks: each block fused on its own, independent operations moved out of a chain", () => {
  it("x.add, an independent y.sum, then x's chain: one fused block, the reduction after it", () => {
    const ops = [un(t(1), 2), sum(t(3, B), 4), un(t(2), 5), un(t(5), 6)];
    expect(steps(ops)).toEqual([
      ["optimization", [0, 2, 3]],
      ["operations", [1]],
    ]);
  });

  it("two interleaved chains of different shapes: two blocks; of one shape: one multi-output block", () => {
    const chains = (shape: readonly number[]) => [un(t(1), 2), un(t(10, shape), 11), un(t(2), 3), un(t(11, shape), 12), un(t(3), 4), un(t(12, shape), 13)];
    expect(steps(chains(B))).toEqual([
      ["optimization", [0, 2, 4]],
      ["optimization", [1, 3, 5]],
    ]);
    expect(steps(chains(A))).toEqual([["optimization", [0, 1, 2, 3, 4, 5]]]);
  });

  it("a chain with an unrelated matmul in the middle: the chain is one block, the matmul runs after it", () => {
    const ops = [un(t(1), 2), un(t(2), 3), matmul(t(20, B), t(21, B), 22), un(t(3), 4), un(t(4), 5)];
    expect(steps(ops)).toEqual([
      ["optimization", [0, 1, 3, 4]],
      ["operations", [2]],
    ]);
  });

  it("an independent op never pulls a chain past a reader it must wait for (free after read)", () => {
    // a = x.exp(); s = x.sum(); b = exp(x) consuming x: b waits for s, so it is not in a's block.
    const ops = [un(t(1), 2), sum(t(1), 3), un(t(1, A, "ReadWrite"), 4)];
    const s = scheduleBlocks(ops, fusers());
    expect(s.order.indexOf(1)).toBeLessThan(s.order.indexOf(2));
    expect(steps(ops)).toEqual([
      ["optimization", [0]],
      ["operations", [1]],
      ["optimization", [2]],
    ]);
  });

  it("a block's dropped intermediate read by an unfused op: the read runs before the drop", () => {
    const ops = [un(t(1), 2), sum(t(2), 3), un(t(2), 4), drop(2)];
    const s = scheduleBlocks(ops, fusers());
    expect(isValidSchedule(ops, s.order, s.steps)).toBe(true);
    expect(s.order.indexOf(1)).toBeLessThan(s.order.indexOf(3));
  });

  it("a fuser that accepts more than it offers: the block grows by what it accepts and runs what it offers", () => {
    // Accepts what the elementwise fuser accepts, but offers at most 2 operations until it has
    // accepted 4 (as the WebGPU elementwise fuser past its binding limit: later operations may make
    // the longer block valid).
    const offering = (): OperationFuser<Optimization<TestHandle>> => new TappedFuser(fusers()[0] as OperationFuser<Optimization<TestHandle>>, { offer: (n) => (n >= 4 ? n : Math.min(n, 2)) });
    const schedule = (ops: OperationIr[]): [string, number[]][] => {
      const s = scheduleBlocks(ops, [offering()]);
      let at = 0;
      return s.steps.map((step) => [step.kind, s.order.slice(at, (at += step.len))]);
    };
    const chain = (n: number): OperationIr[] => Array.from({ length: n }, (_, k) => un(t(k + 1), k + 2));
    expect(schedule(chain(4)), "the third operation is accepted though not offered, and the fourth makes all four valid").toEqual([["optimization", [0, 1, 2, 3]]]);
    expect(schedule(chain(3)), "three accepted, two offered: the third starts the next block").toEqual([
      ["optimization", [0, 1]],
      ["optimization", [2]],
    ]);
  });

  it("random relative programs: the list scheduling alone is always a valid order (never needs the fallback)", () => {
    let seed = 12345;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let p = 0; p < 400; p++) {
      const ops: OperationIr[] = [];
      let next = 1;
      const live: TensorIr[] = [];
      for (let k = 0; k < 2 + Math.floor(random() * 3); k++) live.push(t(next++, random() < 0.5 ? A : B));
      const n = 4 + Math.floor(random() * 24);
      for (let i = 0; i < n && live.length > 0; i++) {
        const at = Math.floor(random() * live.length);
        const x = live[at]!;
        const r = random();
        const last = r < 0.15 || random() < 0.3; // a drop, or a consuming use: x's last use
        const input = last ? { ...x, status: "ReadWrite" as const } : x;
        if (last) live.splice(at, 1);
        let op: OperationIr;
        if (r < 0.15) op = drop(x.id, x.shape);
        else if (r < 0.3) op = sum(input, next++);
        else if (r < 0.45) {
          const other = live.find((o) => o.id !== x.id && o.shape === x.shape);
          op = other === undefined ? un(input, next++) : bin(input, other, next++);
        } else op = un(input, next++);
        if (op.kind !== "drop" && op.kind !== "reduce") live.push(t(op.out.id, op.out.shape));
        else if (op.kind === "reduce") live.push(t(op.out.id, R));
        ops.push(op);
      }
      const plan = planBlocks(ops, fusers());
      expect([...plan.order].sort((a, b) => a - b)).toEqual(ops.map((_, i) => i));
      expect(isValidSchedule(ops, plan.order, plan.steps), JSON.stringify(ops)).toBe(true);
      let at = 0;
      for (const step of plan.steps) {
        const positions = plan.order.slice(at, (at += step.len));
        if (step.kind === "optimization") expect(positions, "a block's operations run in stream order").toEqual([...positions].sort((a, b) => a - b));
      }
    }
  });
});

describe("BlockSearch: when waiting can still improve a lazy segment", () => {
  it("independent chains are separate blocks; the search goes on while one of them is open", () => {
    const search = new BlockSearch(fusers());
    search.register(un(t(1), 2));
    search.register(un(t(10, B), 11));
    expect(search.blocks).toBe(2);
    expect(search.stillOptimizing).toBe(true);
    search.register(sum(t(2), 3)); // closes the first block's fuser; the second is still open
    expect(search.stillOptimizing).toBe(true);
    search.register(sum(t(11, B), 12));
    expect(search.stillOptimizing).toBe(false);
    expect(search.coveredPrefix()).toBe(2);
  });

  it("an op joining two chains merges their blocks when one fuser takes them all", () => {
    const search = new BlockSearch(fusers());
    search.register(un(t(1), 2));
    search.register(un(t(10), 11));
    search.register(bin(t(2), t(11), 12));
    expect(search.blocks).toBe(1);
    expect(search.stillOptimizing).toBe(true);
  });

  it("a lone operation (no fuser took it) is never joined, and the block cap stops the search", () => {
    const search = new BlockSearch(fusers(), 2);
    search.register(sum(t(1), 2));
    search.register(un(t(2, R), 3)); // uses the lone reduction's result: a block of its own
    expect(search.blocks).toBe(2);
    search.register(un(t(20, B), 21)); // a third block: past the cap
    expect(search.stillOptimizing).toBe(false);
    expect(search.registered).toBe(2);
    expect(search.coveredPrefix()).toBe(2);
  });
});
