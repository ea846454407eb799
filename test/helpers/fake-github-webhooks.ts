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
export type PullRequestReviewCommentEvent = EmitterWebhookEvent<"pull_request_review_comment">;

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
    action?: "opened" | "edited" | "closed" | "reopened" | "labeled" | "assigned";
    /** For "edited": what the title and body were. */
    changes?: { title?: string; body?: string };
    /** For "labeled": the label's name. */
    label?: string;
    /** For "assigned": the assignee's login. */
    assignee?: string;
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
  if (action === "labeled") payload.label = labelJson(o.label ?? "bug");
  if (action === "assigned") payload.assignee = src.userJson(o.assignee ?? "octocat");
  finish(src, payload, o.repo, o.sender ?? login(issue.user));
  return { id: randomUUID(), name: "issues", payload } as unknown as IssuesEvent;
}

function labelJson(name: string): Json {
  return { id: 1_000_000 + name.length, node_id: "LA_x", name, color: "d73a4a", default: false };
}

export type PullRequestReviewEvent = EmitterWebhookEvent<"pull_request_review">;

/** pull_request_review.submitted for a review the stand-in holds (addReview's REST shape). */
export function pullRequestReviewEvent(
  src: PayloadSource,
  o: Common & { number: number; review: Json },
): PullRequestReviewEvent {
  const payload = examplePayload("pull_request_review", (e) => e.action === "submitted");
  payload.action = "submitted";
  payload.pull_request = src.pullJson(o.repo, o.number);
  // Webhooks spell the state in lower case; the REST API in upper case.
  payload.review = { ...o.review, state: String(o.review.state).toLowerCase() };
  finish(src, payload, o.repo, o.sender ?? login(o.review.user));
  return {
    id: randomUUID(),
    name: "pull_request_review",
    payload,
  } as unknown as PullRequestReviewEvent;
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

/** A comment on a pull request's diff (`comment`: the stand-in's REST shape of it). */
export function pullRequestReviewCommentEvent(
  src: PayloadSource,
  o: Common & { number: number; comment: Json; action?: "created" | "edited" | "deleted" },
): PullRequestReviewCommentEvent {
  const action = o.action ?? "created";
  const payload = examplePayload("pull_request_review_comment", (e) => e.action === action);
  payload.action = action;
  payload.pull_request = src.pullJson(o.repo, o.number);
  payload.comment = o.comment;
  delete payload.changes;
  finish(src, payload, o.repo, o.sender ?? login(o.comment.user));
  return {
    id: randomUUID(),
    name: "pull_request_review_comment",
    payload,
  } as unknown as PullRequestReviewCommentEvent;
}

export type PushEvent = EmitterWebhookEvent<"push">;

/** A push of `ref` from `before` to `after`, as GitHub sends it after any push. */
export function pushEvent(
  src: PayloadSource,
  o: Common & { ref: string; before: string; after: string },
): PushEvent {
  const payload = examplePayload("push", (e) => e.installation !== undefined);
  payload.ref = o.ref;
  payload.before = o.before;
  payload.after = o.after;
  payload.created = /^0+$/.test(o.before);
  payload.deleted = /^0+$/.test(o.after);
  payload.forced = false;
  payload.commits = [];
  payload.head_commit = null;
  payload.compare = "";
  finish(src, payload, o.repo, o.sender ?? o.repo.split("/")[0]!);
  return { id: randomUUID(), name: "push", payload } as unknown as PushEvent;
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

/** One attempt to deliver a delivery, as GitHub's log of the app's deliveries keeps it. */
export interface DeliveryAttemptRecord {
  /** The attempt's id (what `POST /app/hook/deliveries/{id}/attempts` takes). */
  id: number;
  /** The delivery's id, X-GitHub-Delivery: the same for every attempt of one delivery. */
  guid: string;
  deliveredAt: Date;
  redelivery: boolean;
  /** HTTP status of the answer; 0 when there was none (refused, reset, timed out). */
  statusCode: number;
  /** "OK", or what went wrong, in the manner of GitHub's log. */
  status: string;
  durationMs: number;
  event: string;
  action: string | null;
  installationId: number | null;
  repositoryId: number | null;
  /** Where it was sent; a redelivery goes there again. */
  url: string;
}

interface StoredDelivery {
  url: string;
  event: string;
  body: string;
  secret: string;
}

/**
 * GitHub's log of the app's webhook deliveries: every attempt the stand-in made (or a test
 * recorded), newest last here and newest first in the listing, and the redelivery of one.
 */
export class WebhookDeliveryLog {
  readonly attempts: DeliveryAttemptRecord[] = [];
  private readonly stored = new Map<string, StoredDelivery>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private nextId = 90_000_000_001;

  constructor(private readonly now: () => Date) {}

  /**
   * Sign and POST a delivery as GitHub does and record the attempt: its status, or 0 when no
   * answer came (connection refused or reset, or none within `timeoutMs`, GitHub's 10 s).
   * Never throws for the endpoint's sake: a failed delivery is a record, as on GitHub.
   */
  async send(
    url: string,
    event: string,
    payload: unknown,
    secret: string,
    opts: { deliveryId?: string; at?: Date; timeoutMs?: number; redelivery?: boolean } = {},
  ): Promise<DeliveryResult & { attempt: DeliveryAttemptRecord }> {
    const guid = opts.deliveryId ?? randomUUID();
    const body = JSON.stringify(payload);
    this.stored.set(guid, { url, event, body, secret });
    return this.post(guid, opts);
  }

  /**
   * Record an attempt without sending anything (a log that predates the test, say). It can be
   * redelivered when `payload` and `secret` are given.
   */
  record(o: {
    guid?: string;
    event?: string;
    action?: string | null;
    statusCode: number;
    at?: Date;
    redelivery?: boolean;
    url?: string;
    payload?: unknown;
    secret?: string;
  }): DeliveryAttemptRecord {
    const guid = o.guid ?? randomUUID();
    const event = o.event ?? "issue_comment";
    if (o.payload !== undefined && o.secret !== undefined) {
      this.stored.set(guid, {
        url: o.url ?? "http://127.0.0.1:1/api/github/webhooks",
        event,
        body: JSON.stringify(o.payload),
        secret: o.secret,
      });
    }
    const payload = (o.payload ?? {}) as Json;
    const rec: DeliveryAttemptRecord = {
      id: this.nextId++,
      guid,
      deliveredAt: o.at ?? this.now(),
      redelivery: o.redelivery ?? false,
      statusCode: o.statusCode,
      status: statusText(o.statusCode),
      durationMs: 5,
      event,
      action: o.action === undefined ? ((payload.action as string | undefined) ?? null) : o.action,
      installationId: ((payload.installation as Json | undefined)?.id as number) ?? null,
      repositoryId: ((payload.repository as Json | undefined)?.id as number) ?? null,
      url: o.url ?? this.stored.get(guid)?.url ?? "",
    };
    this.attempts.push(rec);
    return rec;
  }

  /**
   * Redeliver the delivery of attempt `id`, as GitHub does after answering 202: later, with the
   * same body and guid, to the URL it was sent to. Returns false for an attempt it does not know.
   */
  redeliver(id: number): boolean {
    const attempt = this.attempts.find((a) => a.id === id);
    if (!attempt || !this.stored.has(attempt.guid)) return false;
    const sending = this.post(attempt.guid, { redelivery: true });
    this.inFlight.add(sending);
    void sending.finally(() => this.inFlight.delete(sending));
    return true;
  }

  /** Resolves once every redelivery asked for so far has been made and recorded. */
  async settled(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** Attempts of one delivery, oldest first. */
  of(guid: string): DeliveryAttemptRecord[] {
    return this.attempts.filter((a) => a.guid === guid);
  }

  /**
   * One page of the listing, newest first. The cursor is where the page starts: the id of its
   * first attempt (GitHub's cursors are opaque; so is this one to the app).
   */
  page(perPage: number, cursor: string | undefined): { items: Json[]; next?: string } {
    const newestFirst = [...this.attempts].sort(
      (a, b) => b.deliveredAt.getTime() - a.deliveredAt.getTime() || b.id - a.id,
    );
    let start = 0;
    if (cursor !== undefined) {
      const m = /^v1_(\d+)$/.exec(cursor);
      const i = m ? newestFirst.findIndex((a) => a.id === Number(m[1])) : -1;
      if (i < 0) return { items: [] };
      start = i;
    }
    const slice = newestFirst.slice(start, start + perPage);
    const following = newestFirst[start + perPage];
    return {
      items: slice.map(attemptJson),
      ...(following ? { next: `v1_${following.id}` } : {}),
    };
  }

  private async post(
    guid: string,
    opts: { at?: Date; timeoutMs?: number; redelivery?: boolean },
  ): Promise<DeliveryResult & { attempt: DeliveryAttemptRecord }> {
    const d = this.stored.get(guid)!;
    const payload: unknown = JSON.parse(d.body);
    const started = Date.now();
    let status = 0;
    let text = "";
    try {
      const res = await signedWebhook(d.url, d.event, payload, d.secret, {
        deliveryId: guid,
        signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
      });
      status = res.status;
      text = res.body;
    } catch (err) {
      text = err instanceof Error ? `${err.message} ${String(err.cause ?? "")}` : String(err);
    }
    const attempt = this.record({
      guid,
      event: d.event,
      statusCode: status,
      at: opts.at ?? this.now(),
      redelivery: opts.redelivery ?? false,
      url: d.url,
      payload, // for the attempt's action and ids; the delivery itself is stored already
    });
    attempt.durationMs = Date.now() - started;
    return { status, body: text, deliveryId: guid, attempt };
  }
}

function statusText(code: number): string {
  if (code >= 200 && code < 300) return "OK";
  if (code === 0) return "We couldn’t deliver this payload: failed to connect to host";
  return `Invalid HTTP Response: ${code}`;
}

/** An attempt as `GET /app/hook/deliveries` lists it. */
function attemptJson(a: DeliveryAttemptRecord): Json {
  return {
    id: a.id,
    guid: a.guid,
    delivered_at: a.deliveredAt.toISOString().replace(/\.\d{3}Z$/, "Z"),
    redelivery: a.redelivery,
    duration: a.durationMs / 1000,
    status: a.status,
    status_code: a.statusCode,
    event: a.event,
    action: a.action,
    installation_id: a.installationId,
    repository_id: a.repositoryId,
    throttled_at: null,
  };
}
