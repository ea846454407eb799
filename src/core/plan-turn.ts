/**
 * Whether a turn plans or acts (`/plan`, `/go`, `agents.<name>.plan`). A plan turn runs the
 * agent's CLI in its read-only mode, answers with a plan and publishes nothing; `/go` resumes the
 * same session to carry the plan out. Between the two, a follow-up that says neither is still
 * planning: people may discuss the plan before approving it.
 */
import type { PlanSetting } from "./settings.js";
import type { PlanRequest } from "./task.js";

export interface PlanInput {
  /** What the comments that fed the task asked: `/plan`, `/go`, or neither (null). */
  request: PlanRequest | null;
  /** The key's last turn that ran was a plan turn. */
  lastTurnPlanned: boolean;
  /** The key has a turn that ran before (a conversation's first turn has none). */
  hasPriorTurn: boolean;
  /** The agent's `plan` setting; absent: `off`. */
  setting: PlanSetting | undefined;
}

export type PlanTurn =
  /** Read-only: answer with a plan. `why` for the footer and the logs. */
  | { plan: true; why: "asked" | "still_planning" | "always" }
  /** Act; `approved`: this turn carries out the plan the last turn made (`/go` after a plan). */
  | { plan: false; approved: boolean };

export function decidePlanTurn(i: PlanInput): PlanTurn {
  if (i.request === "go") return { plan: false, approved: i.lastTurnPlanned };
  if (i.request === "plan") return { plan: true, why: "asked" };
  if (i.lastTurnPlanned) return { plan: true, why: "still_planning" };
  if (i.setting === "always" && !i.hasPriorTurn) return { plan: true, why: "always" };
  return { plan: false, approved: false };
}
