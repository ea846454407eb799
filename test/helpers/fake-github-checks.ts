import { randomUUID } from "node:crypto";
import { examplePayload, iso, nodeId, type Json } from "./fake-github-shapes.js";

/**
 * Checks and Actions in the GitHub stand-in: check runs on a commit (what a CI run made), their
 * annotations, an Actions job's log behind GitHub's redirect, and the three webhooks GitHub
 * sends when a run finishes (check_run, check_suite, workflow_run, in that order), shaped as
 * GitHub answers them (REST: "check-run", "check-suite", "check-annotation"; webhooks from
 * @octokit/webhooks-examples). A run may come from a fork's pull request (`headRepository`): its
 * suite is on the commit in the repository as GitHub makes it, and, as GitHub documents for a
 * head in a fork, its suite and runs name no pull request; its workflow run's `head_repository`
 * is the fork.
 */

export interface FakeAnnotation {
  path: string;
  startLine: number;
  endLine?: number;
  level?: "notice" | "warning" | "failure";
  title?: string;
  message: string;
}

export interface FakeCheckRun {
  id: number;
  repo: string;
  name: string;
  headSha: string;
  headBranch: string;
  status: "queued" | "in_progress" | "completed";
  conclusion: string | null;
  /** The app that made it: `github-actions` makes it a job whose log can be read. */
  app: string;
  title: string | null;
  summary: string | null;
  text: string | null;
  annotations: FakeAnnotation[];
  /** An Actions job's log. */
  log: string | null;
  suiteId: number;
  runId: number;
  /** The fork (`owner/name`) whose pull request made the run; null: the repository itself. */
  headRepository: string | null;
  /**
   * A fork's run whose suite names the repository's pull requests on a branch of the same name
   * anyway: not what GitHub documents, the worst case a reader must survive.
   */
  forkMatched: boolean;
  startedAt: Date;
  completedAt: Date | null;
}

/** What the checks need of the stand-in. */
export interface ChecksHost {
  webBase(): string;
  apiBase(): string;
  repoJson(repo: string): Json;
  userJson(login: string): Json;
  installationRef(repo: string): { id: number; node_id: string };
  fullName(repo: string): string;
  /** Open pull requests whose head is `branch` in `repo`: number and base. */
  pullsWithHead(repo: string, branch: string): Array<{ number: number; baseRef: string }>;
  /** A fork of `repo` named `fork` (`owner/name`), as a pull request's head.repo shows it. */
  forkJson(repo: string, fork: string): Json;
}

export class FakeChecks {
  readonly runs: FakeCheckRun[] = [];
  private ids = { run: 4_000_000_001, suite: 7_000_000_001, workflow: 9_000_000_001 };
  /** Job log blobs by their one-time path: GitHub's log URLs are pre-signed, without a token. */
  private readonly blobs = new Map<string, string>();

  constructor(private readonly host: ChecksHost) {}

  /**
   * A finished CI run on `headSha`: one suite and one workflow run holding the given check runs
   * (Actions jobs unless `app` says otherwise). Returns them; deliver `events(...)` for webhooks.
   */
  addRun(
    repo: string,
    o: {
      headSha: string;
      headBranch: string;
      /** A fork's pull request made the run (`owner/name`). Default: the repository's own. */
      headRepository?: string;
      /** With `headRepository`: its suite names this repository's pull requests anyway. */
      forkMatched?: boolean;
      checks: Array<
        Partial<
          Omit<
            FakeCheckRun,
            | "id"
            | "repo"
            | "headSha"
            | "headBranch"
            | "suiteId"
            | "runId"
            | "headRepository"
            | "forkMatched"
          >
        > & {
          name: string;
          conclusion: string | null;
        }
      >;
    },
  ): { suiteId: number; runId: number; checks: FakeCheckRun[] } {
    const suiteId = this.ids.suite++;
    const runId = this.ids.workflow++;
    const now = new Date();
    const checks = o.checks.map((c) => {
      const run: FakeCheckRun = {
        repo: repo.toLowerCase(),
        headSha: o.headSha,
        headBranch: o.headBranch,
        status: "completed",
        app: "github-actions",
        title: null,
        summary: null,
        text: null,
        annotations: [],
        log: null,
        startedAt: new Date(now.getTime() - 60_000),
        completedAt: now,
        ...c,
        id: this.ids.run++,
        suiteId,
        runId,
        headRepository: o.headRepository ?? null,
        forkMatched: o.forkMatched ?? false,
      };
      this.runs.push(run);
      return run;
    });
    return { suiteId, runId, checks };
  }

  private conclusionOf(runs: FakeCheckRun[]): string | null {
    if (runs.some((r) => r.status !== "completed")) return null;
    const failing = runs.find((r) => r.conclusion && r.conclusion !== "success");
    if (!failing) return "success";
    return ["timed_out", "action_required"].includes(failing.conclusion!)
      ? failing.conclusion
      : "failure";
  }

  checkRunJson(r: FakeCheckRun): Json {
    const full = this.host.fullName(r.repo);
    const web = this.host.webBase();
    return {
      id: r.id,
      head_sha: r.headSha,
      node_id: nodeId("CheckRun", r.id),
      external_id: String(r.id),
      url: `${this.host.apiBase()}/repos/${full}/check-runs/${r.id}`,
      html_url: `${web}/${full}/actions/runs/${r.runId}/job/${r.id}`,
      details_url: `${web}/${full}/actions/runs/${r.runId}/job/${r.id}`,
      status: r.status,
      conclusion: r.conclusion,
      started_at: iso(r.startedAt),
      completed_at: iso(r.completedAt),
      output: {
        title: r.title,
        summary: r.summary,
        text: r.text,
        annotations_count: r.annotations.length,
        annotations_url: `${this.host.apiBase()}/repos/${full}/check-runs/${r.id}/annotations`,
      },
      name: r.name,
      check_suite: { id: r.suiteId },
      app: this.appJson(r.app),
      pull_requests: this.pullRefs(r),
    };
  }

  /** REST "check-suite": the suite `suiteId` as GitHub answers it, from its check runs. */
  suiteJson(suiteId: number): Json | undefined {
    const runs = this.runs.filter((r) => r.suiteId === suiteId);
    const first = runs[0];
    if (!first) return undefined;
    const example = examplePayload("check_suite", (e) => e.action === "completed")
      .check_suite as Json;
    const full = this.host.fullName(first.repo);
    const done = runs.every((r) => r.status === "completed");
    return {
      id: suiteId,
      node_id: nodeId("CheckSuite", suiteId),
      head_branch: first.headBranch,
      head_sha: first.headSha,
      status: done ? "completed" : "in_progress",
      conclusion: this.conclusionOf(runs),
      url: `${this.host.apiBase()}/repos/${full}/check-suites/${suiteId}`,
      before: null,
      after: first.headSha,
      pull_requests: this.pullRefs(first),
      app: this.appJson(first.app),
      repository: this.host.repoJson(first.repo),
      created_at: iso(first.startedAt),
      updated_at: iso(first.completedAt ?? first.startedAt),
      head_commit: { ...(example.head_commit as Json), id: first.headSha },
      latest_check_runs_count: runs.length,
      check_runs_url: `${this.host.apiBase()}/repos/${full}/check-suites/${suiteId}/check-runs`,
      rerequestable: true,
      runs_rerequestable: true,
    };
  }

  /** `GET /repos/{o}/{r}/commits/{ref}/check-suites`: the suites on a commit sha. */
  listSuitesForRef(repo: string, ref: string): Json[] {
    const ids = new Set(
      this.runs
        .filter((r) => r.repo === repo.toLowerCase() && (r.headSha === ref || r.headBranch === ref))
        .map((r) => r.suiteId),
    );
    return [...ids].map((id) => this.suiteJson(id)!);
  }

  /** `GET /repos/{o}/{r}/check-suites/{id}/check-runs`: a suite's runs (newest first). */
  listForSuite(repo: string, suiteId: number, query: Record<string, string>): Json[] {
    const runs = this.runs
      .filter((r) => r.repo === repo.toLowerCase() && r.suiteId === suiteId)
      .filter((r) => !query.check_name || r.name === query.check_name)
      .filter((r) => !query.status || r.status === query.status)
      .reverse();
    const seen = new Set<string>();
    const latest =
      query.filter === "all" ? runs : runs.filter((r) => !seen.has(r.name) && seen.add(r.name));
    return latest.map((r) => this.checkRunJson(r));
  }

  private appJson(slug: string): Json {
    const id = slug === "github-actions" ? 15368 : 1;
    return {
      id,
      slug,
      node_id: nodeId("App", id),
      client_id: `Iv1.${id}`,
      owner: this.host.userJson("github"),
      name: slug === "github-actions" ? "GitHub Actions" : slug,
      description: "",
      external_url: "https://help.github.com/en/actions",
      html_url: `https://github.com/apps/${slug}`,
      created_at: "2018-07-30T09:30:17Z",
      updated_at: "2024-04-10T20:33:16Z",
      permissions: {},
      events: [],
    };
  }

  /**
   * The pull requests GitHub lists on a run's suite: the repository's own whose head is the
   * run's branch; none for a run whose head is in a fork (GitHub: "When the check suite's
   * head_branch is in a forked repository ... the pull_requests array will be empty").
   */
  private pullRefs(
    r: Pick<FakeCheckRun, "repo" | "headBranch" | "headSha" | "headRepository" | "forkMatched">,
  ): Json[] {
    if (r.headRepository && !r.forkMatched) return [];
    const { repo, headBranch: branch, headSha: sha } = r;
    const repoJson = this.host.repoJson(repo);
    const ref = { id: repoJson.id, url: repoJson.url, name: repoJson.name };
    return this.host.pullsWithHead(repo, branch).map((p) => ({
      url: `${this.host.apiBase()}/repos/${this.host.fullName(repo)}/pulls/${p.number}`,
      id: 100_000 + p.number,
      number: p.number,
      head: { ref: branch, sha, repo: ref },
      base: { ref: p.baseRef, sha, repo: ref },
    }));
  }

  annotationJson(r: FakeCheckRun, a: FakeAnnotation): Json {
    return {
      path: a.path,
      start_line: a.startLine,
      end_line: a.endLine ?? a.startLine,
      start_column: null,
      end_column: null,
      annotation_level: a.level ?? "failure",
      title: a.title ?? null,
      message: a.message,
      raw_details: null,
      blob_href: `${this.host.webBase()}/${this.host.fullName(r.repo)}/blob/${r.headSha}/${a.path}`,
    };
  }

  /** `GET /repos/{o}/{r}/commits/{ref}/check-runs`: the runs on a commit sha (newest first). */
  listForRef(repo: string, ref: string, query: Record<string, string>): Json[] {
    const runs = this.runs
      .filter((r) => r.repo === repo.toLowerCase() && (r.headSha === ref || r.headBranch === ref))
      .filter((r) => !query.check_name || r.name === query.check_name)
      .filter((r) => !query.status || r.status === query.status)
      .reverse();
    // filter=latest (the default): the newest run of each name.
    const seen = new Set<string>();
    const latest =
      query.filter === "all" ? runs : runs.filter((r) => !seen.has(r.name) && seen.add(r.name));
    return latest.map((r) => this.checkRunJson(r));
  }

  find(repo: string, id: number): FakeCheckRun | undefined {
    return this.runs.find((r) => r.repo === repo.toLowerCase() && r.id === id);
  }

  /** The one-time, unauthenticated URL of a job's log (where the logs route redirects). */
  logUrl(r: FakeCheckRun): string | null {
    if (r.app !== "github-actions" || r.log === null) return null;
    const token = randomUUID();
    this.blobs.set(`/_blobs/job-logs/${r.id}/${token}`, r.log);
    return `${this.host.webBase()}/_blobs/job-logs/${r.id}/${token}`;
  }

  /** The log blob at `path`, or undefined. */
  blob(path: string): string | undefined {
    return this.blobs.get(path);
  }

  /**
   * The deliveries GitHub makes when the CI run `runId` finished: each check run's
   * `check_run.completed`, then its suite's `check_suite.completed`, then the workflow run's
   * `workflow_run.completed`, with the stand-in's repository and installation.
   */
  events(repo: string, runId: number): Array<{ name: string; payload: Json }> {
    const runs = this.runs.filter((r) => r.repo === repo.toLowerCase() && r.runId === runId);
    const first = runs[0];
    if (!first) throw new Error(`no CI run ${runId} in ${repo}`);
    const conclusion = this.conclusionOf(runs);
    const full = this.host.fullName(repo);
    const pulls = this.pullRefs(first);
    const finish = (payload: Json): Json => {
      payload.repository = this.host.repoJson(repo);
      payload.sender = this.host.userJson("github");
      payload.installation = this.host.installationRef(repo);
      delete payload.organization;
      delete payload.enterprise;
      return payload;
    };
    const out: Array<{ name: string; payload: Json }> = [];
    for (const r of runs) {
      const p = examplePayload("check_run", (e) => e.action === "completed");
      const example = p.check_run as Json;
      p.check_run = {
        ...example,
        ...this.checkRunJson(r),
        check_suite: {
          ...(example.check_suite as Json),
          id: r.suiteId,
          node_id: nodeId("CheckSuite", r.suiteId),
          head_branch: r.headBranch,
          head_sha: r.headSha,
          status: "completed",
          conclusion,
          url: `${this.host.apiBase()}/repos/${full}/check-suites/${r.suiteId}`,
          pull_requests: pulls,
          app: this.appJson(r.app),
        },
      };
      p.action = "completed";
      out.push({ name: "check_run", payload: finish(p) });
    }
    const suite = examplePayload("check_suite", (e) => e.action === "completed");
    suite.action = "completed";
    suite.check_suite = {
      ...(suite.check_suite as Json),
      id: first.suiteId,
      node_id: nodeId("CheckSuite", first.suiteId),
      head_branch: first.headBranch,
      head_sha: first.headSha,
      status: "completed",
      conclusion,
      url: `${this.host.apiBase()}/repos/${full}/check-suites/${first.suiteId}`,
      pull_requests: pulls,
      app: this.appJson(first.app),
      latest_check_runs_count: runs.length,
      check_runs_url: `${this.host.apiBase()}/repos/${full}/check-suites/${first.suiteId}/check-runs`,
    };
    out.push({ name: "check_suite", payload: finish(suite) });
    const wr = examplePayload("workflow_run", (e) => e.action === "completed");
    wr.action = "completed";
    wr.workflow_run = this.workflowRunJson(repo, runId);
    out.push({ name: "workflow_run", payload: finish(wr) });
    return out;
  }

  /** The workflow run `runId` (REST "workflow-run"; the webhook's is the same object). */
  workflowRunJson(repo: string, runId: number): Json {
    const runs = this.runs.filter((r) => r.repo === repo.toLowerCase() && r.runId === runId);
    const first = runs[0];
    if (!first) throw new Error(`no CI run ${runId} in ${repo}`);
    const full = this.host.fullName(repo);
    const example = examplePayload(
      "workflow_run",
      (e) => e.action === "completed" && Boolean((e.workflow_run as Json).display_title),
    ).workflow_run as Json;
    const done = runs.every((r) => r.status === "completed");
    return {
      ...example,
      id: runId,
      node_id: nodeId("WorkflowRun", runId),
      name: "CI",
      display_title: "CI",
      event: first.headRepository ? "pull_request" : "push",
      head_branch: first.headBranch,
      head_sha: first.headSha,
      status: done ? "completed" : "in_progress",
      conclusion: this.conclusionOf(runs),
      run_attempt: 1,
      check_suite_id: first.suiteId,
      check_suite_node_id: nodeId("CheckSuite", first.suiteId),
      check_suite_url: `${this.host.apiBase()}/repos/${full}/check-suites/${first.suiteId}`,
      head_commit: { ...(example.head_commit as Json), id: first.headSha },
      repository: this.host.repoJson(repo),
      head_repository: first.headRepository
        ? this.host.forkJson(repo, first.headRepository)
        : this.host.repoJson(repo),
      html_url: `${this.host.webBase()}/${full}/actions/runs/${runId}`,
      url: `${this.host.apiBase()}/repos/${full}/actions/runs/${runId}`,
      jobs_url: `${this.host.apiBase()}/repos/${full}/actions/runs/${runId}/jobs`,
      logs_url: `${this.host.apiBase()}/repos/${full}/actions/runs/${runId}/logs`,
      cancel_url: `${this.host.apiBase()}/repos/${full}/actions/runs/${runId}/cancel`,
      rerun_url: `${this.host.apiBase()}/repos/${full}/actions/runs/${runId}/rerun`,
      artifacts_url: `${this.host.apiBase()}/repos/${full}/actions/runs/${runId}/artifacts`,
      created_at: iso(first.startedAt),
      updated_at: iso(first.completedAt ?? first.startedAt),
      pull_requests: this.pullRefs(first),
    };
  }

  /**
   * `GET /repos/{o}/{r}/actions/runs`: the repository's workflow runs (newest first), by
   * `head_sha`, `branch` and `check_suite_id` as GitHub filters them. Only Actions runs.
   */
  listWorkflowRuns(repo: string, query: Record<string, string>): Json[] {
    const ids = [
      ...new Set(
        this.runs
          .filter((r) => r.repo === repo.toLowerCase() && r.app === "github-actions")
          .filter((r) => !query.head_sha || r.headSha === query.head_sha)
          .filter((r) => !query.branch || r.headBranch === query.branch)
          .filter((r) => !query.check_suite_id || r.suiteId === Number(query.check_suite_id))
          .map((r) => r.runId),
      ),
    ].reverse();
    return ids.map((id) => this.workflowRunJson(repo, id));
  }
}
