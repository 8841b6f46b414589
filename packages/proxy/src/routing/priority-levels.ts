// The backends of a route that fails over or retries, by priority: each level is the backends
// of one priority, sharing its requests by weight (as backendRefs do). A request starts at the
// first level with a backend that is not cooling down (upstream/cool-downs.ts); a failover goes
// to the next such level; a retry picks again within the level it is at. Compiled once per
// route object, like the plain weighted picker (backend-picker.ts), which routes without
// failover or retries keep: they pay nothing for this.
import type { BackendIR } from '@tollgate/api';
import type { Clock } from '../ratelimit/clock.js';
import { backendKey, type CoolDowns } from '../upstream/cool-downs.js';
import { targetsOf, type BackendPicker, type PickerDeps } from './backend-picker.js';

/** One backend of a level, with its endpoint picker and its cool-down key. */
export interface Member {
  readonly backend: BackendIR;
  readonly key: string;
  readonly weight: number;
  readonly pick: BackendPicker;
}

export interface Level {
  readonly priority: number;
  readonly members: readonly Member[];
}

/** Where an attempt goes: a backend of a level, and what its picker chose (an endpoint, INVALID_BACKEND or null). */
export interface Choice {
  readonly level: number;
  readonly member: Member;
  readonly target: ReturnType<BackendPicker>;
}

/** Which cool-downs keep a member out of a pick. */
const enum Skip {
  /** Any cool-down (a failover, a first attempt). */
  Cooling,
  /** Only one the backend asked for, a 429 or a Retry-After (a retry: a 503's default cool-down does not stop it). */
  Asked,
}

export class PriorityLevels {
  constructor(
    readonly levels: readonly Level[],
    private readonly coolDowns: CoolDowns,
    private readonly clock: Clock,
  ) {}

  /** More than one priority: a failing level has another to fail over to. */
  get failsOver(): boolean {
    return this.levels.length > 1;
  }

  /**
   * The first attempt: the first level with a backend not cooling down, by weight among those;
   * with every backend cooling down, the one whose cool-down ends first (the route still answers).
   */
  first(): Choice {
    const now = this.clock();
    for (let i = 0; i < this.levels.length; i++) {
      const c = this.#pick(i, now, Skip.Cooling);
      if (c) return c;
    }
    // Levels hold only backends with a weight, and a route with none has no levels: one exists.
    let level = 0;
    let member = this.levels[0]!.members[0]!;
    let until = Infinity;
    for (let i = 0; i < this.levels.length; i++) {
      for (const m of this.levels[i]!.members) {
        const u = this.coolDowns.get(m.key, now)?.until ?? 0;
        if (u < until) ({ level, member, until } = { level: i, member: m, until: u });
      }
    }
    return { level, member, target: member.pick() };
  }

  /** A failover: the first level after `level` with a backend not cooling down; null when none has. */
  after(level: number): Choice | null {
    const now = this.clock();
    for (let i = level + 1; i < this.levels.length; i++) {
      const c = this.#pick(i, now, Skip.Cooling);
      if (c) return c;
    }
    return null;
  }

  /**
   * A retry at `level`: a backend not cooling down, else one that did not ask for its cool-down
   * (a 503 without Retry-After); null when every backend of the level asked to be left alone.
   */
  within(level: number): Choice | null {
    const now = this.clock();
    return this.#pick(level, now, Skip.Cooling) ?? this.#pick(level, now, Skip.Asked);
  }

  /** A member of `level` by weight among those `skip` lets through; null when none is. */
  #pick(level: number, now: number, skip: Skip): Choice | null {
    const members = this.levels[level]!.members;
    const cooling = this.coolDowns.size > 0;
    let total = 0;
    for (const m of members) if (!cooling || this.#open(m, now, skip)) total += m.weight;
    if (total === 0) return null;
    let r = Math.random() * total;
    for (const m of members) {
      if (cooling && !this.#open(m, now, skip)) continue;
      r -= m.weight;
      if (r < 0) return { level, member: m, target: m.pick() };
    }
    // Rounding at the very end of the range: the last open member.
    for (let i = members.length - 1; i >= 0; i--) {
      const m = members[i]!;
      if (!cooling || this.#open(m, now, skip)) return { level, member: m, target: m.pick() };
    }
    return null;
  }

  #open(m: Member, now: number, skip: Skip): boolean {
    const c = this.coolDowns.get(m.key, now);
    return c === undefined || (skip === Skip.Asked && !c.asked);
  }
}

/**
 * The levels of a route's backends: ascending priority, backends of weight 0 left out (they get
 * no requests, failover or not). Null when no backend has a weight.
 */
export function priorityLevels(backends: readonly BackendIR[], deps: PickerDeps): PriorityLevels | null {
  const byPriority = new Map<number, Member[]>();
  for (const b of backends) {
    if (b.weight <= 0) continue;
    const p = b.priority ?? 0;
    let list = byPriority.get(p);
    if (!list) byPriority.set(p, (list = []));
    list.push({ backend: b, key: backendKey(b), weight: b.weight, pick: targetsOf(b, deps) });
  }
  if (!byPriority.size) return null;
  const levels = [...byPriority].sort(([a], [b]) => a - b).map(([priority, members]) => ({ priority, members }));
  return new PriorityLevels(levels, deps.coolDowns, deps.clock);
}

/** Whether a route's backends have more than one priority among those with a weight. */
export function hasFailover(backends: readonly BackendIR[]): boolean {
  let first: number | null = null;
  for (const b of backends) {
    if (b.weight <= 0) continue;
    const p = b.priority ?? 0;
    if (first === null) first = p;
    else if (p !== first) return true;
  }
  return false;
}
