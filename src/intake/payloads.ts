import { z } from "zod";

/**
 * The parts of GitHub's webhook payloads intake reads, validated before use: a payload that
 * lacks them is reported and skipped, never thrown through the processor's loop. Parsing also
 * trims: unknown keys are dropped, and the inbox keeps only this (about 1 KB instead of GitHub's
 * 10–15 KB, which made the durable insert ten times slower: bench/intake.ts).
 */

const User = z.object({
  login: z.string().min(1),
  id: z.number().optional(),
  /** "User", "Bot" or "Organization". */
  type: z.string(),
});
export type User = z.infer<typeof User>;

const App = z.object({ id: z.number() }).nullish();

const Repository = z.object({
  id: z.number(),
  name: z.string().min(1),
  full_name: z.string().regex(/^[^/\s]+\/[^/\s]+$/),
  owner: z.object({ login: z.string().min(1) }),
  private: z.boolean().optional(),
  default_branch: z.string().optional(),
});

const Issue = z.object({
  id: z.number(),
  number: z.number().int().positive(),
  html_url: z.string(),
  title: z.string().optional(),
  state: z.string().optional(),
  body: z.string().nullish(),
  user: User,
  created_at: z.string(),
  updated_at: z.string().nullish(),
  /** Present when the "issue" is a pull request. */
  pull_request: z.object({ html_url: z.string().nullish() }).nullish(),
  performed_via_github_app: App,
});

const Comment = z.object({
  id: z.number(),
  html_url: z.string(),
  body: z.string().nullish(),
  user: User,
  author_association: z.string().optional(),
  created_at: z.string(),
  updated_at: z.string().nullish(),
  performed_via_github_app: App,
});

const Installation = z.object({ id: z.number() });
const BodyChange = z.object({ body: z.object({ from: z.string().nullish() }).optional() });

export const IssueCommentEvent = z.object({
  action: z.enum(["created", "edited", "deleted"]),
  issue: Issue,
  comment: Comment,
  repository: Repository,
  installation: Installation,
  sender: User,
  changes: BodyChange.optional(),
});
export type IssueCommentEvent = z.infer<typeof IssueCommentEvent>;

/** The pull request a review or review comment belongs to: its number is the task key's. */
const PullRequest = z.object({
  number: z.number().int().positive(),
  html_url: z.string(),
});

/** A comment on a line (or a range, or the whole file) of a pull request's diff. */
const ReviewComment = Comment.extend({
  path: z.string(),
  /** The line in the diff's current version; null once the diff has moved on (outdated). */
  line: z.number().int().nullish(),
  /** First line of a multi-line comment. */
  start_line: z.number().int().nullish(),
  original_line: z.number().int().nullish(),
  original_start_line: z.number().int().nullish(),
  /** `RIGHT`: the pull request's version; `LEFT`: the base's. */
  side: z.string().nullish(),
  /** `line` or `file` (a comment on the file as a whole). */
  subject_type: z.string().nullish(),
  commit_id: z.string().nullish(),
  original_commit_id: z.string().nullish(),
  /** Set when the comment is a reply in a review thread: the id of the comment it answers. */
  in_reply_to_id: z.number().int().positive().nullish(),
});
export type ReviewComment = z.infer<typeof ReviewComment>;

export const PullRequestReviewCommentEvent = z.object({
  action: z.enum(["created", "edited", "deleted"]),
  pull_request: PullRequest,
  comment: ReviewComment,
  repository: Repository,
  installation: Installation,
  sender: User,
  changes: BodyChange.optional(),
});
export type PullRequestReviewCommentEvent = z.infer<typeof PullRequestReviewCommentEvent>;

/** A submitted review: its body (often empty) is what may address agents. */
const Review = z.object({
  id: z.number(),
  html_url: z.string(),
  body: z.string().nullish(),
  user: User,
  /** `approved`, `changes_requested`, `commented` (lower case in webhooks). */
  state: z.string(),
  submitted_at: z.string().nullish(),
  commit_id: z.string().nullish(),
});
export type Review = z.infer<typeof Review>;

export const PullRequestReviewEvent = z.object({
  action: z.literal("submitted"),
  pull_request: PullRequest,
  review: Review,
  repository: Repository,
  installation: Installation,
  sender: User,
});
export type PullRequestReviewEvent = z.infer<typeof PullRequestReviewEvent>;

export const IssuesEvent = z.object({
  action: z.enum(["opened", "edited"]),
  issue: Issue,
  repository: Repository,
  installation: Installation,
  sender: User,
  changes: BodyChange.optional(),
});
export type IssuesEvent = z.infer<typeof IssuesEvent>;

/** Each event carrying a text that may address agents, and the schema its payload is read with. */
const TEXT_SCHEMAS = {
  issue_comment: IssueCommentEvent,
  pull_request_review_comment: PullRequestReviewCommentEvent,
  pull_request_review: PullRequestReviewEvent,
  issues: IssuesEvent,
} as const;
type TextEventName = keyof typeof TEXT_SCHEMAS;

/** A payload read with its event's schema, tagged with the event's name. */
export type TextEvent = {
  [N in TextEventName]: { name: N; event: z.infer<(typeof TEXT_SCHEMAS)[N]> };
}[TextEventName];

/**
 * Reads a comment, review comment, review or issue event's payload with its event's schema
 * (events.ts turns it into a trigger). `problem` when it lacks what intake reads; undefined for
 * another event.
 */
export function parseTextEvent(
  name: string,
  payload: unknown,
): TextEvent | { problem: z.ZodError } | undefined {
  if (!Object.hasOwn(TEXT_SCHEMAS, name)) return undefined;
  const parsed = TEXT_SCHEMAS[name as TextEventName].safeParse(payload);
  // The schema is the name's, so the pair matches; TypeScript cannot follow that through.
  return parsed.success ? ({ name, event: parsed.data } as TextEvent) : { problem: parsed.error };
}

/**
 * The body before an edit, from the payload's `changes`: GitHub sends `changes.body` only when
 * the edit changed the body, so undefined means it did not.
 */
export function previousBody(changes: z.infer<typeof BodyChange> | undefined): string | undefined {
  return changes?.body === undefined ? undefined : (changes.body.from ?? "");
}

/** `owner/name` lower case: the repo part of every task key. */
export function repoKey(fullName: string): string {
  return fullName.toLowerCase();
}

/** A label, as `labeled` events carry it. */
const Label = z.object({ name: z.string().min(1).max(200) });

/** What a label or an assignment is about: an issue, or a pull request (its own fields). */
const WorkItem = z.object({
  id: z.number(),
  number: z.number().int().positive(),
  html_url: z.string(),
  title: z.string().nullish(),
  body: z.string().nullish(),
  user: User,
  created_at: z.string(),
  updated_at: z.string().nullish(),
  /** Present on an issue that is a pull request. */
  pull_request: z.object({ html_url: z.string().nullish() }).nullish(),
});

/**
 * `issues.labeled` / `issues.assigned`: someone labelled or assigned an issue (GitHub sends the
 * `pull_request` event instead for a pull request). The label, or the assignee, is the trigger.
 */
export const IssueTriggerEvent = z.object({
  action: z.enum(["labeled", "assigned"]),
  issue: WorkItem,
  label: Label.nullish(),
  assignee: User.nullish(),
  repository: Repository,
  installation: Installation,
  sender: User,
});
export type IssueTriggerEvent = z.infer<typeof IssueTriggerEvent>;

/** `pull_request.labeled` / `pull_request.assigned`: the same for a pull request. */
export const PullTriggerEvent = z.object({
  action: z.enum(["labeled", "assigned"]),
  pull_request: WorkItem,
  label: Label.nullish(),
  assignee: User.nullish(),
  repository: Repository,
  installation: Installation,
  sender: User,
});
export type PullTriggerEvent = z.infer<typeof PullTriggerEvent>;

/** A label or an assignment, read alike from either event. */
export interface WorkItemTrigger {
  how: "label" | "assignment";
  /** The label's name, or the assignee's login. */
  value: string;
  item: z.infer<typeof WorkItem>;
  isPullRequest: boolean;
  repository: IssuesEvent["repository"];
  installationId: number;
  sender: User;
}

/** Reads `issues.labeled|assigned` or `pull_request.labeled|assigned`, validated and trimmed. */
export function parseWorkItemEvent(
  name: string,
  payload: unknown,
):
  | { event: IssueTriggerEvent | PullTriggerEvent; trigger: WorkItemTrigger | null }
  | { problem: z.ZodError } {
  const parsed =
    name === "pull_request"
      ? PullTriggerEvent.safeParse(payload)
      : IssueTriggerEvent.safeParse(payload);
  if (!parsed.success) return { problem: parsed.error };
  const e = parsed.data;
  const item = "pull_request" in e ? e.pull_request : e.issue;
  const value = e.action === "labeled" ? e.label?.name : e.assignee?.login;
  return {
    event: e,
    trigger:
      value === undefined
        ? null
        : {
            how: e.action === "labeled" ? "label" : "assignment",
            value,
            item,
            isPullRequest: "pull_request" in e || Boolean(item.pull_request),
            repository: e.repository,
            installationId: e.installation.id,
            sender: e.sender,
          },
  };
}

// ---------------------------------------------------------------------------------------------
// Finished CI runs: `check_run`, `check_suite` and `workflow_run`, action `completed`

/** A pull request a run names: its number, and the repositories of its head and base. */
const RepoRef = z.object({ id: z.number() });
const PullRef = z.object({
  number: z.number().int().positive(),
  head: z.object({ repo: RepoRef }),
  base: z.object({ repo: RepoRef }),
});
const Sha = z.string().regex(/^[0-9a-f]{40}$/, "must be a commit sha");

/** The fields of a check suite or a workflow run intake reads (both carry them alike). */
const Run = z.object({
  id: z.number(),
  head_branch: z.string().nullish(),
  head_sha: Sha,
  status: z.string().nullish(),
  conclusion: z.string().nullish(),
  pull_requests: z.array(PullRef).default([]),
  run_attempt: z.number().optional(),
});

const CheckSuiteEvent = z.object({
  action: z.literal("completed"),
  check_suite: Run,
  repository: Repository,
  installation: Installation,
});
const WorkflowRunEvent = z.object({
  action: z.literal("completed"),
  // A workflow run says where its commit came from: a fork's pull request runs here too.
  workflow_run: Run.extend({ head_repository: RepoRef }),
  repository: Repository,
  installation: Installation,
});
const CheckRunEvent = z.object({
  action: z.literal("completed"),
  check_run: z.object({
    id: z.number(),
    head_sha: Sha,
    status: z.string().nullish(),
    conclusion: z.string().nullish(),
    pull_requests: z.array(PullRef).default([]),
    check_suite: z.object({ head_branch: z.string().nullish() }).nullish(),
  }),
  repository: Repository,
  installation: Installation,
});
type CiEvent =
  | z.infer<typeof CheckRunEvent>
  | z.infer<typeof CheckSuiteEvent>
  | z.infer<typeof WorkflowRunEvent>;

/** A finished CI run, read alike from any of the three events. */
export interface CiRun {
  event: string;
  /** The check run's, suite's or workflow run's id (with its attempt for a rerun). */
  id: string;
  headSha: string;
  headBranch: string | null;
  /**
   * The repository the run's commit came from (a workflow run's `head_repository`); null when
   * the event does not say (a check suite or check run: their pull requests do).
   */
  headRepoId: number | null;
  /** The pull requests GitHub matched to the run (none for a head in a fork). */
  pulls: CiPull[];
  conclusion: string | null;
  repository: IssuesEvent["repository"];
  installationId: number;
}

export interface CiPull {
  number: number;
  headRepoId: number;
  baseRepoId: number;
}

const pullsOf = (prs: Array<z.infer<typeof PullRef>>): CiPull[] =>
  prs.map((p) => ({ number: p.number, headRepoId: p.head.repo.id, baseRepoId: p.base.repo.id }));

/**
 * Reads a `check_run|check_suite|workflow_run.completed` payload, validated and trimmed;
 * `problem` when it cannot, undefined for another event.
 */
export function parseCiEvent(
  name: string,
  payload: unknown,
): { event: CiEvent; run: CiRun } | { problem: z.ZodError } | undefined {
  const common = (e: CiEvent) => ({
    event: name,
    repository: e.repository,
    installationId: e.installation.id,
  });
  switch (name) {
    case "check_run": {
      const p = CheckRunEvent.safeParse(payload);
      if (!p.success) return { problem: p.error };
      const r = p.data.check_run;
      return {
        event: p.data,
        run: {
          ...common(p.data),
          id: String(r.id),
          headSha: r.head_sha,
          headBranch: r.check_suite?.head_branch ?? null,
          headRepoId: null,
          pulls: pullsOf(r.pull_requests),
          conclusion: r.conclusion ?? null,
        },
      };
    }
    case "check_suite":
    case "workflow_run": {
      const p = (name === "check_suite" ? CheckSuiteEvent : WorkflowRunEvent).safeParse(payload);
      if (!p.success) return { problem: p.error };
      const r = "check_suite" in p.data ? p.data.check_suite : p.data.workflow_run;
      return {
        event: p.data,
        run: {
          ...common(p.data),
          id: `${r.id}${r.run_attempt !== undefined ? `.${r.run_attempt}` : ""}`,
          headSha: r.head_sha,
          headBranch: r.head_branch ?? null,
          headRepoId: "workflow_run" in p.data ? p.data.workflow_run.head_repository.id : null,
          pulls: pullsOf(r.pull_requests),
          conclusion: r.conclusion ?? null,
        },
      };
    }
    default:
      return undefined;
  }
}

/**
 * The run as the inbox kept it before it kept the trimmed event: the run itself, flattened.
 * Read only from the inbox, for a delivery an earlier version took in and had not handled yet
 * when it was replaced; such rows are handled within moments of the upgrade.
 */
const LegacyStoredRun = z.object({
  action: z.literal("completed"),
  event: z.enum(["check_run", "check_suite", "workflow_run"]),
  id: z.string(),
  headSha: Sha,
  headBranch: z.string().nullable(),
  // Not kept before issue 38: such a run names no pull request, so it starts nothing.
  headRepoId: z.number().nullable().default(null),
  pulls: z
    .array(z.object({ number: z.number(), headRepoId: z.number(), baseRepoId: z.number() }))
    .default([]),
  conclusion: z.string().nullable(),
  repository: Repository,
  installationId: z.number(),
});

export function parseLegacyStoredRun(payload: unknown): CiRun | undefined {
  const p = LegacyStoredRun.safeParse(payload);
  if (!p.success) return undefined;
  const r = p.data;
  return {
    event: r.event,
    id: r.id,
    headSha: r.headSha,
    headBranch: r.headBranch,
    headRepoId: r.headRepoId,
    pulls: r.pulls,
    conclusion: r.conclusion,
    repository: r.repository,
    installationId: r.installationId,
  };
}
