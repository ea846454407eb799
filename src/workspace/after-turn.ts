/**
 * What a runner remembers of a checkout's last turn, for the next prepare() of its key.
 */
import type { ScriptResult } from "./sandboxed-git.js";

/** Checkouts whose last turn a runner remembers, at most (the oldest is forgotten first). */
const AFTER_TURN_MAX = 10_000;

/** What a runner remembers of a checkout's last turn (AfterTurnLooks). */
export interface AfterTurn {
  /** The repository's id: which mirror the checkout's upstream is in. */
  repoId: number;
  /** The branch the checkout stood on after prepare(), and the ref it follows: the look's args. */
  target: string;
  upstreamRef: string;
  /** STATE as maintain() found the checkout after the turn, and when. */
  look?: { result: ScriptResult; at: number };
}

/**
 * Per checkout: what the last prepare() stood it on, and the look maintain() took at the end
 * of that turn. Nothing touches a checkout between two turns of its key (the agent runs only
 * inside a turn, and the key is held by one task at a time), so the next prepare() on this
 * runner uses that look instead of taking its own: one sandboxed git fewer before the spawn.
 * Taken by the prepare() that uses it; kept for at most the mirror's freshness window.
 */
export class AfterTurnLooks {
  private readonly afterTurn = new Map<string, AfterTurn>();

  /** `freshMs`: how long a look is good for (the mirror's freshness window). */
  constructor(private readonly freshMs: number) {}

  /** The remembered turn of a checkout, taken: a look is used by one prepare() at most. */
  take(dir: string): AfterTurn | undefined {
    const turn = this.afterTurn.get(dir);
    this.afterTurn.delete(dir);
    if (turn?.look && !(Date.now() - turn.look.at < this.freshMs)) delete turn.look;
    return turn;
  }

  /** What prepare() stood the checkout on; its look is taken after the turn (store). */
  remember(dir: string, turn: Omit<AfterTurn, "look">): void {
    this.afterTurn.delete(dir);
    if (this.afterTurn.size >= AFTER_TURN_MAX) {
      const oldest = this.afterTurn.keys().next().value;
      if (oldest !== undefined) this.afterTurn.delete(oldest);
    }
    this.afterTurn.set(dir, { ...turn });
  }

  /** The checkout's remembered turn, left in place. */
  get(dir: string): AfterTurn | undefined {
    return this.afterTurn.get(dir);
  }

  /** The checkout changed (its work was taken out): a look taken before no longer holds. */
  dropLook(dir: string): void {
    const turn = this.afterTurn.get(dir);
    if (turn) delete turn.look;
  }

  /** Keeps `look` for `turn`, only if nothing took the checkout meanwhile. */
  store(dir: string, turn: AfterTurn, look: ScriptResult): void {
    if (this.afterTurn.get(dir) !== turn) return;
    turn.look = { result: look, at: Date.now() };
  }
}
