/**
 * A `cli: opencode` agent end to end, what the contract suite (test/helpers/cli-contract-suite.ts,
 * its opencode row) does not ask of every CLI: the built app as a process, real Postgres, the
 * real opencode CLI in Tether's sandbox against the fake Messages API (the egress proxy holding
 * the key), GitHub stood in for over HTTP. The contract's scenarios (fresh, resumed, the pin and
 * a crash, a rejected resume, overflow, cancel, a lost disk, control files, the key) are there.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";
import { lastUserText, replies, userTexts } from "../helpers/fake-anthropic.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
  oc:
    cli: opencode
    model: claude-sonnet-4-5
`;

const db = await createTestDatabase();
let stack: Stack;
let issueCount = 0;

beforeAll(async () => {
  stack = await startStack({ pool: db.pool, databaseUrl: db.url, config: CONFIG });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

function newIssue(): number {
  issueCount++;
  const issue = stack.gh.addIssue({
    repo: REPO,
    title: `opencode issue ${issueCount}`,
    body: `Issue body ${issueCount}: split() drops the last line.`,
    user: "alice",
  });
  return issue.number as number;
}
const mark = () => stack.api.messageRequests().length;
const since = (n: number) => stack.api.messageRequests().slice(n);

async function stored(sessionId: unknown) {
  const { rows } = await db.pool.query(
    `SELECT raw_bytes, cli_version FROM session_transcripts WHERE session_id = $1`,
    [sessionId],
  );
  return rows[0] as { raw_bytes: string; cli_version: string } | undefined;
}

const TIMEOUT = 240_000;

describe("a cli: opencode agent end to end", { timeout: 600_000 }, () => {
  it("fresh turn, then a resumed one: the key swapped in by the proxy, a cost, the version stored, the earlier turn re-sent, focus guard last, the cached prefix counted", async () => {
    const n = newIssue();
    const m0 = mark();
    stack.api.script(replies.text("OC-FIRST-ANSWER"));
    const first = await stack.finishedTask(
      await stack.comment(n, "@oc FIRST-REQUEST look"),
      TIMEOUT,
    );
    expect(first).toMatchObject({
      status: "succeeded",
      outcome: "success",
      resume_reason: "no_prior_session",
      cli: "opencode",
    });
    expect(first.session_id).toMatch(/^ses_[0-9A-Za-z]{26}$/);
    expect(String(stack.taskComments(n, first.id as number)[0]!.body)).toContain("OC-FIRST-ANSWER");
    expect(since(m0)[0]!.headers["x-api-key"]).toBe("sk-ant-test-e2e-key-000000");
    expect(Number(first.cost_usd)).toBeGreaterThan(0);
    const session = await db.pool.query("SELECT cli, state FROM sessions WHERE session_id = $1", [
      first.session_id,
    ]);
    expect(session.rows[0]).toEqual({ cli: "opencode", state: "active" });
    expect((await stored(first.session_id))?.cli_version).toBe("1.18.33");

    const m1 = mark();
    stack.api.script(replies.text("OC-SECOND-ANSWER"));
    const second = await stack.finishedTask(
      await stack.comment(n, "@oc SECOND-REQUEST add a test", "bob"),
      TIMEOUT,
    );
    expect(second).toMatchObject({
      status: "succeeded",
      cli: "opencode",
      resume_decision: "resume",
      resume_reason: "resumed",
      session_id: first.session_id,
    });
    const req = since(m1)[0]!;
    const said = userTexts(req).join("\n");
    expect(said).toContain("FIRST-REQUEST");
    expect(JSON.stringify(req.body?.messages)).toContain("OC-FIRST-ANSWER");
    const last = lastUserText(req);
    expect(last).toContain("A NEW comment arrived");
    expect(last).toContain("SECOND-REQUEST");
    expect(last).not.toContain("FIRST-REQUEST");
    expect(Number(second.cache_read_tokens)).toBe(req.usage!.cache_read_input_tokens);
    expect(Number(second.cache_read_tokens)).toBeGreaterThan(0);
  });

  it("a session the store holds under an id its database lacks → retired, and the same task runs fresh", async () => {
    const n = newIssue();
    const first = await stack.finishedTask(await stack.comment(n, "@oc start"), TIMEOUT);
    expect(first).toMatchObject({ status: "succeeded", cli: "opencode" });
    const a = String(first.session_id);
    // Session B: the store holds a database for it, but that database is A's (B is not in it).
    const b = "ses_0000000000000000000000beef";
    await db.pool.query(
      `INSERT INTO sessions (session_id, repo, repo_id, issue_number, agent, runtime_id, work_dir, model, cli)
       SELECT $2, repo, repo_id, issue_number, agent, runtime_id, work_dir, model, cli FROM sessions WHERE session_id = $1`,
      [a, b],
    );
    await db.pool.query(
      `INSERT INTO session_transcripts
       SELECT (jsonb_populate_record(NULL::session_transcripts,
                 to_jsonb(t) || jsonb_build_object('session_id', $2::text))).*
         FROM session_transcripts t WHERE session_id = $1`,
      [a, b],
    );
    await db.pool.query(
      `INSERT INTO session_transcript_chunks
       SELECT (jsonb_populate_record(NULL::session_transcript_chunks,
                 to_jsonb(c) || jsonb_build_object('session_id', $2::text))).*
         FROM session_transcript_chunks c WHERE session_id = $1`,
      [a, b],
    );
    await db.pool.query("UPDATE tasks SET session_id = $2 WHERE id = $1", [first.id, b]);

    const second = await stack.finishedTask(await stack.comment(n, "@oc go on"), TIMEOUT);
    expect(second).toMatchObject({
      status: "succeeded",
      resume_decision: "fresh",
      resume_reason: "resume_rejected",
      retried_fresh: true,
    });
    expect(second.session_id).not.toBe(b);
    const s = await db.pool.query("SELECT state FROM sessions WHERE session_id = $1", [b]);
    expect(s.rows[0]).toEqual({ state: "retired" });
  });
});
