import { createHmac, randomUUID } from "node:crypto";
import type { EmitterWebhookEvent } from "@octokit/webhooks";
import { examplePayload, type Json } from "./fake-github-shapes.js";

/**
 * Webhook deliveries as GitHub makes them: payloads built from @octokit/webhooks-examples with
 * the stand-in's repository, issue, comment, sender and installation put in, and a sender
 * that signs them like GitHub does.
 */

/** What the payload builders need from the stand-in's state (FakeGitHub provides it). */
export interface PayloadSource {
  repoJson(repo: string): Json;
  issueJson(repo: string, issueNumber: number): Json;
  commentJson(commentId: number): Json;
  pullJson(repo: string, number: number): Json;
  userJson(login: string): Json;
  installationRef(repo: string): { id: number; node_id: string };
}

export type IssueCommentEvent = EmitterWebhookEvent<"issue_comment">;
export type IssuesEvent = EmitterWebhookEvent<"issues">;
export type PullRequestEvent = EmitterWebhookEvent<"pull_request">;

interface Common {
  repo: string;
  /** Who acted; default: the comment's or issue's author. */
  sender?: string;
}

export function issueCommentEvent(
  src: PayloadSource,
  o: Common & {
    issueNumber: number;
    commentId: number;
    action?: "created" | "edited" | "deleted";
    /** For "edited": the body before the edit. */
    previousBody?: string;
  },
): IssueCommentEvent {
  const action = o.action ?? "created";
  const payload = examplePayload("issue_comment", (e) => e.installation !== undefined);
  const comment = src.commentJson(o.commentId);
  payload.action = action;
  payload.issue = src.issueJson(o.repo, o.issueNumber);
  payload.comment = comment;
  if (action === "edited") payload.changes = { body: { from: o.previousBody ?? "" } };
  else delete payload.changes;
  finish(src, payload, o.repo, o.sender ?? login(comment.user));
  return { id: randomUUID(), name: "issue_comment", payload } as unknown as IssueCommentEvent;
}

export function issuesEvent(
  src: PayloadSource,
  o: Common & {
    issueNumber: number;
    action?: "opened" | "edited" | "closed" | "reopened";
    /** For "edited": what the title and body were. */
    changes?: { title?: string; body?: string };
  },
): IssuesEvent {
  const action = o.action ?? "opened";
  const payload = examplePayload("issues", (e) => e.action === action);
  const issue = src.issueJson(o.repo, o.issueNumber);
  payload.action = action;
  payload.issue = issue;
  if (action === "edited") {
    const changes: Json = {};
    if (o.changes?.title !== undefined) changes.title = { from: o.changes.title };
    if (o.changes?.body !== undefined) changes.body = { from: o.changes.body };
    payload.changes = changes;
  } else {
    delete payload.changes;
  }
  delete payload.label;
  delete payload.assignee;
  delete payload.milestone;
  finish(src, payload, o.repo, o.sender ?? login(issue.user));
  return { id: randomUUID(), name: "issues", payload } as unknown as IssuesEvent;
}

export function pullRequestEvent(
  src: PayloadSource,
  o: Common & { number: number; action?: "opened" | "synchronize" | "edited" | "closed" },
): PullRequestEvent {
  const action = o.action ?? "opened";
  const payload = examplePayload("pull_request", (e) => e.action === action);
  const pr = src.pullJson(o.repo, o.number);
  payload.action = action;
  payload.number = o.number;
  payload.pull_request = pr;
  delete payload.changes;
  delete payload.label;
  delete payload.assignee;
  delete payload.requested_reviewer;
  finish(src, payload, o.repo, o.sender ?? login(pr.user));
  return { id: randomUUID(), name: "pull_request", payload } as unknown as PullRequestEvent;
}

function finish(src: PayloadSource, payload: Json, repo: string, sender: string): void {
  payload.repository = src.repoJson(repo);
  payload.sender = src.userJson(sender);
  payload.installation = src.installationRef(repo);
  // The examples' organization belongs to the example repository, not ours.
  delete payload.organization;
  delete payload.enterprise;
}

function login(user: unknown): string {
  return String((user as Json).login);
}

export interface DeliveryResult {
  status: number;
  body: string;
  deliveryId: string;
}

/**
 * POST a delivery to the app with the headers GitHub sends (x-github-event, x-github-delivery,
 * x-hub-signature-256). `appUrl` is the webhook URL, or the app's origin (Probot's default
 * path /api/github/webhooks is then used).
 */
export async function signedWebhook(
  appUrl: string,
  event: string,
  payload: unknown,
  secret: string,
  opts: { deliveryId?: string; signal?: AbortSignal } = {},
): Promise<DeliveryResult> {
  const url = new URL(appUrl);
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/api/github/webhooks";
  const body = JSON.stringify(payload);
  const deliveryId = opts.deliveryId ?? randomUUID();
  const p = payload as Json;
  const installation = p.installation as Json | undefined;
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "user-agent": "GitHub-Hookshot/fake",
      "x-github-event": event,
      "x-github-delivery": deliveryId,
      "x-github-hook-id": "1",
      "x-github-hook-installation-target-type": "integration",
      "x-github-hook-installation-target-id": String(installation?.id ?? ""),
      "x-hub-signature-256": sign(secret, body),
    },
    body,
    signal: opts.signal ?? AbortSignal.timeout(15_000),
  });
  return { status: res.status, body: await res.text(), deliveryId };
}

export function sign(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}
