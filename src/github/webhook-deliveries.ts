/**
 * GitHub's log of the app's webhook deliveries, read and acted on as the app (a JWT client,
 * `probot.auth()` without an installation): `GET /app/hook/deliveries` lists every attempt,
 * newest first, a page at a time (cursor paging through the `Link` header), and
 * `POST /app/hook/deliveries/{delivery_id}/attempts` asks GitHub to send one again. GitHub keeps
 * the log 3 days on github.com, 7 on GitHub Enterprise Server.
 */
import { z } from "zod";
import type { DeliveryAttempt } from "../core/redelivery-decision.js";
import type { GitHub } from "./types.js";

/** GitHub's most per page. */
export const DELIVERIES_PER_PAGE = 100;

/** One item of the listing: only the fields the redelivery decision reads are required. */
const ListedAttempt = z.object({
  id: z.number().int(),
  guid: z.string().min(1),
  delivered_at: z.string().refine((s) => !Number.isNaN(Date.parse(s)), "not a date"),
  redelivery: z.boolean(),
  status_code: z.number().int(),
  event: z.string(),
  action: z.string().nullish(),
});
type ListedAttempt = z.infer<typeof ListedAttempt>;

export interface DeliveryLogPage {
  /** Newest first, as GitHub lists them. */
  attempts: DeliveryAttempt[];
  /** Items that did not have the shape above; left out of `attempts`. */
  malformed: number;
  /** Where the next (older) page starts; undefined on the last page. */
  next: string | undefined;
}

/** What the redelivery sweeper needs of GitHub: the log, a page at a time, and redelivery. */
export interface DeliveryLog {
  page(cursor: string | undefined): Promise<DeliveryLogPage>;
  redeliver(attemptId: number): Promise<void>;
}

/** The delivery log through an app-authenticated (JWT) Octokit. */
export function githubDeliveryLog(octokit: GitHub): DeliveryLog {
  return {
    async page(cursor) {
      const res = await octokit.rest.apps.listWebhookDeliveries({
        per_page: DELIVERIES_PER_PAGE,
        ...(cursor === undefined ? {} : { cursor }),
      });
      const items: unknown[] = Array.isArray(res.data) ? res.data : [];
      const attempts: DeliveryAttempt[] = [];
      for (const item of items) {
        const parsed = ListedAttempt.safeParse(item);
        if (parsed.success) attempts.push(toAttempt(parsed.data));
      }
      return {
        attempts,
        malformed: items.length - attempts.length,
        next: nextCursor(res.headers.link),
      };
    },
    async redeliver(attemptId) {
      await octokit.rest.apps.redeliverWebhookDelivery({ delivery_id: attemptId });
    },
  };
}

function toAttempt(a: ListedAttempt): DeliveryAttempt {
  return {
    id: a.id,
    guid: a.guid,
    deliveredAt: new Date(a.delivered_at),
    redelivery: a.redelivery,
    statusCode: a.status_code,
    event: a.event,
    action: a.action ?? null,
  };
}

/** The `cursor` of the `Link` header's rel="next" URL; undefined when there is none. */
export function nextCursor(link: string | undefined): string | undefined {
  if (!link) return undefined;
  for (const part of link.split(",")) {
    const m = /<([^>]*)>\s*;\s*rel="?next"?/.exec(part);
    if (!m) continue;
    try {
      return new URL(m[1]!).searchParams.get("cursor") ?? undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
