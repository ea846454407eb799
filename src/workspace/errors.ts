/** What can go wrong preparing a workspace, in words fit for the thread (no token, no local path). */

export type WorkspaceErrorKind =
  | "invalid-key"
  | "not-found"
  | "auth"
  | "network"
  | "unavailable"
  | "missing-ref"
  | "not-a-checkout"
  | "timeout"
  | "cancelled"
  | "filesystem"
  | "git-failed";

/**
 * A workspace could not be prepared. `message` is plain words safe to post to the thread (no
 * token, no local paths); `detail` is git's redacted stderr tail, for logs.
 */
export class WorkspaceError extends Error {
  readonly kind: WorkspaceErrorKind;
  readonly repo: string;
  readonly detail: string | undefined;
  readonly exitCode: number | undefined;

  constructor(
    kind: WorkspaceErrorKind,
    repo: string,
    message: string,
    extra: { detail?: string; exitCode?: number } = {},
  ) {
    super(message);
    this.name = "WorkspaceError";
    this.kind = kind;
    this.repo = repo;
    this.detail = extra.detail;
    this.exitCode = extra.exitCode;
  }
}

/** Words for the failed step: "could not clone …" / "could not fetch …". */
export type Step = "clone" | "fetch" | "update" | "maintain" | "read";

export interface FailureContext {
  repo: string;
  /** The git host, for "could not reach …". */
  host: string;
  timeoutMs: number;
  pullRequest?: number | undefined;
}

/** The error for a failed git step, its kind read from git's (C-locale) stderr unless given. */
export function gitFailure(
  ctx: FailureContext,
  step: Step,
  detail: string,
  kind: WorkspaceErrorKind = classifyGitFailure(detail),
  exitCode?: number,
): WorkspaceError {
  const what = `could not ${step} ${ctx.repo}`;
  const messages: Record<WorkspaceErrorKind, string> = {
    "not-found": `${what}: repository not found or the app has no access`,
    auth: `${what}: GitHub refused the app's installation token (expired, revoked, or without access to the repository's contents)`,
    network: `${what}: could not reach ${ctx.host}; check the network and GHE_HOST`,
    unavailable: `${what}: the git server answered with an error; try again later`,
    "missing-ref": `${what}: ${ctx.pullRequest ? `pull request #${ctx.pullRequest}'s head` : "a branch"} is not on the server`,
    timeout: `${what}: git did not finish within ${Math.round(ctx.timeoutMs / 1000)}s`,
    cancelled: `preparing the workspace for ${ctx.repo} was cancelled`,
    "git-failed": `${what}: git failed${exitCode === undefined ? "" : ` (exit ${exitCode})`}; the runner's log has git's message`,
    "invalid-key": `${what}: invalid task key`,
    "not-a-checkout": `${what}: the workspace is not a git checkout`,
    filesystem: `${what}: the runner's workspace directory failed`,
  };
  return new WorkspaceError(kind, ctx.repo, messages[kind], {
    detail: tail(detail),
    ...(exitCode === undefined ? {} : { exitCode }),
  });
}

/** Which failure git's (C-locale) stderr describes. */
export function classifyGitFailure(stderr: string): WorkspaceErrorKind {
  if (/repository '.*' not found|Repository not found|returned error: 404/i.test(stderr)) {
    return "not-found";
  }
  if (
    /Authentication failed|could not read (Username|Password)|returned error: 40[13]|Invalid username or password/i.test(
      stderr,
    )
  ) {
    return "auth";
  }
  if (/couldn't find remote ref/i.test(stderr)) return "missing-ref";
  if (
    /Could not resolve (host|proxy)|Failed to connect|Couldn't connect|Connection (refused|reset|timed out)|Operation timed out|SSL|TLS|Empty reply from server|early EOF/i.test(
      stderr,
    )
  ) {
    return "network";
  }
  if (/returned error: (5\d\d|429)/i.test(stderr)) return "unavailable";
  return "git-failed";
}

export function tail(text: string, max = 2000): string {
  const t = text.trim();
  return t.length > max ? `…${t.slice(-max)}` : t;
}
