import { createHash } from "node:crypto";
import type { Logger } from "../log.js";
import type { Pool } from "../db/pool.js";
import { insertDelivery, isDeliveryPending, type InsertResult } from "../sql/deliveries.js";
import { issueHasTasks } from "../sql/tasks.js";
import { mentionedNames } from "./parse-comment.js";
import { repoKey } from "./payloads.js";

/** The webhook events intake takes in. */
export const INTAKE_EVENTS = [
  "issue_comment.created",
  "issue_comment.edited",
  "issue_comment.deleted",
  "issues.opened",
  "issues.edited",
] as const;

export type Screened =
  | { take: false; reason: string }
  | {
      take: true;
      action: string;
      installationId: number;
      dedupeKey: string;
      /**
       * Edits and deletions matter only on an issue that has tasks, or whose triggering
       * delivery is still in the inbox. Checked in Postgres after screening.
       */
      onlyIf?: { repo: string; issueNumber: number; pendingKey: string };
    };

/**
 * The webhook's cheap checks, a pure function of the delivery: is it an event and action intake
 * handles, not written by Tether itself, and could it matter (a body that mentions someone, an
 * edit that changed a body)? Everything needing GitHub or the repo config is the processor's.
 */
export function screenDelivery(name: string, payload: unknown, appId?: number): Screened {
  const p = asRecord(payload);
  const action = typeof p.action === "string" ? p.action : "";
  const installationId = asRecord(p.installation).id;
  if (typeof installationId !== "number")
    return { take: false, reason: "no installation in the payload" };
  const issue = asRecord(p.issue);
  const repo = asRecord(p.repository);
  const issueNumber = issue.number;
  const fullName = repo.full_name;
  if (typeof issueNumber !== "number" || typeof fullName !== "string")
    return { take: false, reason: "no issue or repository in the payload" };
  const where = { repo: repoKey(fullName), issueNumber };
  const bodyChanged = asRecord(asRecord(p.changes).body).from !== undefined;

  if (name === "issue_comment") {
    const comment = asRecord(p.comment);
    const id = comment.id;
    if (typeof id !== "number") return { take: false, reason: "no comment id in the payload" };
    if (appId !== undefined && asRecord(comment.performed_via_github_app).id === appId)
      return { take: false, reason: "Tether's own comment" };
    const body = typeof comment.body === "string" ? comment.body : "";
    const base = `comment:${id}`;
    switch (action) {
      case "created":
        if (!mentionedNames(body).length) return { take: false, reason: "mentions no one" };
        return { take: true, action, installationId, dedupeKey: `${base}:created` };
      case "edited":
        if (!bodyChanged) return { take: false, reason: "body unchanged" };
        return {
          take: true,
          action,
          installationId,
          dedupeKey: `${base}:edited:${String(comment.updated_at)}:${digest(body)}`,
          onlyIf: { ...where, pendingKey: `${base}:created` },
        };
      case "deleted":
        return {
          take: true,
          action,
          installationId,
          dedupeKey: `${base}:deleted`,
          onlyIf: { ...where, pendingKey: `${base}:created` },
        };
    }
    return { take: false, reason: `issue_comment.${action} is not handled` };
  }

  if (name === "issues") {
    const id = issue.id;
    if (typeof id !== "number") return { take: false, reason: "no issue id in the payload" };
    if (appId !== undefined && asRecord(issue.performed_via_github_app).id === appId)
      return { take: false, reason: "Tether's own issue" };
    const body = typeof issue.body === "string" ? issue.body : "";
    const base = `issue:${id}`;
    switch (action) {
      case "opened":
        if (!mentionedNames(body).length) return { take: false, reason: "mentions no one" };
        return { take: true, action, installationId, dedupeKey: `${base}:opened` };
      case "edited":
        if (!bodyChanged) return { take: false, reason: "body unchanged" };
        return {
          take: true,
          action,
          installationId,
          dedupeKey: `${base}:edited:${String(issue.updated_at)}:${digest(body)}`,
          onlyIf: { ...where, pendingKey: `${base}:opened` },
        };
    }
    return { take: false, reason: `issues.${action} is not handled` };
  }
  return { take: false, reason: `${name} is not handled` };
}

export interface WebhookDelivery {
  /** X-GitHub-Delivery. */
  id: string;
  name: string;
  payload: unknown;
}

export interface WebhookDeps {
  pool: Pool;
  log: Logger;
  /** Tether's GitHub App id: deliveries about its own comments are dropped. */
  appId?: number;
}

export type Taken = { taken: false; reason: string } | { taken: true; result: InsertResult };

/**
 * The webhook handler: screen, then put the delivery in the inbox (which wakes a processor).
 * At most two indexed queries; no GitHub call. A database error propagates, so GitHub sees a
 * failed delivery it can redeliver, rather than a 200 for a comment we did not keep.
 */
export function takeDelivery(deps: WebhookDeps): (event: WebhookDelivery) => Promise<Taken> {
  return async (event) => {
    const s = screenDelivery(event.name, event.payload, deps.appId);
    if (!s.take) {
      deps.log.debug(
        { delivery: event.id, event: event.name, reason: s.reason },
        "webhook ignored",
      );
      return { taken: false, reason: s.reason };
    }
    if (s.onlyIf) {
      const { repo, issueNumber, pendingKey } = s.onlyIf;
      const relevant =
        (await issueHasTasks(deps.pool, repo, issueNumber)) ||
        (await isDeliveryPending(deps.pool, pendingKey));
      if (!relevant) {
        deps.log.debug(
          { delivery: event.id, repo, issueNumber },
          "webhook ignored: no task on the issue",
        );
        return { taken: false, reason: "no task on the issue" };
      }
    }
    const result = await insertDelivery(deps.pool, {
      deliveryId: event.id,
      event: event.name,
      action: s.action,
      installationId: s.installationId,
      dedupeKey: s.dedupeKey,
      payloadJson: JSON.stringify(event.payload),
    });
    deps.log.debug(
      { delivery: event.id, event: `${event.name}.${s.action}`, result },
      "webhook taken",
    );
    return { taken: true, result };
  };
}

function asRecord(v: unknown): Record<string, unknown> {
  return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {};
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 12);
}
