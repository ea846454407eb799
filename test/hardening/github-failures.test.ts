/**
 * Drill: GitHub failing under the app. The built app runs against the GitHub stand-in, which is
 * told to answer particular requests with 5xx, primary or secondary rate limits, or to refuse
 * git; the turn is the stand-in CLI's (what is tested here is the app's GitHub side). Each
 * request is still answered, exactly once, after Octokit's retry and throttling plugins waited;
 * a repository that cannot be cloned gets a reply that says so.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { REPO, startStack, type Stack } from "../helpers/e2e-stack.js";
import {
  rateLimited,
  secondaryRateLimited,
  type RecordedRequest,
  type RequestMatcher,
} from "../helpers/fake-github.js";
import { STANDIN_CLAUDE, readStandinLog } from "./helpers/drill.js";

const db = await createTestDatabase();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-gh-drill-"));
const runLog = path.join(tmp, "runs.jsonl");
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    env: {
      TETHER_CLAUDE_PATH: STANDIN_CLAUDE,
      CLAUDE_CODE_STANDIN_LOG: runLog,
      // The stand-in CLI runs in the sandbox; its log directory is the one host path it may write.
      TETHER_SANDBOX_BIND: `${tmp}:rw`,
    },
  });
}, 120_000);
afterAll(async () => {
  await stack?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function newIssue(): number {
  return stack.gh.addIssue({
    repo: REPO,
    title: "Flaky",
    body: "GitHub is having a day.",
    user: "alice",
  }).number as number;
}

/** Requests GitHub answered with `status` since `from` that match. */
function answeredWith(
  from: number,
  status: number,
  match: (r: RecordedRequest) => boolean,
): RecordedRequest[] {
  return stack.gh.requests.filter((r) => r.seq > from && r.status === status && match(r));
}
const answered = (from: number, status: number, match: (r: RecordedRequest) => boolean) =>
  answeredWith(from, status, match).length;

const commentsPath = (n: number) => new RegExp(`/repos/octo/widgets/issues/${n}/comments$`);

/** One comment, answered once with the stand-in's reply. */
async function answeredOnce(n: number, body: string): Promise<Record<string, unknown>> {
  const task = await stack.finishedTask(await stack.comment(n, body), 60_000);
  expect(task, stack.app.output().slice(-3000)).toMatchObject({ status: "succeeded" });
  const posted = stack.taskComments(n, task.id as number);
  expect(posted).toHaveLength(1);
  expect(String(posted[0]!.body)).toMatch(/^stand-in answer/);
  return task;
}

describe("GitHub failing", { timeout: 90_000 }, () => {
  it("5xx on the runner's reads and writes: retried with backoff, answered once", async () => {
    const n = newIssue();
    const from = stack.gh.requests.length;
    // The runner's read: the thread a first turn reads (the issue itself comes with the webhook).
    const get: RequestMatcher = { method: "GET", path: commentsPath(n) };
    const post: RequestMatcher = { method: "POST", path: commentsPath(n) };
    stack.gh.failNext(get, { status: 502 });
    stack.gh.failNext(post, { status: 503 });
    await answeredOnce(n, "@tether survive a bad gateway");
    expect(answered(from, 502, (r) => r.method === "GET" && commentsPath(n).test(r.path))).toBe(1);
    expect(answered(from, 503, (r) => r.method === "POST" && commentsPath(n).test(r.path))).toBe(1);
  });

  it("a primary rate limit on the runner's read: waits for the reset, then answers", async () => {
    const n = newIssue();
    const from = stack.gh.requests.length;
    const read = (r: RecordedRequest) => r.method === "GET" && commentsPath(n).test(r.path);
    stack.gh.failNext({ method: "GET", path: commentsPath(n) }, rateLimited(1));
    await answeredOnce(n, "@tether wait for the quota");
    const limited = answeredWith(from, 403, read);
    const retried = answeredWith(from, 200, read);
    expect(limited).toHaveLength(1);
    // Retried only after the reset, not at once.
    expect(retried[0]!.at - limited[0]!.at).toBeGreaterThanOrEqual(900);
  });

  it("a secondary rate limit on the comment write: waits retry-after, then answers", async () => {
    const n = newIssue();
    const from = stack.gh.requests.length;
    stack.gh.failNext({ method: "POST", path: commentsPath(n) }, secondaryRateLimited(1));
    await answeredOnce(n, "@tether slow down");
    const limited = answeredWith(from, 403, (r) => commentsPath(n).test(r.path));
    const retried = answeredWith(from, 201, (r) => commentsPath(n).test(r.path));
    expect(limited).toHaveLength(1);
    // The same comment, written after retry-after: not given up on, not written twice.
    expect(retried).toHaveLength(1);
    expect(retried[0]!.at - limited[0]!.at).toBeGreaterThanOrEqual(900);
  });

  it("a 429 and a rate-limited permission check during intake: the comment still becomes a task", async () => {
    const n = newIssue();
    const from = stack.gh.requests.length;
    stack.gh.failNext({ path: /\/collaborators\/alice\/permission$/ }, rateLimited(1));
    stack.gh.failNext(
      { method: "GET", path: /\/contents\/\.github/ },
      { status: 429, headers: { "retry-after": "1" } },
    );
    await answeredOnce(n, "@tether intake under pressure");
    expect(answered(from, 403, (r) => /permission$/.test(r.path))).toBe(1);
    expect(answered(from, 429, (r) => /contents/.test(r.path))).toBe(1);
  });

  it("a repository the git server will not serve: a clear failure reply, no run", async () => {
    const n = newIssue();
    stack.gh.failNext({ kind: "git" }, { status: 500, body: "internal error\n" });
    const c = await stack.comment(n, "@tether clone me");
    const task = await stack.finishedTask(c, 60_000);
    expect(task).toMatchObject({ status: "failed", outcome: "failed" });
    expect(task.failure_reason).toBe(
      "could not fetch octo/widgets: the git server answered with an error; try again later",
    );
    const posted = stack.taskComments(n, task.id as number);
    expect(posted).toHaveLength(1);
    expect(String(posted[0]!.body)).toContain(
      "The run failed: could not fetch octo/widgets: the git server answered with an error; try again later. Comment again to retry",
    );
    const url = String(stack.gh.commentJson(c).html_url);
    expect(readStandinLog(runLog).filter((r) => r.requests.includes(url))).toHaveLength(0);
  });

  it("a repository git says does not exist: the reply says so", async () => {
    const n = newIssue();
    stack.gh.failNext({ kind: "git" }, { status: 404, body: "Repository not found.\n" });
    const task = await stack.finishedTask(await stack.comment(n, "@tether clone me too"), 60_000);
    expect(task).toMatchObject({ status: "failed" });
    expect(String(stack.taskComments(n, task.id as number)[0]!.body)).toContain(
      "could not fetch octo/widgets: repository not found or the app has no access",
    );
  });
});
