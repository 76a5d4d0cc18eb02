/**
 * Stochastic gradient descent with momentum, Nesterov momentum and weight decay (PyTorch's `SGD`).
 *
 * @module
 */
import { checkBoolean, checkOptions } from "@weft/environment";
import { type Tensor, ValueError } from "@weft/tensor";
import { type OptimizerKind, type Update, Optimizer, checkNumber } from "./optimizer.js";

/** Options of {@link sgd}. */
export interface SgdOptions {
  /** The learning rate. */
  readonly lr: number;
  /** Momentum factor (default 0: plain SGD). */
  readonly momentum?: number;
  /** Dampening of the momentum (default 0). */
  readonly dampening?: number;
  /** Nesterov momentum (default `false`; needs `momentum > 0` and no dampening). */
  readonly nesterov?: boolean;
  /** L2 penalty added to the gradient, `g + weightDecay · p` (default 0). */
  readonly weightDecay?: number;
}

/**
 * SGD: `d = g + λ·p`; with momentum `μ`, `b = μ·b + (1 − τ)·d` (`b = d` at a parameter's first
 * update) and `d = b`, or `d = d + μ·b` with Nesterov; then `p = p − lr·d`. The same update as
 * PyTorch's `torch.optim.SGD`. Hyper-parameters are public fields: change `lr` between steps for
 * a schedule.
 */
export class Sgd extends Optimizer {
  /** {@inheritDoc Optimizer.kind} */
  readonly kind: OptimizerKind = "sgd";
  /** The learning rate (read at every step). */
  lr: number;
  /** Momentum factor. */
  momentum: number;
  /** Dampening of the momentum. */
  dampening: number;
  /** Whether the momentum is Nesterov's. */
  nesterov: boolean;
  /** L2 penalty factor. */
  weightDecay: number;

  constructor(options: SgdOptions) {
    super();
    const opts = checkOptions("sgd", options, ["lr", "momentum", "dampening", "nesterov", "weightDecay"]);
    if (opts.lr === undefined) throw new ValueError("sgd", "pass the learning rate: optim.sgd({ lr: 0.01 })");
    checkBoolean("sgd", "options.nesterov", opts.nesterov);
    this.lr = options.lr;
    this.momentum = options.momentum ?? 0;
    this.dampening = options.dampening ?? 0;
    this.nesterov = options.nesterov ?? false;
    this.weightDecay = options.weightDecay ?? 0;
    this.checkHyperparameters();
  }

  protected hyperparameters(): Record<string, number | boolean> {
    return { lr: this.lr, momentum: this.momentum, dampening: this.dampening, nesterov: this.nesterov, weightDecay: this.weightDecay };
  }

  protected checkHyperparameters(): void {
    checkNumber("sgd", "lr", this.lr, 0);
    checkNumber("sgd", "momentum", this.momentum, 0);
    checkNumber("sgd", "dampening", this.dampening, 0, 1);
    checkNumber("sgd", "weightDecay", this.weightDecay, 0);
    if (this.nesterov && (this.momentum <= 0 || this.dampening !== 0)) {
      throw new ValueError("sgd", `Nesterov momentum needs momentum > 0 and dampening 0, got momentum ${this.momentum} and dampening ${this.dampening}; pass both or drop nesterov`);
    }
  }

  protected update(p: Tensor, g: Tensor, slots: Readonly<Record<string, Tensor>>): Update {
    let d = this.weightDecay === 0 ? g : g.add(p.mul(this.weightDecay));
    if (this.momentum === 0) return { param: p.sub(d.mul(this.lr)), slots: {} };
    const previous = slots["momentum"];
    const momentum = previous === undefined ? d.clone() : previous.mul(this.momentum).add(this.dampening === 0 ? d : d.mul(1 - this.dampening));
    d = this.nesterov ? d.add(momentum.mul(this.momentum)) : momentum;
    return { param: p.sub(d.mul(this.lr)), slots: { momentum } };
  }
}

/** `weft.optim.sgd({ lr, momentum?, dampening?, nesterov?, weightDecay? })`: see {@link Sgd}. */
export function sgd(options: SgdOptions): Sgd {
  return new Sgd(options);
}
