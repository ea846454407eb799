import { createRequire } from "node:module";
import type { WebhookDefinition } from "@octokit/webhooks-examples";

/**
 * GitHub's JSON shapes for the stand-in, made from the real example payloads in
 * @octokit/webhooks-examples: each shape starts from an example object (so every field GitHub
 * sends is there, with GitHub's names) and then gets the stand-in's ids, names and URLs.
 */

export type Json = { [key: string]: unknown };

/** Where the stand-in lives: REST base (`…/api/v3`), web base (html_url, clone URLs). */
export interface Bases {
  apiUrl: string;
  webUrl: string;
}

const require = createRequire(import.meta.url);
let definitions: WebhookDefinition[] | undefined;

/** A deep copy of one example payload of `event` (the first that `pick` accepts). */
export function examplePayload(event: string, pick: (payload: Json) => boolean = () => true): Json {
  definitions ??= require("@octokit/webhooks-examples") as WebhookDefinition[];
  const def = definitions.find((d) => d.name === event);
  if (!def) throw new Error(`@octokit/webhooks-examples has no "${event}" event`);
  const examples = def.examples as unknown as Json[];
  const example = examples.find(pick) ?? examples[0];
  if (!example) throw new Error(`@octokit/webhooks-examples has no example of "${event}"`);
  return structuredClone(example);
}

function obj(value: unknown): Json {
  return value as Json;
}

/** Replace substrings in every string inside a JSON value. */
function rewrite(value: unknown, pairs: Array<[string, string]>): unknown {
  if (typeof value === "string") {
    return pairs.reduce((s, [from, to]) => s.split(from).join(to), value);
  }
  if (Array.isArray(value)) return value.map((v) => rewrite(v, pairs));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rewrite(v, pairs)]));
  }
  return value;
}

/** GitHub timestamps: ISO 8601 without milliseconds. */
export function iso(d: Date | null | undefined): string | null {
  return d ? d.toISOString().replace(/\.\d{3}Z$/, "Z") : null;
}

export function nodeId(kind: string, id: number): string {
  return Buffer.from(`0${kind.length}:${kind}${id}`).toString("base64");
}

export type UserType = "User" | "Bot" | "Organization";

export function userJson(b: Bases, login: string, id: number, type: UserType = "User"): Json {
  const template = obj(examplePayload("issue_comment").sender);
  const shaped = obj(
    rewrite(template, [
      ["https://api.github.com/users/Codertocat", `${b.apiUrl}/users/${encodeURIComponent(login)}`],
      ["https://github.com/Codertocat", `${b.webUrl}/${encodeURIComponent(login)}`],
    ]),
  );
  return {
    ...shaped,
    login,
    id,
    node_id: nodeId(type, id),
    avatar_url: `${b.webUrl}/avatars/u/${id}?v=4`,
    type,
    site_admin: false,
  };
}

export interface RepoFacts {
  id: number;
  owner: Json;
  name: string;
  private: boolean;
  defaultBranch: string;
  createdAt: Date;
  pushedAt: Date;
  openIssues: number;
}

export function repoJson(b: Bases, r: RepoFacts): Json {
  const full = `${String(r.owner.login)}/${r.name}`;
  const host = new URL(b.webUrl).host;
  const template = obj(examplePayload("issue_comment").repository);
  const shaped = obj(
    rewrite(template, [
      ["https://api.github.com/repos/Codertocat/Hello-World", `${b.apiUrl}/repos/${full}`],
      ["https://github.com/Codertocat/Hello-World", `${b.webUrl}/${full}`],
      ["git://github.com/Codertocat/Hello-World", `git://${host}/${full}`],
      ["git@github.com:Codertocat/Hello-World", `git@${host}:${full}`],
    ]),
  );
  return {
    ...shaped,
    id: r.id,
    node_id: nodeId("Repository", r.id),
    name: r.name,
    full_name: full,
    private: r.private,
    visibility: r.private ? "private" : "public",
    owner: r.owner,
    description: null,
    created_at: iso(r.createdAt),
    updated_at: iso(r.pushedAt),
    pushed_at: iso(r.pushedAt),
    clone_url: `${b.webUrl}/${full}.git`,
    default_branch: r.defaultBranch,
    open_issues_count: r.openIssues,
    open_issues: r.openIssues,
    topics: [],
    archived: false,
    disabled: false,
    // What GET /repos/{owner}/{repo} (a full repository) must have besides.
    has_discussions: false,
    network_count: 0,
    subscribers_count: 0,
  };
}

export type ReactionContent =
  "+1" | "-1" | "laugh" | "confused" | "heart" | "hooray" | "rocket" | "eyes";
export const REACTION_CONTENTS: readonly ReactionContent[] = [
  "+1",
  "-1",
  "laugh",
  "confused",
  "heart",
  "hooray",
  "rocket",
  "eyes",
];

export function reactionsSummary(url: string, contents: ReactionContent[]): Json {
  const summary: Json = { url, total_count: contents.length };
  for (const c of REACTION_CONTENTS) summary[c] = contents.filter((x) => x === c).length;
  return summary;
}

export function reactionJson(id: number, user: Json, content: ReactionContent, at: Date): Json {
  return { id, node_id: nodeId("Reaction", id), user, content, created_at: iso(at) };
}

export interface IssueFacts {
  id: number;
  number: number;
  title: string;
  body: string | null;
  user: Json;
  state: "open" | "closed";
  labels: string[];
  comments: number;
  createdAt: Date;
  updatedAt: Date;
  closedAt: Date | null;
  authorAssociation: string;
  isPullRequest: boolean;
  reactions: ReactionContent[];
}

export function issueJson(b: Bases, repoFull: string, i: IssueFacts): Json {
  const template = obj(examplePayload("issue_comment").issue);
  const api = `${b.apiUrl}/repos/${repoFull}`;
  const url = `${api}/issues/${i.number}`;
  const html = `${b.webUrl}/${repoFull}/${i.isPullRequest ? "pull" : "issues"}/${i.number}`;
  const shaped: Json = {
    ...template,
    url,
    repository_url: api,
    labels_url: `${url}/labels{/name}`,
    comments_url: `${url}/comments`,
    events_url: `${url}/events`,
    timeline_url: `${url}/timeline`,
    html_url: html,
    id: i.id,
    node_id: nodeId(i.isPullRequest ? "PullRequest" : "Issue", i.id),
    number: i.number,
    title: i.title,
    user: i.user,
    labels: i.labels.map((name, k) => ({
      id: i.id * 100 + k,
      node_id: nodeId("Label", i.id * 100 + k),
      url: `${api}/labels/${encodeURIComponent(name)}`,
      name,
      color: "ededed",
      default: false,
      description: null,
    })),
    state: i.state,
    state_reason: null,
    locked: false,
    assignee: null,
    assignees: [],
    milestone: null,
    comments: i.comments,
    created_at: iso(i.createdAt),
    updated_at: iso(i.updatedAt),
    closed_at: iso(i.closedAt),
    author_association: i.authorAssociation,
    active_lock_reason: null,
    body: i.body,
    reactions: reactionsSummary(`${url}/reactions`, i.reactions),
    performed_via_github_app: null,
  };
  if (i.isPullRequest) {
    shaped.pull_request = {
      url: `${api}/pulls/${i.number}`,
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      merged_at: null,
    };
  } else {
    delete shaped.pull_request;
  }
  return shaped;
}

export interface CommentFacts {
  id: number;
  issueNumber: number;
  isPullRequest: boolean;
  user: Json;
  body: string;
  createdAt: Date;
  updatedAt: Date;
  authorAssociation: string;
  reactions: ReactionContent[];
  performedViaApp: Json | null;
}

export function commentJson(b: Bases, repoFull: string, c: CommentFacts): Json {
  const template = obj(examplePayload("issue_comment").comment);
  const api = `${b.apiUrl}/repos/${repoFull}`;
  const url = `${api}/issues/comments/${c.id}`;
  const kind = c.isPullRequest ? "pull" : "issues";
  return {
    ...template,
    url,
    html_url: `${b.webUrl}/${repoFull}/${kind}/${c.issueNumber}#issuecomment-${c.id}`,
    issue_url: `${api}/issues/${c.issueNumber}`,
    id: c.id,
    node_id: nodeId("IssueComment", c.id),
    user: c.user,
    created_at: iso(c.createdAt),
    updated_at: iso(c.updatedAt),
    author_association: c.authorAssociation,
    body: c.body,
    reactions: reactionsSummary(`${url}/reactions`, c.reactions),
    performed_via_github_app: c.performedViaApp,
  };
}

export interface ReviewCommentFacts {
  id: number;
  pullNumber: number;
  user: Json;
  body: string;
  path: string;
  line: number | null;
  startLine: number | null;
  side: "LEFT" | "RIGHT";
  commitId: string;
  createdAt: Date;
  /** The review it was submitted with; null for a comment outside any review. */
  reviewId?: number | null;
}

/** GET /repos/{o}/{r}/pulls/{n}/comments: one comment on a line of the diff. */
export function reviewCommentJson(b: Bases, repoFull: string, c: ReviewCommentFacts): Json {
  const api = `${b.apiUrl}/repos/${repoFull}`;
  return {
    url: `${api}/pulls/comments/${c.id}`,
    html_url: `${b.webUrl}/${repoFull}/pull/${c.pullNumber}#discussion_r${c.id}`,
    pull_request_url: `${api}/pulls/${c.pullNumber}`,
    id: c.id,
    node_id: nodeId("PullRequestReviewComment", c.id),
    pull_request_review_id: c.reviewId ?? null,
    user: c.user,
    body: c.body,
    path: c.path,
    line: c.line,
    original_line: c.line,
    // the line's index in the diff; GitHub's review-comment shape requires it (outdated: null)
    position: c.line,
    original_position: c.line,
    start_line: c.startLine,
    original_start_line: c.startLine,
    side: c.side,
    start_side: c.startLine === null ? null : c.side,
    subject_type: "line",
    commit_id: c.commitId,
    original_commit_id: c.commitId,
    created_at: iso(c.createdAt),
    updated_at: iso(c.createdAt),
    author_association: "COLLABORATOR",
    diff_hunk: `@@ -${c.line ?? 1},1 +${c.line ?? 1},1 @@`,
    _links: {
      self: { href: `${api}/pulls/comments/${c.id}` },
      html: { href: `${b.webUrl}/${repoFull}/pull/${c.pullNumber}#discussion_r${c.id}` },
      pull_request: { href: `${api}/pulls/${c.pullNumber}` },
    },
  };
}

export interface ReviewFacts {
  id: number;
  pullNumber: number;
  user: Json;
  body: string;
  state: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED";
  commitId: string;
  submittedAt: Date;
}

/** GET /repos/{o}/{r}/pulls/{n}/reviews: one submitted review. */
export function reviewJson(b: Bases, repoFull: string, r: ReviewFacts): Json {
  return {
    id: r.id,
    node_id: nodeId("PullRequestReview", r.id),
    user: r.user,
    body: r.body,
    state: r.state,
    html_url: `${b.webUrl}/${repoFull}/pull/${r.pullNumber}#pullrequestreview-${r.id}`,
    pull_request_url: `${b.apiUrl}/repos/${repoFull}/pulls/${r.pullNumber}`,
    submitted_at: iso(r.submittedAt),
    commit_id: r.commitId,
    author_association: "COLLABORATOR",
    _links: {
      html: { href: `${b.webUrl}/${repoFull}/pull/${r.pullNumber}#pullrequestreview-${r.id}` },
      pull_request: { href: `${b.apiUrl}/repos/${repoFull}/pulls/${r.pullNumber}` },
    },
  };
}

/** A commit as GET /repos/{o}/{r}/branches/{branch} (and the commits API) shows it. */
export function commitJson(b: Bases, repoFull: string, sha: string, at: Date): Json {
  const api = `${b.apiUrl}/repos/${repoFull}`;
  const who = { name: "Stand-in", email: "stand-in@example.com", date: iso(at) };
  return {
    sha,
    node_id: nodeId("Commit", Number.parseInt(sha.slice(0, 8), 16) || 0),
    url: `${api}/commits/${sha}`,
    html_url: `${b.webUrl}/${repoFull}/commit/${sha}`,
    comments_url: `${api}/commits/${sha}/comments`,
    commit: {
      url: `${api}/git/commits/${sha}`,
      author: who,
      committer: who,
      message: "",
      comment_count: 0,
      tree: { sha, url: `${api}/git/trees/${sha}` },
    },
    author: null,
    committer: null,
    parents: [],
  };
}

export interface PullFacts {
  issue: IssueFacts;
  repo: Json;
  /** The head's repository when it is not `repo` (a fork). */
  headRepo?: Json;
  headRef: string;
  headSha: string;
  baseRef: string;
  baseSha: string;
  draft: boolean;
}

export function pullJson(b: Bases, repoFull: string, p: PullFacts): Json {
  const template = obj(examplePayload("pull_request", (e) => e.action === "opened").pull_request);
  const api = `${b.apiUrl}/repos/${repoFull}`;
  const n = p.issue.number;
  const url = `${api}/pulls/${n}`;
  const html = `${b.webUrl}/${repoFull}/pull/${n}`;
  const side = (ref: string, sha: string, repo: Json) => {
    const owner = obj(repo.owner);
    return { label: `${String(owner.login)}:${ref}`, ref, sha, user: owner, repo };
  };
  return {
    ...template,
    url,
    id: p.issue.id,
    node_id: nodeId("PullRequest", p.issue.id),
    html_url: html,
    diff_url: `${html}.diff`,
    patch_url: `${html}.patch`,
    issue_url: `${api}/issues/${n}`,
    number: n,
    state: p.issue.state,
    locked: false,
    title: p.issue.title,
    user: p.issue.user,
    body: p.issue.body,
    created_at: iso(p.issue.createdAt),
    updated_at: iso(p.issue.updatedAt),
    closed_at: iso(p.issue.closedAt),
    merged_at: null,
    merge_commit_sha: null,
    assignee: null,
    assignees: [],
    requested_reviewers: [],
    requested_teams: [],
    labels: obj(issueJson(b, repoFull, p.issue)).labels,
    milestone: null,
    draft: p.draft,
    commits_url: `${url}/commits`,
    review_comments_url: `${url}/comments`,
    review_comment_url: `${api}/pulls/comments{/number}`,
    comments_url: `${api}/issues/${n}/comments`,
    statuses_url: `${api}/statuses/${p.headSha}`,
    head: side(p.headRef, p.headSha, p.headRepo ?? p.repo),
    base: side(p.baseRef, p.baseSha, p.repo),
    _links: {
      self: { href: url },
      html: { href: html },
      issue: { href: `${api}/issues/${n}` },
      comments: { href: `${api}/issues/${n}/comments` },
      review_comments: { href: `${url}/comments` },
      review_comment: { href: `${api}/pulls/comments{/number}` },
      commits: { href: `${url}/commits` },
      statuses: { href: `${api}/statuses/${p.headSha}` },
    },
    author_association: p.issue.authorAssociation,
    merged: false,
    mergeable: true,
    rebaseable: true,
    mergeable_state: "clean",
    merged_by: null,
    auto_merge: null,
    comments: p.issue.comments,
  };
}

export interface InstallationFacts {
  id: number;
  appId: number;
  appSlug: string;
  account: Json;
  permissions: Record<string, string>;
  events: string[];
  repositorySelection: "all" | "selected";
  createdAt: Date;
}

export function installationJson(b: Bases, i: InstallationFacts): Json {
  const template = obj(
    examplePayload("installation", (e) => e.action === "created" && e.installation !== undefined)
      .installation,
  );
  return {
    ...template,
    id: i.id,
    // @octokit/openapi describes the account as allOf [simple-user, enterprise] (anyOf is meant):
    // an account that is both passes the checker, and the fields Enterprise adds are harmless.
    account: {
      name: i.account.login,
      slug: String(i.account.login).toLowerCase(),
      created_at: iso(i.createdAt),
      updated_at: iso(i.createdAt),
      ...i.account,
    },
    repository_selection: i.repositorySelection,
    access_tokens_url: `${b.apiUrl}/app/installations/${i.id}/access_tokens`,
    repositories_url: `${b.apiUrl}/installation/repositories`,
    html_url: `${b.webUrl}/settings/installations/${i.id}`,
    app_id: i.appId,
    app_slug: i.appSlug,
    target_id: i.account.id,
    target_type: i.account.type,
    permissions: i.permissions,
    events: i.events,
    created_at: iso(i.createdAt),
    updated_at: iso(i.createdAt),
    single_file_name: null,
    suspended_at: null,
    suspended_by: null,
  };
}
