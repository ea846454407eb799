/**
 * What the checks on a commit say, read by Tether (never the agent) with the installation's
 * read-only checks and actions permissions: the check runs of the commit's suites that belong to
 * the conversation's pull request, and for each failing one its output, its annotations and, for
 * a GitHub Actions job, the tail of its log. A suite on the same commit made for another pull
 * request (a fork's, which can push the very commit: issue 38) is not read. All of it
 * is written by others (a test's output can say anything), so it is capped here and reaches the
 * prompt only as data (src/runner/render/prompts.ts, the trigger context).
 */
import type { TriggerContextItem } from "../core/task.js";
import type { GitHub } from "./types.js";

/**
 * Conclusions that make a check run failing: what a fix is wanted for. Not `action_required`:
 * such a run waits for someone (an approval, a fork's first run); nothing in the code can fix it.
 */
export const FAILING_CONCLUSIONS: ReadonlySet<string> = new Set([
  "failure",
  "timed_out",
  "startup_failure",
]);

/** Caps: the prompt's own caps apply on top (src/runner/render/prompts.ts LIMITS). */
export const CI_CAPS = {
  /** Failing check runs described; the rest are named in one line. */
  checks: 10,
  /** Annotations read per check run (GitHub returns at most 50 per page). */
  annotations: 50,
  /** A check run's output summary and text, each. */
  output: 8 * 1024,
  /** The tail of a job's log: at most this many lines … */
  logLines: 200,
  /** … and bytes. */
  logBytes: 16 * 1024,
  /** A log longer than this is not read to its end: the tail is then unknown. */
  logReadBytes: 64 * 1024 * 1024,
  /** Check suites of the pull request read on one commit (one request each). */
  suites: 30,
};

export interface CheckRunSummary {
  id: number;
  name: string;
  status: string;
  conclusion: string | null;
  url: string;
  /** The app that made it (`github-actions` for an Actions job, whose id is the job's). */
  app: string;
  title: string;
  summary: string;
  text: string;
  annotationsCount: number;
}

export interface ChecksState {
  runs: CheckRunSummary[];
  failing: CheckRunSummary[];
  /** Runs not completed yet. */
  pending: number;
  /** Runs that wait for someone (`action_required`). */
  waiting: number;
}

/** Whose checks are read: the conversation's pull request, in this repository, on `sha`. */
export interface ChecksOf {
  owner: string;
  repo: string;
  sha: string;
  /** The conversation's branch. */
  branch: string;
  pullNumber: number;
  /** The repository's id: the pull request's head and base are both in it. */
  repoId: number;
}

/** A check suite as GitHub lists it, the fields that say whose it is. */
interface SuiteFacts {
  head_branch: string | null;
  pull_requests: Array<{
    number: number;
    head: { repo: { id: number } };
    base: { repo: { id: number } };
  }> | null;
}

/**
 * Pure: the suite is the conversation's pull request's: on its branch, and GitHub matched it to
 * that pull request with head and base in this repository (GitHub names no pull request on a
 * suite whose head is in a fork).
 */
export function suiteBelongs(
  s: SuiteFacts,
  o: Pick<ChecksOf, "branch" | "pullNumber" | "repoId">,
): boolean {
  return (
    s.head_branch === o.branch &&
    (s.pull_requests ?? []).some(
      (p) =>
        p.number === o.pullNumber && p.head.repo.id === o.repoId && p.base.repo.id === o.repoId,
    )
  );
}

/**
 * The check runs of the pull request's suites on `sha` (every page), the newest of each name,
 * and which of them fail.
 */
export async function readChecks(octokit: GitHub, o: ChecksOf): Promise<ChecksState> {
  const suites: number[] = [];
  const actionsSuites = new Set<number>();
  for await (const page of octokit.paginate.iterator(octokit.rest.checks.listSuitesForRef, {
    owner: o.owner,
    repo: o.repo,
    ref: o.sha,
    per_page: 100,
  })) {
    for (const s of page.data)
      if (suiteBelongs(s, o)) {
        suites.push(s.id);
        if (s.app?.slug === "github-actions") actionsSuites.add(s.id);
      }
    if (suites.length >= CI_CAPS.suites) break;
  }
  // An Actions suite does not say where its commit came from; its workflow run does. A suite
  // GitHub made for a fork's workflow run is dropped even if it looked like the pull request's
  // (GitHub documents such a suite as naming no pull request; this does not rely on it).
  if (actionsSuites.size) {
    const own = await ownActionsSuites(octokit, o);
    for (const id of actionsSuites) if (!own.has(id)) suites.splice(suites.indexOf(id), 1);
  }
  // The newest run of each name across the suites, as `filter=latest` on the commit would give
  // if only these suites were on it (a rerun in a new suite supersedes the old one's run).
  const newest = new Map<string, CheckRunSummary>();
  for (const suite of suites.slice(0, CI_CAPS.suites)) {
    let read = 0;
    for await (const page of octokit.paginate.iterator(octokit.rest.checks.listForSuite, {
      owner: o.owner,
      repo: o.repo,
      check_suite_id: suite,
      filter: "latest",
      per_page: 100,
    })) {
      for (const r of page.data) {
        const seen = newest.get(r.name);
        if (!seen || seen.id < r.id) newest.set(r.name, summary(r));
      }
      read += page.data.length;
      if (read >= 1000) break;
    }
  }
  const runs = [...newest.values()].sort((a, b) => a.id - b.id);
  return {
    runs,
    failing: runs.filter((r) => r.conclusion !== null && FAILING_CONCLUSIONS.has(r.conclusion)),
    pending: runs.filter((r) => r.status !== "completed").length,
    waiting: runs.filter((r) => r.conclusion === "action_required").length,
  };
}

/** The check suites of the Actions workflow runs on `sha` whose head repository is this one. */
async function ownActionsSuites(octokit: GitHub, o: ChecksOf): Promise<Set<number>> {
  const own = new Set<number>();
  let read = 0;
  for await (const page of octokit.paginate.iterator(octokit.rest.actions.listWorkflowRunsForRepo, {
    owner: o.owner,
    repo: o.repo,
    head_sha: o.sha,
    per_page: 100,
  })) {
    for (const r of page.data)
      if (r.head_repository.id === o.repoId && r.check_suite_id !== undefined)
        own.add(r.check_suite_id);
    read += page.data.length;
    if (read >= 1000) break;
  }
  return own;
}

type CheckRunJson = Awaited<
  ReturnType<GitHub["rest"]["checks"]["listForSuite"]>
>["data"]["check_runs"][number];

function summary(r: CheckRunJson): CheckRunSummary {
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    conclusion: r.conclusion ?? null,
    url: r.html_url ?? r.details_url ?? "",
    app: r.app?.slug ?? "unknown",
    title: r.output.title ?? "",
    summary: r.output.summary ?? "",
    text: r.output.text ?? "",
    annotationsCount: r.output.annotations_count,
  };
}

/**
 * The context items a CI turn brings: for each failing check run (at most CI_CAPS.checks), its
 * output and annotations, then its job's log tail when it is an Actions job. A log that cannot be
 * read (expired, gone, no permission) is said to be missing rather than failing the turn.
 */
export async function ciContext(
  octokit: GitHub,
  o: { owner: string; repo: string; sha: string },
  failing: readonly CheckRunSummary[],
): Promise<TriggerContextItem[]> {
  const items: TriggerContextItem[] = [];
  const short = o.sha.slice(0, 7);
  for (const run of failing.slice(0, CI_CAPS.checks)) {
    const annotations = run.annotationsCount > 0 ? await readAnnotations(octokit, o, run.id) : [];
    items.push({
      kind: "check-run",
      author: run.app,
      url: run.url,
      body: checkRunBody(run, annotations),
      location: `[Check \`${oneLine(run.name)}\` on ${short}: ${run.conclusion ?? run.status}]`,
    });
    if (run.app === "github-actions") {
      const tail = await readJobLogTail(octokit, { ...o, jobId: run.id });
      items.push({
        kind: "job-log",
        author: run.app,
        url: run.url,
        body: tail ?? "(the job's log could not be read)",
        location: `[The last lines of the log of job \`${oneLine(run.name)}\` on ${short}]`,
      });
    }
  }
  const more = failing.length - CI_CAPS.checks;
  if (more > 0)
    items.push({
      kind: "check-run",
      author: "tether",
      url: "",
      body: failing
        .slice(CI_CAPS.checks)
        .map((r) => `- ${oneLine(r.name)}: ${r.conclusion ?? r.status}`)
        .join("\n"),
      location: `[${more} more failing check${more === 1 ? "" : "s"}, not shown in full]`,
    });
  return items;
}

export interface Annotation {
  path: string;
  line: number | null;
  level: string;
  title: string;
  message: string;
}

async function readAnnotations(
  octokit: GitHub,
  o: { owner: string; repo: string },
  checkRunId: number,
): Promise<Annotation[]> {
  const { data } = await octokit.rest.checks.listAnnotations({
    owner: o.owner,
    repo: o.repo,
    check_run_id: checkRunId,
    per_page: CI_CAPS.annotations,
  });
  return data.slice(0, CI_CAPS.annotations).map((a) => ({
    path: a.path,
    line: a.start_line ?? null,
    level: a.annotation_level ?? "notice",
    title: a.title ?? "",
    message: a.message ?? "",
  }));
}

/** Pure: a failing check run's output and annotations as one text. */
export function checkRunBody(run: CheckRunSummary, annotations: readonly Annotation[]): string {
  const parts: string[] = [];
  if (run.title) parts.push(`Title: ${oneLine(run.title)}`);
  if (run.summary) parts.push(`Summary:\n${clipEnd(run.summary, CI_CAPS.output)}`);
  if (run.text) parts.push(`Details:\n${clipEnd(run.text, CI_CAPS.output)}`);
  if (annotations.length) {
    parts.push(
      `Annotations (${annotations.length}${run.annotationsCount > annotations.length ? ` of ${run.annotationsCount}` : ""}):`,
      ...annotations.map(
        (a) =>
          `- ${oneLine(a.path)}${a.line !== null ? `:${a.line}` : ""} [${oneLine(a.level)}] ${a.title ? `${oneLine(a.title)}: ` : ""}${clipEnd(a.message, 1024)}`,
      ),
    );
  }
  return parts.length ? parts.join("\n\n") : "(no output)";
}

/**
 * The tail of an Actions job's log: GitHub answers a redirect to the log file, which is read as
 * a stream keeping only its end, so a huge log costs a bounded amount of memory. Null when the
 * log cannot be had (it expired, or the job is not an Actions job after all).
 */
export async function readJobLogTail(
  octokit: GitHub,
  o: { owner: string; repo: string; jobId: number },
): Promise<string | null> {
  let body: unknown;
  try {
    const res = await octokit.rest.actions.downloadJobLogsForWorkflowRun({
      owner: o.owner,
      repo: o.repo,
      job_id: o.jobId,
      request: { parseSuccessResponseBody: false },
    });
    body = res.data;
  } catch {
    return null;
  }
  const keep = CI_CAPS.logBytes * 4; // room for the line cut and multi-byte characters
  let tail = Buffer.alloc(0);
  let read = 0;
  if (body && typeof (body as ReadableStream).getReader === "function") {
    const reader = (body as ReadableStream<Uint8Array>).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        read += value.length;
        tail = Buffer.concat([tail, Buffer.from(value)]);
        if (tail.length > keep) tail = tail.subarray(tail.length - keep);
        if (read > CI_CAPS.logReadBytes) {
          await reader.cancel();
          return null;
        }
      }
    } catch {
      return null;
    }
  } else if (typeof body === "string") tail = Buffer.from(body.slice(-keep));
  else return null;
  return logTail(tail.toString("utf8"));
}

/** Pure: the last lines of a log, without terminal colours or GitHub's timestamps, capped. */
export function logTail(log: string): string {
  const lines = log
    .replace(/\r\n?/g, "\n")
    // eslint-disable-next-line no-control-regex
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "")
    // eslint-disable-next-line no-control-regex
    .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "")
    .split("\n")
    .map((l) => l.replace(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?/, ""));
  while (lines.length && lines[lines.length - 1] === "") lines.pop();
  let out = lines.slice(-CI_CAPS.logLines);
  while (out.length > 1 && Buffer.byteLength(out.join("\n")) > CI_CAPS.logBytes) out = out.slice(1);
  const text = out.join("\n");
  return Buffer.byteLength(text) > CI_CAPS.logBytes
    ? text.slice(-CI_CAPS.logBytes)
    : text || "(empty log)";
}

function oneLine(s: string): string {
  return s.replace(/[\r\n]+/g, " ").slice(0, 200);
}

function clipEnd(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}\n… (cut at ${max} characters)` : s;
}
