import { createHash } from "node:crypto";
import type { z } from "zod";
import type { Logger } from "../log.js";
import type { Pool } from "../db/pool.js";
import { isDeliveryPending, type InsertResult } from "../sql/deliveries.js";
import { issueHasTasks } from "../sql/tasks.js";
import { InboxWriter } from "./inbox-writer.js";
import { mentionedNames } from "./parse-comment.js";
import { IssueCommentEvent, IssuesEvent, repoKey } from "./payloads.js";

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
      /** The payload, validated and trimmed to what intake reads. */
      payload: IssueCommentEvent | IssuesEvent;
      /**
       * Edits and deletions matter only on an issue that has tasks, or whose triggering
       * delivery is still in the inbox. Checked in Postgres after screening.
       */
      onlyIf?: { repo: string; issueNumber: number; pendingKey: string };
    };

/**
 * The webhook's cheap checks, a pure function of the delivery: is it an event and action intake
 * handles, in the shape intake reads, not written by Tether itself, and could it matter (a body
 * that mentions someone, an edit that changed a body)? Anything needing GitHub or the repo
 * config is the processor's.
 */
export function screenDelivery(name: string, payload: unknown, appId?: number): Screened {
  const action = (payload as { action?: unknown } | null)?.action;
  const kind = `${name}.${typeof action === "string" ? action : "?"}`;
  if (!(INTAKE_EVENTS as readonly string[]).includes(kind))
    return {
      take: false,
      reason: `${name === "issue_comment" || name === "issues" ? kind : name} is not handled`,
    };

  if (name === "issue_comment") {
    const parsed = IssueCommentEvent.safeParse(payload);
    if (!parsed.success) return { take: false, reason: unexpected(kind, parsed.error) };
    const e = parsed.data;
    if (appId !== undefined && e.comment.performed_via_github_app?.id === appId)
      return { take: false, reason: "Tether's own comment" };
    const base = `comment:${e.comment.id}`;
    const taken = {
      take: true as const,
      action: e.action,
      installationId: e.installation.id,
      payload: e,
    };
    const onlyIf = {
      repo: repoKey(e.repository.full_name),
      issueNumber: e.issue.number,
      pendingKey: `${base}:created`,
    };
    switch (e.action) {
      case "created":
        if (!mentionedNames(e.comment.body ?? "").length)
          return { take: false, reason: "mentions no one" };
        return { ...taken, dedupeKey: `${base}:created` };
      case "edited":
        if (e.changes?.body === undefined) return { take: false, reason: "body unchanged" };
        return {
          ...taken,
          dedupeKey: `${base}:edited:${e.comment.updated_at ?? ""}:${digest(e.comment.body ?? "")}`,
          onlyIf,
        };
      case "deleted":
        return { ...taken, dedupeKey: `${base}:deleted`, onlyIf };
    }
  }

  const parsed = IssuesEvent.safeParse(payload);
  if (!parsed.success) return { take: false, reason: unexpected(kind, parsed.error) };
  const e = parsed.data;
  if (appId !== undefined && e.issue.performed_via_github_app?.id === appId)
    return { take: false, reason: "Tether's own issue" };
  const base = `issue:${e.issue.id}`;
  const taken = {
    take: true as const,
    action: e.action,
    installationId: e.installation.id,
    payload: e,
  };
  if (e.action === "opened") {
    if (!mentionedNames(e.issue.body ?? "").length)
      return { take: false, reason: "mentions no one" };
    return { ...taken, dedupeKey: `${base}:opened` };
  }
  if (e.changes?.body === undefined) return { take: false, reason: "body unchanged" };
  return {
    ...taken,
    dedupeKey: `${base}:edited:${e.issue.updated_at ?? ""}:${digest(e.issue.body ?? "")}`,
    onlyIf: {
      repo: repoKey(e.repository.full_name),
      issueNumber: e.issue.number,
      pendingKey: `${base}:opened`,
    },
  };
}

function unexpected(kind: string, err: z.ZodError): string {
  const first = err.issues[0];
  return `unexpected ${kind} payload: ${first ? `${first.path.join(".") || "(root)"}: ${first.message}` : "invalid"}`;
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
 * The webhook handler: screen, then put the delivery in the inbox (which wakes a processor),
 * batched with whatever else is arriving. No GitHub call; edits and deletions add one or two
 * indexed lookups first. A database error propagates, so GitHub sees a
 * failed delivery it can redeliver, rather than a 200 for a comment we did not keep.
 */
export function takeDelivery(deps: WebhookDeps): (event: WebhookDelivery) => Promise<Taken> {
  const inbox = new InboxWriter(deps.pool);
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
    const result = await inbox.insert({
      deliveryId: event.id,
      event: event.name,
      action: s.action,
      installationId: s.installationId,
      dedupeKey: s.dedupeKey,
      payloadJson: JSON.stringify(s.payload),
    });
    deps.log.debug(
      { delivery: event.id, event: `${event.name}.${s.action}`, result },
      "webhook taken",
    );
    return { taken: true, result };
  };
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 12);
}
