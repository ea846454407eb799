/**
 * A `cli: codex` agent end to end: the built app as a process, real Postgres, the real Codex
 * CLI in Tether's sandbox against the fake Responses API (the egress proxy holding the key),
 * GitHub stood in for over HTTP. A Claude agent shares the issue to prove the two CLIs' sessions
 * never mix. What every CLI must do (a lost disk, an overflow, a crash, /cancel, control files,
 * the key) is in the table-driven test/helpers/cli-contract-suite.ts; here is what is Codex's own.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { fileStack, OPENAI_KEY as KEY, REPO } from "../helpers/e2e-stack.js";
import { lastUserText, messages, replies } from "../helpers/fake-openai.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
  codex:
    cli: codex
    model: gpt-5.5
`;
const DASH = "e2e-dashboard-token-0123456789abcdef0123456789";

const { db, stack, openai } = await fileStack({
  config: CONFIG,
  env: { TETHER_DASHBOARD_TOKEN: DASH },
  openai: true,
});
let issueCount = 0;

function newIssue(): number {
  issueCount++;
  const issue = stack.gh.addIssue({
    repo: REPO,
    title: `Codex issue ${issueCount}`,
    body: `Issue body ${issueCount}: split() drops the last line.`,
    user: "alice",
  });
  return issue.number as number;
}
const mark = () => openai.responseRequests().length;
const since = (n: number) => openai.responseRequests().slice(n);

/** The key's directory in the runner's session cache (or its pre-store rollouts). */
function storedRollouts(issue: number): string {
  // By the repository's id, as GitHub's stand-in numbers it (src/agent-cli/session-layout.ts).
  const repoId = String((stack.gh.repoJson(REPO) as { id: number }).id);
  return path.join(stack.dataDir, "sessions", "_repos", repoId, `issue-${issue}`, "codex");
}

/** The thread's rollout as the shared store (Postgres) holds it. */
async function storedRollout(threadId: string) {
  const { rows } = await db.pool.query(
    `SELECT raw_bytes, file_name, cli_version, chunks FROM session_transcripts WHERE session_id = $1`,
    [threadId],
  );
  return rows[0] as
    { raw_bytes: string; file_name: string; cli_version: string; chunks: number } | undefined;
}

describe("a cli: codex agent end to end", { timeout: 180_000 }, () => {
  it("fresh turn, then a resumed one: same thread, earlier turns re-sent, the focus guard last", async () => {
    const n = newIssue();
    const m0 = mark();
    openai.script(replies.text("CODEX-FIRST-ANSWER"));
    const first = await stack.finishedTask(await stack.comment(n, "@codex FIRST-REQUEST look"));
    expect(first).toMatchObject({
      status: "succeeded",
      outcome: "success",
      resume_reason: "no_prior_session",
      cli: "codex",
    });
    expect(first.session_id).toMatch(/^[0-9a-f-]{36}$/);
    const posted = stack.taskComments(n, first.id as number);
    expect(String(posted[0]!.body)).toContain("CODEX-FIRST-ANSWER");
    expect(since(m0)[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    const session = await db.pool.query("SELECT cli, state FROM sessions WHERE session_id = $1", [
      first.session_id,
    ]);
    expect(session.rows[0]).toEqual({ cli: "codex", state: "active" });
    // The HOME was deleted; the rollout was kept in the shared store under Codex's own name,
    // with the Codex version that wrote it, and this runner's cache holds the same bytes.
    const stored = await storedRollout(String(first.session_id));
    expect(stored?.file_name).toMatch(
      new RegExp(`^rollout-\\d{4}-\\d{2}-\\d{2}T[\\d-]+-${String(first.session_id)}\\.jsonl$`),
    );
    expect(stored?.cli_version).toMatch(/^0\.\d+\.\d+/);
    const cached = path.join(storedRollouts(n), `${String(first.session_id)}.jsonl`);
    expect(fs.statSync(cached).size).toBe(Number(stored?.raw_bytes));
    expect(Number(first.cost_usd)).toBeGreaterThan(0);

    const m1 = mark();
    openai.script(replies.text("CODEX-SECOND-ANSWER"));
    const second = await stack.finishedTask(
      await stack.comment(n, "@codex SECOND-REQUEST add a test", "bob"),
    );
    expect(second).toMatchObject({
      status: "succeeded",
      resume_decision: "resume",
      resume_reason: "resumed",
      session_id: first.session_id,
      cli: "codex",
    });
    const req = since(m1)[0]!;
    const said = messages(req).map((x) => x.text);
    expect(said.some((t) => t.includes("FIRST-REQUEST"))).toBe(true);
    expect(said.some((t) => t.includes("CODEX-FIRST-ANSWER"))).toBe(true);
    const last = lastUserText(req);
    expect(last).toContain("A NEW comment arrived");
    expect(last).toContain("Focus on THIS comment");
    expect(last).toContain("SECOND-REQUEST");
    expect(last).not.toContain("FIRST-REQUEST");
    // The turn's own tokens, not the thread's running total.
    expect(Number(second.input_tokens) + Number(second.cache_read_tokens)).toBe(
      req.usage!.input_tokens,
    );
    // The save after the resumed turn sent only what Codex appended: one more chunk.
    const after = await storedRollout(String(first.session_id));
    expect(after?.file_name).toBe(stored?.file_name);
    expect(Number(after?.raw_bytes)).toBeGreaterThan(Number(stored?.raw_bytes));
    expect(after?.chunks).toBe(stored!.chunks + 1);
  });

  it("a thread Codex does not know → retired, and the same task runs fresh", async () => {
    const n = newIssue();
    const first = await stack.finishedTask(await stack.comment(n, "@codex start"));
    const threadA = String(first.session_id);
    // This runner's disk holds, from before the shared store (`codex-<id>/` beside the cache),
    // a rollout for thread B that Codex cannot resume as B (it holds A); Postgres holds none.
    const threadB = "01a20d55-0000-7000-8000-00000000beef";
    const nameA = (await storedRollout(threadA))!.file_name;
    const dirB = path.join(storedRollouts(n), `codex-${threadB}`);
    fs.mkdirSync(dirB);
    fs.writeFileSync(path.join(dirB, nameA.replace(threadA, threadB)), "");
    await db.pool.query(
      `INSERT INTO sessions (session_id, repo, repo_id, issue_number, agent, runtime_id, work_dir, model, cli)
       SELECT $2, repo, repo_id, issue_number, agent, runtime_id, work_dir, model, cli FROM sessions WHERE session_id = $1`,
      [threadA, threadB],
    );
    await db.pool.query("UPDATE tasks SET session_id = $2 WHERE id = $1", [first.id, threadB]);

    const second = await stack.finishedTask(await stack.comment(n, "@codex go on"));
    expect(second).toMatchObject({
      status: "succeeded",
      resume_decision: "fresh",
      resume_reason: "resume_rejected",
      retried_fresh: true,
    });
    expect(second.session_id).not.toBe(threadB);
    const b = await db.pool.query("SELECT state FROM sessions WHERE session_id = $1", [threadB]);
    expect(b.rows[0]).toEqual({ state: "retired" });
  });

  it("a 401 ends the turn as auth_failed and the thread says to check OPENAI_API_KEY", async () => {
    const n = newIssue();
    openai.setDefault(replies.unauthorized());
    try {
      const t = await stack.finishedTask(await stack.comment(n, "@codex hi"));
      expect(t).toMatchObject({ status: "failed", outcome: "auth_failed" });
      const body = String(stack.taskComments(n, t.id as number)[0]!.body);
      expect(body).toContain("OPENAI_API_KEY");
      expect(body).not.toContain(KEY);
    } finally {
      openai.reset();
    }
  });

  it("what a Codex agent changes is published as for Claude: its branch holds the file, one draft pull request, linked in the answer", async () => {
    const n = newIssue();
    const mainBefore = await stack.gh.sha(REPO, "main");
    openai.script(
      replies.shell(
        "mkdir -p src && echo 'export const splitLines = (s) => s.split(/\\r?\\n/);' > src/split.js",
      ),
      replies.text("CODEX-FIXED it"),
    );
    const t = await stack.finishedTask(await stack.comment(n, "@codex fix the split"));
    expect(t).toMatchObject({
      cli: "codex",
      status: "succeeded",
      publish_result: "published",
      commits_pushed: 1,
    });
    const branch = `tether/${n}-codex`;
    const sha = (await stack.gh.sha(REPO, branch))!;
    const show = (ref: string) =>
      execFileSync("git", ["-C", stack.gh.barePath(REPO), "show", `${ref}:src/split.js`], {
        encoding: "utf8",
      });
    expect(show(sha)).toBe("export const splitLines = (s) => s.split(/\\r?\\n/);\n");
    expect(await stack.gh.sha(REPO, "main")).toBe(mainBefore);
    const pulls = stack.gh.pulls(REPO).filter((p) => (p.head as { ref: string }).ref === branch);
    expect(pulls).toHaveLength(1);
    expect(pulls[0]).toMatchObject({ draft: true, state: "open" });
    const body = String(stack.taskComments(n, t.id as number).at(-1)!.body);
    expect(body).toContain("CODEX-FIXED it");
    expect(body).toContain(`#${pulls[0]!.number as number}`);
  });

  it("/model runs one resumed turn on the named model (-m), and the next turn on the agent's (#30)", async () => {
    const n = newIssue();
    openai.script(replies.text("CODEX-MODEL-FIRST"));
    const first = await stack.finishedTask(await stack.comment(n, "@codex MODEL-FIRST look"));
    const m1 = mark();
    openai.script(replies.text("CODEX-MODEL-SECOND"));
    const second = await stack.finishedTask(
      await stack.comment(n, "@codex /model gpt-5.1 MODEL-SECOND think harder"),
    );
    expect(second).toMatchObject({
      status: "succeeded",
      resume_decision: "resume",
      session_id: first.session_id,
      requested_model: "gpt-5.1",
    });
    const asked = since(m1);
    expect(asked.length).toBeGreaterThan(0);
    for (const r of asked) expect(r.body?.model).toBe("gpt-5.1");
    expect(messages(asked[0]!).some((x) => x.text.includes("MODEL-FIRST"))).toBe(true);
    expect(String(stack.taskComments(n, second.id as number)[0]!.body)).toContain(
      "`gpt-5.1` (/model, this turn only)",
    );

    const m2 = mark();
    openai.script(replies.text("CODEX-MODEL-THIRD"));
    const third = await stack.finishedTask(await stack.comment(n, "@codex MODEL-THIRD and now"));
    expect(third).toMatchObject({ session_id: first.session_id, requested_model: null });
    const back = since(m2);
    expect(back.length).toBeGreaterThan(0);
    for (const r of back) expect(r.body?.model).toBe("gpt-5.5");
  });

  it("a Claude agent on the same issue keeps its own session; stats split by CLI", async () => {
    const n = newIssue();
    const c = await stack.finishedTask(await stack.comment(n, "@codex hello"));
    const t = await stack.finishedTask(await stack.comment(n, "@tether hello"));
    expect(t).toMatchObject({ cli: "claude", resume_reason: "no_prior_session" });
    expect(t.session_id).not.toBe(c.session_id);
    const stats = await fetch(`${stack.app.url}/api/stats?range=24h`, {
      headers: { authorization: `Bearer ${DASH}` },
    }).then(
      (r) => r.json() as Promise<{ byCli: Record<string, { turns: number; costUsd: number }> }>,
    );
    expect(stats.byCli.codex!.turns).toBeGreaterThan(0);
    expect(stats.byCli.claude!.turns).toBeGreaterThan(0);
    expect(stats.byCli.codex!.costUsd).toBeGreaterThan(0);
  });
});
