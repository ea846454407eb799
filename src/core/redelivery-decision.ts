/**
 * Which of the app's failed webhook deliveries to ask GitHub to send again. GitHub keeps a log
 * of every attempt to deliver each delivery (`GET /app/hook/deliveries`) but never retries one
 * by itself; Tether's redelivery sweeper (redelivery-sweeper.ts) reads that log and redelivers
 * what this decides. A pure function of the attempts, the inbox and the clock, so every rule is a
 * row in a table test.
 */

/** One attempt to deliver one delivery, as GitHub's delivery log lists it. */
export interface DeliveryAttempt {
  /** The attempt's own id: what `POST /app/hook/deliveries/{id}/attempts` redelivers. */
  id: number;
  /** The delivery's id (the X-GitHub-Delivery header), the same for all its attempts. */
  guid: string;
  deliveredAt: Date;
  /** An attempt made by "Redeliver" (an operator's or Tether's), not the original. */
  redelivery: boolean;
  /** HTTP status of the answer; 0 when there was none (connection refused, timed out). */
  statusCode: number;
  event: string;
  action: string | null;
}

/** Why a delivery is left alone. */
export const LEAVE_REASONS = [
  /** An attempt was answered 2xx: it arrived. */
  "delivered",
  /** The delivery is in Tether's inbox: it was kept, only the answer failed. */
  "in_inbox",
  /** Its newest attempt is too young: GitHub, or another replica's sweep, may still be on it. */
  "settling",
  /** Its newest attempt was refused in a way another attempt would be too (a 4xx). */
  "permanent",
  /** It has had as many attempts as Tether gives a delivery. */
  "gave_up",
] as const;
export type LeaveReason = (typeof LEAVE_REASONS)[number];

export interface RedeliveryPolicy {
  /** A delivery whose newest attempt is younger than this waits for a later sweep. */
  settleMs: number;
  /** A delivery with this many attempts (the original included) is not redelivered again. */
  maxAttempts: number;
}

export interface RedeliveryInput {
  /** The attempts listed, in any order; several may share a guid. */
  attempts: readonly DeliveryAttempt[];
  /** Guids already in the inbox (`webhook_deliveries.delivery_id`). */
  inInbox: ReadonlySet<string>;
  now: Date;
  policy: RedeliveryPolicy;
}

export interface Redelivery {
  /** The attempt to redeliver: the delivery's newest failed one. */
  attemptId: number;
  guid: string;
  event: string;
  action: string | null;
  /** Status of that attempt (0: no answer). */
  statusCode: number;
  /** Attempts so far, this redelivery not counted. */
  attempts: number;
}

export interface RedeliveryPlan {
  redeliver: Redelivery[];
  /** How many deliveries (guids) were left, by why. */
  left: Record<LeaveReason, number>;
}

/**
 * Worth another attempt: no answer at all (0), a timeout (408), too many requests (429) and
 * server errors (5xx) say the endpoint was away or overloaded. Any other status says the
 * delivery itself was refused (400 a bad signature or header, 401, 413 a body over
 * TETHER_WEBHOOK_MAX_BYTES): sent again, it would be refused again.
 */
export function isRetryableStatus(statusCode: number): boolean {
  return statusCode === 0 || statusCode === 408 || statusCode === 429 || statusCode >= 500;
}

const delivered = (statusCode: number) => statusCode >= 200 && statusCode < 300;

/** Which deliveries to redeliver (oldest first) and why the others are left. */
export function decideRedeliveries(input: RedeliveryInput): RedeliveryPlan {
  const byGuid = new Map<string, DeliveryAttempt[]>();
  for (const a of input.attempts) {
    const list = byGuid.get(a.guid);
    if (list) list.push(a);
    else byGuid.set(a.guid, [a]);
  }
  const left = Object.fromEntries(LEAVE_REASONS.map((r) => [r, 0])) as Record<LeaveReason, number>;
  const redeliver: Array<Redelivery & { at: number }> = [];
  for (const [guid, attempts] of byGuid) {
    const reason = leaveReason(guid, attempts, input);
    if (reason) {
      left[reason]++;
      continue;
    }
    const newest = newestOf(attempts);
    redeliver.push({
      attemptId: newest.id,
      guid,
      event: newest.event,
      action: newest.action,
      statusCode: newest.statusCode,
      attempts: attempts.length,
      at: newest.deliveredAt.getTime(),
    });
  }
  redeliver.sort((a, b) => a.at - b.at || a.attemptId - b.attemptId);
  return { redeliver: redeliver.map(({ at: _at, ...r }) => r), left };
}

function leaveReason(
  guid: string,
  attempts: readonly DeliveryAttempt[],
  input: RedeliveryInput,
): LeaveReason | undefined {
  if (attempts.some((a) => delivered(a.statusCode))) return "delivered";
  if (input.inInbox.has(guid)) return "in_inbox";
  const newest = newestOf(attempts);
  if (input.now.getTime() - newest.deliveredAt.getTime() < input.policy.settleMs) return "settling";
  // The newest attempt says what the endpoint thinks of the delivery now.
  if (!isRetryableStatus(newest.statusCode)) return "permanent";
  if (attempts.length >= input.policy.maxAttempts) return "gave_up";
  return undefined;
}

/** The latest attempt; of two at the same instant, the one with the higher id (made later). */
function newestOf(attempts: readonly DeliveryAttempt[]): DeliveryAttempt {
  let newest = attempts[0]!;
  for (const a of attempts) {
    const d = a.deliveredAt.getTime() - newest.deliveredAt.getTime();
    if (d > 0 || (d === 0 && a.id > newest.id)) newest = a;
  }
  return newest;
}

export interface LookbackInput {
  now: Date;
  /** When the last sweep that walked the log began; undefined before the first. */
  mark: Date | undefined;
  policy: RedeliveryPolicy;
  /** How often sweeps run. */
  intervalMs: number;
  /** How far back the first sweep (no mark yet) looks. */
  firstLookbackMs: number;
  /** How long GitHub keeps the log (3 days on github.com): nothing older is listed. */
  horizonMs: number;
  /** Room for the difference between GitHub's clock and this process's. */
  clockMarginMs: number;
}

/**
 * How far back a sweep walks GitHub's delivery log: to where the last sweep began, less the
 * settle delay (what was settling then is looked at now) and a clock margin. Never less than
 * the span Tether's own redeliveries of one delivery take (they come a sweep apart, up to
 * maxAttempts of them), so a delivery's attempts are seen whole and counted against
 * maxAttempts. Never more than GitHub keeps. Before the first sweep, `firstLookbackMs`.
 */
export function lookbackStart(o: LookbackInput): Date {
  const now = o.now.getTime();
  const span = o.policy.settleMs + o.policy.maxAttempts * o.intervalMs + o.clockMarginMs;
  const fromMark =
    o.mark === undefined
      ? now - o.firstLookbackMs
      : o.mark.getTime() - o.policy.settleMs - o.clockMarginMs;
  return new Date(Math.max(now - o.horizonMs, Math.min(now - span, fromMark)));
}
