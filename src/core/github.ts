/**
 * What Tether reads of and writes to GitHub, as the runner, intake and publishing see it: plain
 * types, so this floor imports nothing.
 */

/**
 * The review comment a reply answers, as intake found it: its author and text, or that it is
 * gone (deleted before the reply was taken in), or out of reach (GitHub refused to show it).
 */
export type ReplyParent =
  { kind: "found"; author: string; body: string } | { kind: "deleted" } | { kind: "unreadable" };

export interface IssueInfo {
  title: string;
  body: string;
  author: string;
  url: string;
  isPullRequest: boolean;
  pullRequest?: {
    headRef: string;
    baseRef: string;
    headSha: string;
    /** `owner/name` of the head's repository; null when it was deleted. */
    headRepo?: string | null;
    /** open or closed. */
    state?: string;
  };
}

export interface IssueComment {
  id: number;
  author: string;
  url: string;
  body: string;
  createdAt: string;
}

/** Where a review comment sits in a pull request's diff, as GitHub's structured fields say. */
export interface ReviewCommentPlace {
  path: string;
  /** `line` (a line or range of the diff) or `file` (the file as a whole). */
  subject: "line" | "file";
  /** The line in the diff's current version; null once the diff has moved on (outdated). */
  line: number | null;
  startLine: number | null;
  originalLine: number | null;
  originalStartLine: number | null;
  side: "LEFT" | "RIGHT" | null;
  commitId: string | null;
  originalCommitId: string | null;
}

/** A comment on a line (or a file) of a pull request's diff. */
export interface ReviewLineComment extends IssueComment {
  place: ReviewCommentPlace;
}

/** A submitted review with something written in its body. */
export interface ReviewSummary extends IssueComment {
  /** `approved`, `changes_requested`, `commented` or `dismissed`, lower case. */
  state: string;
  commitId: string | null;
}

/** A pull request's review discussion, which its conversation (issue comments) leaves out. */
export interface ReviewDiscussion {
  comments: ReviewLineComment[];
  reviews: ReviewSummary[];
  /** Line comments older than the ones read were left unread (that fetch is bounded). */
  truncated: boolean;
}

/** A pull request as publishing needs it. */
export interface PullRef {
  number: number;
  url: string;
  state: "open" | "closed";
  merged: boolean;
  draft: boolean;
}

/** What publishing the agent's changes needs of GitHub, for one repository (REST only). */
export interface RepoWriter {
  /** https://github.com/owner/repo (or the GHE equivalent), for links. */
  webUrl: string;
  /**
   * A token for pushing: this repository alone, `contents: write` (and `workflows: write` when
   * asked), nothing else (src/github/scoped-auth.ts).
   */
  pushToken(o: { workflows: boolean }): Promise<string>;
  /** A branch on GitHub, or null when there is none. */
  branch(name: string): Promise<{ sha: string; protected: boolean } | null>;
  /** The pull request (open or not) whose head is this repository's `branch`, newest first. */
  findPull(branch: string): Promise<PullRef | null>;
  getPull(number: number): Promise<PullRef | null>;
  createPull(o: {
    title: string;
    body: string;
    head: string;
    base: string;
    draft: boolean;
  }): Promise<PullRef>;
  /** Who Tether's commits are by: the app's bot account. */
  identity(): Promise<{ name: string; email: string }>;
  /** `Name <email>` for a `Co-authored-by:` trailer (GitHub's no-reply address). */
  coAuthor(login: string): Promise<string>;
  /**
   * GitHub's Git Data API for this repository, with a token like pushToken's (call pushToken
   * first: its refusals are the ones worth words). Commits made through it are GitHub's, signed.
   */
  gitData(o: { workflows: boolean }): GitDataWriter;
  /**
   * Whether a ruleset requires signed commits on `branch` (`required_signatures` among the
   * branch's rules); null when GitHub would not say.
   */
  requiresSignatures(branch: string): Promise<boolean | null>;
}

/** One entry of a tree made through the API: a blob (or submodule) by id, or a deletion. */
export interface ApiTreeEntry {
  path: string;
  mode: "100644" | "100755" | "120000" | "160000";
  type: "blob" | "commit";
  /** null deletes the path from the base tree. */
  sha: string | null;
}

/** Git Data API writes (REST: /repos/{owner}/{repo}/git/…). */
export interface GitDataWriter {
  createBlob(content: Buffer): Promise<string>;
  createTree(baseTree: string, entries: ApiTreeEntry[]): Promise<string>;
  /** A commit GitHub authors and signs (no author or committer given). */
  createCommit(o: {
    message: string;
    tree: string;
    parents: string[];
  }): Promise<{ sha: string; verified: boolean; reason: string }>;
  /** `created`, or `exists` when the branch is already there (another writer came first). */
  createBranch(branch: string, sha: string): Promise<"created" | "exists">;
  /** Moves the branch, never forced: `stale` when that would not be a fast-forward. */
  moveBranch(branch: string, sha: string): Promise<"moved" | "stale">;
}
