/**
 * Adam and AdamW (PyTorch's `Adam` and `AdamW`).
 *
 * @module
 */
import { checkBoolean, checkOptions } from "@weft/environment";
import type { Tensor } from "@weft/tensor";
import { type OptimizerKind, type Update, Optimizer, checkNumber } from "./optimizer.js";

/** Options of {@link adam} and {@link adamw}. */
export interface AdamOptions {
  /** The learning rate (default 1e-3). */
  readonly lr?: number;
  /** Decay of the first moment (default 0.9). */
  readonly beta1?: number;
  /** Decay of the second moment (default 0.999). */
  readonly beta2?: number;
  /** Added to the denominator (default 1e-8). */
  readonly eps?: number;
  /**
   * Weight decay: Adam adds `weightDecay · p` to the gradient (an L2 penalty, default 0); AdamW
   * shrinks the parameter, `p · (1 − lr · weightDecay)`, apart from the adaptive step (default 0.01).
   */
  readonly weightDecay?: number;
}

/**
 * Adam: `m = β₁·m + (1 − β₁)·d`, `v = β₂·v + (1 − β₂)·d²`, then
 * `p = p − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)` (PyTorch's formulation), with `d = g`
 * (plus `λ·p` for Adam's L2 weight decay) and, for AdamW, `p` first scaled by `1 − lr·λ`. Moments
 * start at zero. The per-step factors (the bias corrections, `lr`) are runtime scalars of the
 * update's ops, so one fused kernel per parameter serves every step. Hyper-parameters are public
 * fields: change `lr` between steps for a schedule.
 */
export class Adam extends Optimizer {
  /** {@inheritDoc Optimizer.kind} */
  readonly kind: OptimizerKind;
  /** The learning rate (read at every step). */
  lr: number;
  /** Decay of the first moment. */
  beta1: number;
  /** Decay of the second moment. */
  beta2: number;
  /** Added to the denominator. */
  eps: number;
  /** Weight decay (L2 for Adam, decoupled for AdamW). */
  weightDecay: number;

  constructor(options: AdamOptions, decoupled: boolean) {
    super();
    this.kind = decoupled ? "adamw" : "adam";
    checkOptions(this.kind, options, ["lr", "beta1", "beta2", "eps", "weightDecay"]);
    checkBoolean(this.kind, "decoupled", decoupled);
    this.lr = options.lr ?? 1e-3;
    this.beta1 = options.beta1 ?? 0.9;
    this.beta2 = options.beta2 ?? 0.999;
    this.eps = options.eps ?? 1e-8;
    this.weightDecay = options.weightDecay ?? (decoupled ? 0.01 : 0);
    this.checkHyperparameters();
  }

  protected hyperparameters(): Record<string, number | boolean> {
    return { lr: this.lr, beta1: this.beta1, beta2: this.beta2, eps: this.eps, weightDecay: this.weightDecay };
  }

  protected checkHyperparameters(): void {
    checkNumber(this.kind, "lr", this.lr, 0);
    checkNumber(this.kind, "beta1", this.beta1, 0, 1, true);
    checkNumber(this.kind, "beta2", this.beta2, 0, 1, true);
    checkNumber(this.kind, "eps", this.eps, 0);
    checkNumber(this.kind, "weightDecay", this.weightDecay, 0);
  }

  protected update(p: Tensor, g: Tensor, slots: Readonly<Record<string, Tensor>>, t: number): Update {
    const decoupled = this.kind === "adamw";
    const d = !decoupled && this.weightDecay !== 0 ? g.add(p.mul(this.weightDecay)) : g;
    const m0 = slots["m"];
    const v0 = slots["v"];
    const m = m0 === undefined ? d.mul(1 - this.beta1) : m0.mul(this.beta1).add(d.mul(1 - this.beta1));
    const d2 = d.square().mul(1 - this.beta2);
    const v = v0 === undefined ? d2 : v0.mul(this.beta2).add(d2);
    const stepSize = this.lr / (1 - this.beta1 ** t);
    const denom = v.sqrt().mul(1 / Math.sqrt(1 - this.beta2 ** t)).add(this.eps);
    const base = decoupled && this.weightDecay !== 0 ? p.mul(1 - this.lr * this.weightDecay) : p;
    return { param: base.sub(m.div(denom).mul(stepSize)), slots: { m, v } };
  }
}

/** `weft.optim.adam({ lr?, beta1?, beta2?, eps?, weightDecay? })`: see {@link Adam}. */
export function adam(options: AdamOptions = {}): Adam {
  return new Adam(options, false);
}

/** `weft.optim.adamw({ lr?, beta1?, beta2?, eps?, weightDecay? })`: Adam with decoupled weight decay (default 0.01); see {@link Adam}. */
export function adamw(options: AdamOptions = {}): Adam {
  return new Adam(options, true);
}
