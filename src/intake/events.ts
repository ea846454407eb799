/**
 * Intake's one reading of a webhook event: the trigger it carries and its dedupe keys. The
 * webhook screens a delivery with it (webhook.ts), the processor handles the delivery with it
 * (handle-delivery.ts): the one reads GitHub's payload, the other the trimmed copy the inbox
 * kept, and reading that copy again gives the same reading, so the two never disagree on what
 * an event is or which keys it has. test/unit/intake-events.test.ts holds that over every
 * example GitHub publishes.
 */
import { createHash } from "node:crypto";
import type { z } from "zod";
import type { ReactionTarget } from "../github/reactions.js";
import type { IssueSnapshot } from "../core/task.js";
import type { TriggerComment } from "../sql/tasks/enqueue.js";
import type { Author } from "./access.js";
import {
  parseCiEvent,
  parseLegacyStoredRun,
  parseTextEvent,
  parseWorkItemEvent,
  previousBody,
  repoKey,
  type CiRun,
  type IssueCommentEvent,
  type IssuesEvent,
  type PullRequestReviewCommentEvent,
  type PullRequestReviewEvent,
  type ReviewComment,
  type TextEvent,
  type WorkItemTrigger,
} from "./payloads.js";
import { reviewCommentRequest, reviewRequest } from "./review-request.js";

/** The texts that may address agents: comments, review comments, reviews, issue bodies. */
const TEXT_EVENTS = [
  "issue_comment.created",
  "issue_comment.edited",
  "issue_comment.deleted",
  "issues.opened",
  "issues.edited",
  "pull_request_review_comment.created",
  "pull_request_review_comment.edited",
  "pull_request_review_comment.deleted",
  "pull_request_review.submitted",
] as const;
/** Labels and assignments that start an agent's turn (README "Talking to Tether"). */
const WORK_ITEM_EVENTS = [
  "issues.labeled",
  "issues.assigned",
  "pull_request.labeled",
  "pull_request.assigned",
] as const;
/** Checks that finished: the CI loop (ci-events.ts). */
const CI_EVENTS = [
  "check_run.completed",
  "check_suite.completed",
  "workflow_run.completed",
] as const;

/** Every `<event>.<action>` intake takes in. */
export const INTAKE_EVENTS = [...TEXT_EVENTS, ...WORK_ITEM_EVENTS, ...CI_EVENTS] as const;

type Kind = "text" | "work-item" | "ci";
const KINDS = new Map<string, Kind>([
  ...TEXT_EVENTS.map((k) => [k, "text"] as const),
  ...WORK_ITEM_EVENTS.map((k) => [k, "work-item"] as const),
  ...CI_EVENTS.map((k) => [k, "ci"] as const),
]);
const EVENT_NAMES: ReadonlySet<string> = new Set(INTAKE_EVENTS.map((e) => e.split(".")[0]!));

// ---------------------------------------------------------------------------------------------
// What an event reads as

/** A review of a pull request, as the turns it starts without a mention read it. */
export interface ReviewTrigger {
  owner: string;
  name: string;
  repo: string;
  repoId: number;
  pullNumber: number;
  review: {
    id: number;
    state: string;
    body: string;
    url: string;
    author: Author;
    submittedAt: string | null;
    commitId: string | null;
  };
}

/** A text that may address agents: a comment, a review comment, a review's body, an issue's body. */
export interface TextTrigger {
  owner: string;
  name: string;
  /** `owner/name` lower case. */
  repo: string;
  repoId: number;
  issueNumber: number;
  isPullRequest: boolean;
  /** "comment", "review" or "issue": for the reasons operators read. */
  what: "comment" | "review" | "issue";
  /** What its author wrote: the text mentions and commands are parsed from. */
  text: string;
  /** What the agent reads as the request, and its identity in the queue (`comment.source`). */
  comment: TriggerComment;
  author: Author;
  viaAppId: number | undefined;
  /** Where the 👀 goes; null for a review's body (GitHub has no reactions on reviews). */
  reactTo: ReactionTarget | null;
  /** Dedupe key of the delivery that created it: an edit waits while that one is pending. */
  createdKey: string;
  /**
   * Which sessions can have read it, for the history epochs: a conversation comment is in the
   * thread every cold turn reads; a review comment only reached the turns it fed; the issue's
   * body is read by every turn.
   */
  seenBy: "thread" | "fed-turns" | "every-turn";
  /** How operators and epoch reasons name it, e.g. "review comment 12". */
  label: string;
  /**
   * A reply in a review thread: the comment it answers. Read only once the reply is known to
   * start a turn, so other comments cost no extra call; `reviewCommentRequest(comment, parent)`
   * is then its request.
   */
  replyTo?: { commentId: number; comment: ReviewComment };
  /** A submitted review: it may start its pull request's agent without a mention. */
  review?: ReviewTrigger;
  /** The issue as the webhook carried it: the turn reads it instead of asking GitHub (#34). */
  issue?: IssueSnapshot;
}

/** A creation (comment created, issue opened, review submitted), an edit or a deletion. */
export type Change =
  | { action: "created" }
  | {
      action: "edited";
      /** What the author had written before (edits that left the body alone are refused). */
      previousText: string;
      by: string;
      /**
       * Who edited it (the delivery's sender), who may not be its author: the editor must pass
       * the access rules for the edit to change what an agent is asked.
       */
      editor: Author;
    }
  | { action: "deleted"; by: string };

interface Common {
  /** The payload's action, as the inbox records it. */
  action: string;
  installationId: number;
  /** The inbox's: a redelivery of an event has the same one, another event another. */
  dedupeKey: string;
  /**
   * What the inbox keeps: the payload validated and trimmed to what this module reads (about
   * 1 KB instead of GitHub's 10–15 KB: bench/intake.ts). Read again, it reads the same.
   */
  payload: object;
}

export type IntakeEvent =
  | (Common & { kind: "text"; trigger: TextTrigger; change: Change })
  | (Common & { kind: "work-item"; trigger: WorkItemTrigger })
  | (Common & { kind: "ci"; run: CiRun });

/** An event read, or why it carries nothing for intake: never a throw, whatever came in. */
export type EventRead = { ok: true; event: IntakeEvent } | { ok: false; reason: string };

/**
 * Reads a webhook delivery's payload as GitHub sent it (or as the inbox kept it): which trigger
 * it carries, and its dedupe keys.
 */
export function readEvent(name: string, payload: unknown): EventRead {
  const action = (payload as { action?: unknown } | null)?.action;
  const kind = `${name}.${typeof action === "string" ? action : "?"}`;
  switch (KINDS.get(kind)) {
    case "text":
      return readText(kind, name, payload);
    case "work-item":
      return readWorkItem(kind, name, payload);
    case "ci":
      return readCi(kind, name, payload);
    case undefined:
      return refuse(`${EVENT_NAMES.has(name) ? kind : name} is not handled`);
  }
}

/** Reads a delivery the inbox kept: readEvent, and the CI runs an earlier version kept. */
export function readDelivery(d: { event: string; payload: unknown }): EventRead {
  const read = readEvent(d.event, d.payload);
  if (read.ok || KINDS.get(`${d.event}.completed`) !== "ci") return read;
  const legacy = parseLegacyStoredRun(d.payload);
  return legacy?.event === d.event
    ? { ok: true, event: ciEvent(legacy, d.payload as object) }
    : read;
}

// ---------------------------------------------------------------------------------------------

function readText(kind: string, name: string, payload: unknown): EventRead {
  const read = parseTextEvent(name, payload);
  if (read === undefined) return refuse(`${kind} is not handled`);
  if ("problem" in read) return refuse(unexpected(kind, read.problem));
  const { trigger, change, updatedAt } = textOf(read);
  if (change === undefined) return refuse("body unchanged");
  const source = trigger.comment.source;
  return {
    ok: true,
    event: {
      kind: "text",
      action: read.event.action,
      installationId: read.event.installation.id,
      dedupeKey:
        change.action === "created"
          ? trigger.createdKey
          : change.action === "deleted"
            ? `${source}:deleted`
            : // Two edits of one text differ in time or words; a redelivery in neither.
              `${source}:edited:${updatedAt}:${digest(trigger.text)}`,
      payload: read.event,
      trigger,
      change,
    },
  };
}

/** The trigger and change of a text event; `change` undefined for an edit that left the body alone. */
function textOf(read: TextEvent): {
  trigger: TextTrigger;
  change: Change | undefined;
  updatedAt: string;
} {
  switch (read.name) {
    case "issue_comment": {
      const e = read.event;
      return {
        trigger: triggerFromComment(e),
        change: changeOf(e),
        updatedAt: e.comment.updated_at ?? "",
      };
    }
    case "pull_request_review_comment": {
      const e = read.event;
      return {
        trigger: triggerFromReviewComment(e),
        change: changeOf(e),
        updatedAt: e.comment.updated_at ?? "",
      };
    }
    case "pull_request_review": {
      const e = read.event;
      return {
        trigger: triggerFromReview(e),
        change: { action: "created" },
        updatedAt: e.review.submitted_at ?? "",
      };
    }
    case "issues": {
      const e = read.event;
      return {
        trigger: triggerFromIssue(e),
        change: changeOf({ ...e, action: e.action === "opened" ? "created" : e.action }),
        updatedAt: e.issue.updated_at ?? "",
      };
    }
  }
}

function changeOf(e: {
  action: "created" | "edited" | "deleted";
  sender: Author;
  changes?: { body?: { from?: string | null | undefined } | undefined } | undefined;
}): Change | undefined {
  switch (e.action) {
    case "created":
      return { action: "created" };
    case "edited": {
      const previousText = previousBody(e.changes);
      return previousText === undefined
        ? undefined
        : {
            action: "edited",
            previousText,
            by: e.sender.login,
            editor: { login: e.sender.login, type: e.sender.type },
          };
    }
    case "deleted":
      return { action: "deleted", by: e.sender.login };
  }
}

/**
 * The issue as the payload has it, for the turn to read instead of asking GitHub; nothing for a
 * pull request or a payload without the facts.
 */
function withIssue(i: IssueCommentEvent["issue"]): { issue?: IssueSnapshot } {
  if (i.pull_request || typeof i.title !== "string" || !i.updated_at) return {};
  return {
    issue: {
      title: i.title,
      body: i.body ?? "",
      author: i.user.login,
      url: i.html_url,
      updatedAt: i.updated_at,
    },
  };
}

function triggerFromComment(e: IssueCommentEvent): TextTrigger {
  const text = e.comment.body ?? "";
  return {
    ...repoOf(e),
    issueNumber: e.issue.number,
    isPullRequest: e.issue.pull_request !== undefined && e.issue.pull_request !== null,
    what: "comment",
    text,
    comment: {
      source: `comment:${e.comment.id}`,
      commentId: e.comment.id,
      author: e.comment.user.login,
      url: e.comment.html_url,
      body: text,
      createdAt: new Date(e.comment.created_at),
    },
    author: e.comment.user,
    viaAppId: e.comment.performed_via_github_app?.id,
    reactTo: { kind: "comment", commentId: e.comment.id },
    createdKey: `comment:${e.comment.id}:created`,
    seenBy: "thread",
    ...withIssue(e.issue),
    label: `comment ${e.comment.id}`,
  };
}

/**
 * A comment on the diff asks like a comment in the pull request's conversation: same task key
 * (the pull request's number), answered in the conversation. Its request carries where it sits.
 */
function triggerFromReviewComment(e: PullRequestReviewCommentEvent): TextTrigger {
  return {
    ...repoOf(e),
    issueNumber: e.pull_request.number,
    isPullRequest: true,
    what: "comment",
    text: e.comment.body ?? "",
    comment: {
      source: `review_comment:${e.comment.id}`,
      commentId: e.comment.id,
      author: e.comment.user.login,
      url: e.comment.html_url,
      body: reviewCommentRequest(e.comment),
      createdAt: new Date(e.comment.created_at),
    },
    author: e.comment.user,
    viaAppId: e.comment.performed_via_github_app?.id,
    reactTo: { kind: "review_comment", commentId: e.comment.id },
    createdKey: `review_comment:${e.comment.id}:created`,
    seenBy: "fed-turns",
    label: `review comment ${e.comment.id}`,
    ...(e.comment.in_reply_to_id
      ? { replyTo: { commentId: e.comment.in_reply_to_id, comment: e.comment } }
      : {}),
  };
}

function triggerFromReview(e: PullRequestReviewEvent): TextTrigger {
  return {
    ...repoOf(e),
    issueNumber: e.pull_request.number,
    isPullRequest: true,
    what: "review",
    text: e.review.body ?? "",
    comment: {
      source: `review:${e.review.id}`,
      commentId: e.review.id,
      author: e.review.user.login,
      url: e.review.html_url,
      body: reviewRequest(e.review),
      createdAt: e.review.submitted_at ? new Date(e.review.submitted_at) : new Date(),
    },
    author: e.review.user,
    viaAppId: undefined,
    reactTo: null,
    createdKey: `review:${e.review.id}:submitted`,
    seenBy: "fed-turns",
    label: `review ${e.review.id}`,
    review: {
      ...repoOf(e),
      pullNumber: e.pull_request.number,
      review: {
        id: e.review.id,
        state: e.review.state,
        body: e.review.body ?? "",
        url: e.review.html_url,
        author: e.review.user,
        submittedAt: e.review.submitted_at ?? null,
        commitId: e.review.commit_id ?? null,
      },
    },
  };
}

function triggerFromIssue(e: IssuesEvent): TextTrigger {
  const text = e.issue.body ?? "";
  return {
    ...repoOf(e),
    issueNumber: e.issue.number,
    isPullRequest: e.issue.pull_request !== undefined && e.issue.pull_request !== null,
    what: "issue",
    text,
    comment: {
      source: `issue:${e.issue.id}`,
      commentId: null,
      author: e.issue.user.login,
      url: e.issue.html_url,
      body: text,
      createdAt: new Date(e.issue.created_at),
    },
    author: e.issue.user,
    viaAppId: e.issue.performed_via_github_app?.id,
    reactTo: { kind: "issue", issueNumber: e.issue.number },
    createdKey: `issue:${e.issue.id}:opened`,
    seenBy: "every-turn",
    ...withIssue(e.issue),
    label: "issue body",
  };
}

function repoOf(e: { repository: IssuesEvent["repository"] }) {
  return {
    owner: e.repository.owner.login,
    name: e.repository.name,
    repo: repoKey(e.repository.full_name),
    repoId: e.repository.id,
  };
}

// ---------------------------------------------------------------------------------------------

/**
 * A label added or an assignment: a trigger whenever it names a label or assignee; which
 * agent's (if any) is the config's to say, in the processor. The dedupe key holds the issue's
 * update time, so the same label added again later is a new request, and a redelivery is not.
 */
function readWorkItem(kind: string, name: string, payload: unknown): EventRead {
  const read = parseWorkItemEvent(name, payload);
  if ("problem" in read) return refuse(unexpected(kind, read.problem));
  const t = read.trigger;
  if (!t) return refuse(`${kind} without a ${kind.endsWith("labeled") ? "label" : "assignee"}`);
  const base = `${t.isPullRequest ? "pull" : "issue"}:${t.item.id}`;
  return {
    ok: true,
    event: {
      kind: "work-item",
      action: read.event.action,
      installationId: t.installationId,
      dedupeKey: `${base}:${read.event.action}:${t.value.toLowerCase()}:${t.item.updated_at ?? ""}`,
      payload: read.event,
      trigger: t,
    },
  };
}

/**
 * A finished CI run. Each event of one failure is its own delivery (a check suite's green may
 * follow another suite's failure on the same commit): their dedupe keys differ, a redelivery's
 * not.
 */
function readCi(kind: string, name: string, payload: unknown): EventRead {
  const read = parseCiEvent(name, payload);
  if (read === undefined) return refuse(`${kind} is not handled`);
  if ("problem" in read) return refuse(unexpected(kind, read.problem));
  return { ok: true, event: ciEvent(read.run, read.event) };
}

function ciEvent(r: CiRun, payload: object): IntakeEvent {
  return {
    kind: "ci",
    action: "completed",
    installationId: r.installationId,
    dedupeKey: `ci:${r.event}:${r.id}:${r.headSha}:${r.conclusion ?? "none"}`,
    payload,
    run: r,
  };
}

// ---------------------------------------------------------------------------------------------

function refuse(reason: string): EventRead {
  return { ok: false, reason };
}

function unexpected(kind: string, err: z.ZodError): string {
  const first = err.issues[0];
  return `unexpected ${kind} payload: ${first ? `${first.path.join(".") || "(root)"}: ${first.message}` : "invalid"}`;
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 12);
}
