import examples from "@octokit/webhooks-examples";

/**
 * Webhook payloads from @octokit/webhooks-examples (GitHub's own samples), with only the fields
 * a test is about changed: ids, bodies, authors, the installation, pull-request-ness.
 */

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function example(name: string, action: string, pick: (p: Json) => boolean = () => true): Json {
  const def = (examples as unknown as Array<{ name: string; examples: Json[] }>).find(
    (d) => d.name === name,
  );
  const found = def?.examples.find((e) => e.action === action && pick(e));
  if (!found) throw new Error(`no ${name}.${action} example in @octokit/webhooks-examples`);
  return structuredClone(found);
}

export const OWNER = "Codertocat";
export const REPO = "Hello-World";
/** The task key's repo: owner/name lower case. */
export const REPO_KEY = "codertocat/hello-world";
export const INSTALLATION_ID = 1;

export interface Author {
  login: string;
  type?: "User" | "Bot";
}

export interface CommentOptions {
  commentId: number;
  body: string;
  issueNumber?: number;
  author?: Author;
  pullRequest?: boolean;
  /** Set to mark the comment as written by a GitHub App (Tether's own: APP_ID). */
  viaAppId?: number;
  createdAt?: string;
  updatedAt?: string;
  previousBody?: string;
  /** Who made the edit or deletion (the delivery's `sender`); default: the author. */
  sender?: Author;
}

function user(u: Json, a: Author): void {
  u.login = a.login;
  u.type = a.type ?? "User";
}

function adjustComment(p: Json, o: CommentOptions): Json {
  const issueNumber = o.issueNumber ?? 1;
  const author = o.author ?? { login: "Codertocat" };
  p.installation = { id: INSTALLATION_ID, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" };
  p.issue.number = issueNumber;
  p.issue.html_url = `https://github.com/${OWNER}/${REPO}/issues/${issueNumber}`;
  if (o.pullRequest)
    p.issue.pull_request = {
      url: `https://api.github.com/repos/${OWNER}/${REPO}/pulls/${issueNumber}`,
      html_url: `https://github.com/${OWNER}/${REPO}/pull/${issueNumber}`,
    };
  p.comment.id = o.commentId;
  p.comment.body = o.body;
  p.comment.html_url = `${p.issue.html_url}#issuecomment-${o.commentId}`;
  p.comment.author_association = author.type === "Bot" ? "NONE" : "OWNER";
  if (o.createdAt) p.comment.created_at = o.createdAt;
  if (o.updatedAt) p.comment.updated_at = o.updatedAt;
  p.comment.performed_via_github_app =
    o.viaAppId === undefined ? null : { id: o.viaAppId, slug: "tether", name: "Tether" };
  user(p.comment.user, author);
  user(p.sender, o.sender ?? author);
  return p;
}

export function commentCreated(o: CommentOptions): Json {
  return adjustComment(
    example("issue_comment", "created", (e) => e.installation !== undefined),
    o,
  );
}

export function commentEdited(o: CommentOptions): Json {
  const p = adjustComment(example("issue_comment", "edited"), o);
  p.changes = { body: { from: o.previousBody ?? "(earlier text)" } };
  return p;
}

export function commentDeleted(o: CommentOptions): Json {
  return adjustComment(example("issue_comment", "deleted"), o);
}

export interface IssueOptions {
  issueNumber: number;
  issueId?: number;
  body: string;
  author?: Author;
  updatedAt?: string;
  /** Who made the edit (the delivery's `sender`); default: the author. */
  sender?: Author;
}

function adjustIssue(p: Json, o: IssueOptions): Json {
  const author = o.author ?? { login: "Codertocat" };
  p.installation = { id: INSTALLATION_ID, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" };
  p.issue.number = o.issueNumber;
  p.issue.id = o.issueId ?? 500_000 + o.issueNumber;
  p.issue.body = o.body;
  p.issue.html_url = `https://github.com/${OWNER}/${REPO}/issues/${o.issueNumber}`;
  if (o.updatedAt) p.issue.updated_at = o.updatedAt;
  user(p.issue.user, author);
  user(p.sender, o.sender ?? author);
  return p;
}

export function issueOpened(o: IssueOptions): Json {
  return adjustIssue(
    example("issues", "opened", (e) => typeof e.issue.body === "string" && !e.changes),
    o,
  );
}

export function issueEdited(o: IssueOptions & { previousBody?: string }): Json {
  const p = adjustIssue(example("issues", "edited"), o);
  p.changes = { body: { from: o.previousBody ?? "(earlier text)" } };
  return p;
}

export interface ReviewCommentOptions {
  commentId: number;
  body: string;
  /** The pull request's number. */
  pullNumber?: number;
  author?: Author;
  path?: string;
  /** GitHub's location fields, as they should be; omitted ones keep the example's values. */
  place?: {
    line?: number | null;
    start_line?: number | null;
    original_line?: number | null;
    original_start_line?: number | null;
    side?: "LEFT" | "RIGHT";
    subject_type?: "line" | "file";
    commit_id?: string;
    original_commit_id?: string;
  };
  createdAt?: string;
  updatedAt?: string;
  previousBody?: string;
  /** Makes the comment a reply in a review thread, to this comment id. */
  inReplyTo?: number;
  /** Who made the edit or deletion (the delivery's `sender`); default: the author. */
  sender?: Author;
}

function adjustReviewComment(p: Json, o: ReviewCommentOptions): Json {
  const number = o.pullNumber ?? 2;
  const author = o.author ?? { login: "Codertocat" };
  p.installation = { id: INSTALLATION_ID, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" };
  p.pull_request.number = number;
  p.pull_request.html_url = `https://github.com/${OWNER}/${REPO}/pull/${number}`;
  p.comment.id = o.commentId;
  p.comment.body = o.body;
  p.comment.html_url = `${p.pull_request.html_url}#discussion_r${o.commentId}`;
  if (o.path !== undefined) p.comment.path = o.path;
  Object.assign(p.comment, o.place ?? {});
  if (o.inReplyTo !== undefined) p.comment.in_reply_to_id = o.inReplyTo;
  else delete p.comment.in_reply_to_id;
  if (o.createdAt) p.comment.created_at = o.createdAt;
  if (o.updatedAt) p.comment.updated_at = o.updatedAt;
  user(p.comment.user, author);
  user(p.sender, o.sender ?? author);
  return p;
}

/** pull_request_review_comment.created: a comment on a line of a pull request's diff. */
export function reviewCommentCreated(o: ReviewCommentOptions): Json {
  return adjustReviewComment(
    example(
      "pull_request_review_comment",
      "created",
      (e) => e.installation !== undefined && e.comment.line !== undefined,
    ),
    o,
  );
}

export function reviewCommentEdited(o: ReviewCommentOptions): Json {
  const p = adjustReviewComment(example("pull_request_review_comment", "edited"), o);
  p.changes = { body: { from: o.previousBody ?? "(earlier text)" } };
  return p;
}

export function reviewCommentDeleted(o: ReviewCommentOptions): Json {
  return adjustReviewComment(example("pull_request_review_comment", "deleted"), o);
}

export interface ReviewOptions {
  reviewId: number;
  body: string | null;
  pullNumber?: number;
  author?: Author;
  state?: "approved" | "changes_requested" | "commented";
  submittedAt?: string;
}

/** pull_request_review.submitted: a review, whose body may address agents. */
export function reviewSubmitted(o: ReviewOptions): Json {
  const p = example("pull_request_review", "submitted", (e) => e.installation !== undefined);
  const number = o.pullNumber ?? 2;
  const author = o.author ?? { login: "Codertocat" };
  p.installation = { id: INSTALLATION_ID, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" };
  p.pull_request.number = number;
  p.pull_request.html_url = `https://github.com/${OWNER}/${REPO}/pull/${number}`;
  p.review.id = o.reviewId;
  p.review.body = o.body;
  p.review.html_url = `${p.pull_request.html_url}#pullrequestreview-${o.reviewId}`;
  if (o.state) p.review.state = o.state;
  if (o.submittedAt) p.review.submitted_at = o.submittedAt;
  user(p.review.user, author);
  user(p.sender, author);
  return p;
}

export interface WorkItemOptions {
  issueNumber: number;
  /** The label added (labeled) or the login assigned (assigned). */
  value: string;
  action: "labeled" | "assigned";
  /** Who labelled or assigned. */
  sender?: Author;
  title?: string;
  body?: string;
  updatedAt?: string;
}

/** issues.labeled / issues.assigned. */
export function issueWorkItem(o: WorkItemOptions): Json {
  const p = example("issues", o.action);
  p.installation = { id: INSTALLATION_ID, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" };
  p.issue.number = o.issueNumber;
  p.issue.id = 500_000 + o.issueNumber;
  p.issue.html_url = `https://github.com/${OWNER}/${REPO}/issues/${o.issueNumber}`;
  if (o.title !== undefined) p.issue.title = o.title;
  if (o.body !== undefined) p.issue.body = o.body;
  if (o.updatedAt) p.issue.updated_at = o.updatedAt;
  workItemValue(p, o);
  return p;
}

/** pull_request.labeled / pull_request.assigned. */
export function pullWorkItem(o: WorkItemOptions): Json {
  const p = example("pull_request", o.action);
  p.installation = { id: INSTALLATION_ID, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" };
  p.number = o.issueNumber;
  p.pull_request.number = o.issueNumber;
  p.pull_request.id = 600_000 + o.issueNumber;
  p.pull_request.html_url = `https://github.com/${OWNER}/${REPO}/pull/${o.issueNumber}`;
  if (o.title !== undefined) p.pull_request.title = o.title;
  if (o.body !== undefined) p.pull_request.body = o.body;
  if (o.updatedAt) p.pull_request.updated_at = o.updatedAt;
  workItemValue(p, o);
  return p;
}

function workItemValue(p: Json, o: WorkItemOptions): void {
  if (o.action === "labeled") p.label = { ...p.label, name: o.value };
  else p.assignee = { ...p.assignee, login: o.value, type: "User" };
  user(p.sender, o.sender ?? { login: "Codertocat" });
}
