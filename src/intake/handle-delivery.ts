/**
 * The intake's funnel: one inbox delivery, read (events.ts), goes to the handler of its kind: a
 * text that may address agents (text-request.ts), its edit or deletion (text-change.ts), a work
 * item (event-triggers.ts), a CI run (ci-events.ts).
 */
import type { Delivery } from "../sql/deliveries.js";
import { readDelivery } from "./events.js";
import { handleCiEvent } from "./ci-events.js";
import { handleWorkItem } from "./event-triggers.js";
import { skipped, type Handled, type IntakeEffects } from "./intake-effects.js";
import { handleReview, handleTrigger } from "./text-request.js";
import { handleChange } from "./text-change.js";

export type { Handled, IntakeEffects } from "./intake-effects.js";
export { RetryLater } from "./text-change.js";

/**
 * The intake funnel for one inbox delivery. Every step is safe to repeat, because a delivery
 * that fails half-way is tried again: enqueueing is idempotent per (comment, agent), /cancel
 * only touches tasks older than the delivery, a 👀 reaction is not added twice. Replies come
 * last, so a failure before them does not post twice.
 */
export async function handleDelivery(fx: IntakeEffects, d: Delivery): Promise<Handled> {
  const read = readDelivery(d);
  if (!read.ok) return skipped(read.reason);
  const e = read.event;
  switch (e.kind) {
    case "work-item":
      return handleWorkItem(fx, d, e.trigger);
    case "ci":
      return handleCiEvent(fx, d, e.run);
    case "text": {
      const t = e.trigger;
      if (e.change.action === "created")
        return t.review ? handleReview(fx, d, t, t.review) : handleTrigger(fx, d, t);
      return handleChange(fx, d, t, e.change);
    }
  }
}
