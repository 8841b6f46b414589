// The cost budget of a policy's expressions together (a request evaluates every one of them):
// their estimates added up, the most expensive remembered for the message that refuses them.
import type { EvaluationLimits } from '../limits.js';
import type { Problem } from '../validation-error.js';
import { inputBounds } from './compile.js';

export class PolicyCost {
  #total = 0;
  #worst = { cost: -1, path: '' };

  /** One expression's estimate, at the path of its field. */
  add(cost: number, path: string): void {
    this.#total += cost;
    if (cost > this.#worst.cost) this.#worst = { cost, path };
  }

  /** The problem at `path` when the expressions together are over cel.maxCost; null within it. */
  problem(path: string, limits: EvaluationLimits): Problem | null {
    // Written so that a total that overflowed (Infinity, NaN) is refused too.
    if (this.#total <= limits.cel.maxCost) return null;
    const w = this.#worst;
    return {
      path,
      message: `the expressions together have an estimated cost of ${this.#total}, more than the budget of ${limits.cel.maxCost} (cel.maxCost) a request may spend for inputs within the declared bounds (${inputBounds(limits)}); the most expensive is ${w.path} (${w.cost})`,
    };
  }
}
