import { createHash } from "node:crypto";
import type { z } from "zod";
import type { Logger } from "../log.js";
import type { Pool } from "../db/pool.js";
import { isDeliveryPending, type InsertResult } from "../sql/deliveries.js";
import { issueHasTasks } from "../sql/tasks/read.js";
import { InboxWriter } from "./inbox-writer.js";
import { addedMentionNames, mentionedNames } from "./parse-comment.js";
import { conversationsOfPull } from "../sql/conversations.js";
import { isCiEvent, screenCiEvent, type CiPayload } from "./ci-events.js";
import { PUSH_EVENT, takePush } from "./config-push.js";
import {
  parseIntakeEvent,
  parseWorkItemEvent,
  previousBody,
  repoKey,
  type IssueCommentEvent,
  type IssuesEvent,
  type IssueTriggerEvent,
  type PullRequestReviewCommentEvent,
  type PullRequestReviewEvent,
  type PullTriggerEvent,
} from "./payloads.js";

/** The webhook events intake takes in. */
export const INTAKE_EVENTS = [
  "issue_comment.created",
  "issue_comment.edited",
  "issue_comment.deleted",
  "issues.opened",
  "issues.edited",
  "pull_request_review_comment.created",
  "pull_request_review_comment.edited",
  "pull_request_review_comment.deleted",
  "pull_request_review.submitted",
  // Labels and assignments that start an agent's turn (README "Talking to Tether").
  "issues.labeled",
  "issues.assigned",
  "pull_request.labeled",
  "pull_request.assigned",
] as const;

/** The events whose trigger is a label or an assignment, not a text (src/intake/event-triggers.ts). */
export const WORK_ITEM_EVENTS: ReadonlySet<string> = new Set([
  "issues.labeled",
  "issues.assigned",
  "pull_request.labeled",
  "pull_request.assigned",
]);

const EVENT_NAMES: ReadonlySet<string> = new Set(INTAKE_EVENTS.map((e) => e.split(".")[0]!));

export type IntakePayload =
  | IssueCommentEvent
  | IssuesEvent
  | PullRequestReviewCommentEvent
  | PullRequestReviewEvent
  | IssueTriggerEvent
  | PullTriggerEvent;

export type Screened =
  | { take: false; reason: string }
  | {
      take: true;
      action: string;
      installationId: number;
      dedupeKey: string;
      /** The payload, validated and trimmed to what intake reads. */
      payload: IntakePayload | CiPayload;
      /**
       * Deletions, and edits that mention no one new, matter only on an issue that has tasks,
       * or whose triggering delivery is still in the inbox. Checked in Postgres after screening.
       */
      onlyIf?: { repo: string; issueNumber: number; pendingKey: string };
      /**
       * A review that mentions no one matters only on a conversation's pull request (the agent's
       * own): checked in Postgres after screening.
       */
      onlyIfConversationPull?: { repo: string; pullNumber: number };
    };

/**
 * What screening reads of any event carrying a text that may address agents: a comment, a
 * review comment, a review's body or an issue's body.
 */
interface Text {
  /** "comment", "review" or "issue": for the reasons operators read. */
  what: string;
  /** `comment:<id>`, `review_comment:<id>`, `review:<id>` or `issue:<id>`. */
  base: string;
  /** The action that creates it: its delivery's dedupe key is `<base>:<creation>`. */
  creation: string;
  body: string;
  /** The body before an edit; undefined when the edit left the body alone. */
  previousBody: string | undefined;
  updatedAt: string;
  viaAppId: number | undefined;
  repo: string;
  issueNumber: number;
}

/**
 * The webhook's cheap checks, a pure function of the delivery: is it an event and action intake
 * handles, in the shape intake reads, not written by Tether itself, and could it matter (a body
 * that mentions someone, an edit that changed a body)? Anything needing GitHub or the repo
 * config is the processor's.
 */
export function screenDelivery(name: string, payload: unknown, appId?: number): Screened {
  const action = (payload as { action?: unknown } | null)?.action;
  const kind = `${name}.${typeof action === "string" ? action : "?"}`;
  if (WORK_ITEM_EVENTS.has(kind)) return screenWorkItem(kind, name, payload);
  if (isCiEvent(kind)) {
    const ci = screenCiEvent(name, payload);
    return ci.take ? { ...ci, action: "completed" } : ci;
  }
  const read = (INTAKE_EVENTS as readonly string[]).includes(kind)
    ? readText(name, payload)
    : undefined;
  if (read === undefined)
    return { take: false, reason: `${EVENT_NAMES.has(name) ? kind : name} is not handled` };
  if ("problem" in read) return { take: false, reason: unexpected(kind, read.problem) };
  const { text: t, event: e } = read;
  if (appId !== undefined && t.viaAppId === appId)
    return { take: false, reason: `Tether's own ${t.what}` };
  const taken = {
    take: true as const,
    action: e.action,
    installationId: e.installation.id,
    payload: e,
  };
  const onlyIf = {
    repo: t.repo,
    issueNumber: t.issueNumber,
    pendingKey: `${t.base}:${t.creation}`,
  };
  switch (e.action) {
    case "edited": {
      if (t.previousBody === undefined) return { take: false, reason: "body unchanged" };
      const dedupeKey = `${t.base}:edited:${t.updatedAt}:${digest(t.body)}`;
      // An edit that mentions someone new may address an agent for the first time: a request,
      // taken like a new comment. Other edits only touch what already exists.
      if (addedMentionNames(t.previousBody, t.body).length) return { ...taken, dedupeKey };
      return { ...taken, dedupeKey, onlyIf };
    }
    case "deleted":
      return { ...taken, dedupeKey: `${t.base}:deleted`, onlyIf };
    default:
      if (mentionedNames(t.body).length) return { ...taken, dedupeKey: `${t.base}:${t.creation}` };
      // A review of an agent's own pull request reaches it without a mention (per the agent's
      // `reviews` setting, which the processor reads with the config).
      if (t.what === "review")
        return {
          ...taken,
          dedupeKey: `${t.base}:${t.creation}`,
          onlyIfConversationPull: { repo: t.repo, pullNumber: t.issueNumber },
        };
      return { take: false, reason: "mentions no one" };
  }
}

/**
 * A label added or an assignment: taken whenever it names a label or assignee; which agent's
 * (if any) is the config's to say, in the processor. The dedupe key holds the issue's update
 * time, so the same label added again later is a new request, and a redelivery is not.
 */
function screenWorkItem(kind: string, name: string, payload: unknown): Screened {
  const read = parseWorkItemEvent(name, payload);
  if ("problem" in read) return { take: false, reason: unexpected(kind, read.problem) };
  const t = read.trigger;
  if (!t)
    return {
      take: false,
      reason: `${kind} without a ${kind.endsWith("labeled") ? "label" : "assignee"}`,
    };
  const base = `${t.isPullRequest ? "pull" : "issue"}:${t.item.id}`;
  return {
    take: true,
    action: read.event.action,
    installationId: t.installationId,
    dedupeKey: `${base}:${read.event.action}:${t.value.toLowerCase()}:${t.item.updated_at ?? ""}`,
    payload: read.event,
  };
}

type Read = { text: Text; event: IntakePayload } | { problem: z.ZodError } | undefined;

function readText(name: string, payload: unknown): Read {
  const read = parseIntakeEvent(name, payload);
  if (read === undefined || "problem" in read) return read;
  const { name: eventName, event: e } = read;
  switch (eventName) {
    case "issue_comment":
      return { event: e, text: commentText(e, `comment:${e.comment.id}`, e.issue.number) };
    case "pull_request_review_comment":
      return {
        event: e,
        text: commentText(e, `review_comment:${e.comment.id}`, e.pull_request.number),
      };
    case "pull_request_review":
      return {
        event: e,
        text: {
          what: "review",
          base: `review:${e.review.id}`,
          creation: "submitted",
          body: e.review.body ?? "",
          previousBody: undefined,
          updatedAt: e.review.submitted_at ?? "",
          viaAppId: undefined,
          repo: repoKey(e.repository.full_name),
          issueNumber: e.pull_request.number,
        },
      };
    case "issues":
      return {
        event: e,
        text: {
          what: "issue",
          base: `issue:${e.issue.id}`,
          creation: "opened",
          body: e.issue.body ?? "",
          previousBody: previousBody(e.changes),
          updatedAt: e.issue.updated_at ?? "",
          viaAppId: e.issue.performed_via_github_app?.id,
          repo: repoKey(e.repository.full_name),
          issueNumber: e.issue.number,
        },
      };
  }
}

/**
 * A comment in the conversation or on the diff: screening reads both alike, and tells them apart
 * by `base` (their ids are GitHub's separate series).
 */
function commentText(
  e: IssueCommentEvent | PullRequestReviewCommentEvent,
  base: string,
  issueNumber: number,
): Text {
  return {
    what: "comment",
    base,
    creation: "created",
    body: e.comment.body ?? "",
    previousBody: previousBody(e.changes),
    updatedAt: e.comment.updated_at ?? "",
    viaAppId: e.comment.performed_via_github_app?.id,
    repo: repoKey(e.repository.full_name),
    issueNumber,
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

export type Taken =
  | { taken: false; reason: string }
  | { taken: true; result: InsertResult }
  /** A push, recorded at once (src/intake/config-push.ts). */
  | { taken: true; recorded: string };

/**
 * The webhook handler: screen, then put the delivery in the inbox (which wakes a processor),
 * batched with whatever else is arriving. No GitHub call; edits and deletions add one or two
 * indexed lookups first. A database error propagates, so GitHub sees a
 * failed delivery it can redeliver, rather than a 200 for a comment we did not keep.
 */
export function takeDelivery(deps: WebhookDeps): (event: WebhookDelivery) => Promise<Taken> {
  const inbox = new InboxWriter(deps.pool);
  return async (event) => {
    if (event.name === PUSH_EVENT) {
      const pushed = await takePush(deps.pool, event.payload);
      deps.log.debug({ delivery: event.id, ...pushed }, "push");
      return "ignore" in pushed
        ? { taken: false, reason: pushed.ignore }
        : { taken: true, recorded: pushed.recorded };
    }
    const s = screenDelivery(event.name, event.payload, deps.appId);
    if (!s.take) {
      deps.log.debug(
        { delivery: event.id, event: event.name, reason: s.reason },
        "webhook ignored",
      );
      return { taken: false, reason: s.reason };
    }
    if (
      s.onlyIfConversationPull &&
      !(
        await conversationsOfPull(
          deps.pool,
          s.onlyIfConversationPull.repo,
          s.onlyIfConversationPull.pullNumber,
        )
      ).length
    ) {
      deps.log.debug(
        { delivery: event.id },
        "webhook ignored: a review of no agent's pull request",
      );
      return { taken: false, reason: "mentions no one" };
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
