/**
 * Issue 29: the same CI turn for a `cli: codex` agent. The built app, real Postgres, the real
 * Codex CLI in its sandbox against the fake Responses API, the GitHub stand-in serving the
 * checks and delivering the three events of one failed run.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { fileStack, REPO, SECRET } from "../helpers/e2e-stack.js";
import { lastUserText, replies } from "../helpers/fake-openai.js";

const CONFIG = `
agents:
  codex:
    cli: codex
    model: gpt-5.5
`;

const { db, stack, openai } = await fileStack({
  config: CONFIG,
  openai: true,
});

async function processed(ids: string[]): Promise<string[]> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { rows } = await db.pool.query<{ status: string; outcome: string | null }>(
      `SELECT status, outcome FROM webhook_deliveries WHERE delivery_id = ANY($1)`,
      [ids],
    );
    if (rows.every((r) => r.status !== "pending"))
      return rows.map((r) => `${r.status}: ${r.outcome}`);
    if (Date.now() > deadline) throw new Error(`not processed: ${JSON.stringify(rows)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe("a CI failure on a cli: codex agent's pull request", { timeout: 300_000 }, () => {
  it("makes one resumed Codex turn whose prompt holds the failing check and its log tail; its fix lands on the branch", async () => {
    const issue = stack.gh.addIssue({
      repo: REPO,
      title: "Split",
      body: "Fix split.",
      user: "alice",
    }).number as number;
    openai.script(
      replies.shell(
        "mkdir -p src && echo 'export const split = (s) => s.split(/\\n/);' > src/split.js",
      ),
      replies.text("CODEX-FIRST"),
    );
    const first = await stack.finishedTask(await stack.comment(issue, "@codex fix split"), 150_000);
    expect(first).toMatchObject({ cli: "codex", status: "succeeded", publish_result: "published" });
    const branch = `tether/${issue}-codex`;
    const sha1 = (await stack.gh.sha(REPO, branch))!;

    const run = stack.gh.checks.addRun(REPO, {
      headSha: sha1,
      headBranch: branch,
      checks: [
        {
          name: "node tests",
          conclusion: "failure",
          title: "split keeps CR",
          summary: "expected no \\r in the lines",
          annotations: [{ path: "src/split.js", startLine: 1, message: "CODEX-ANNOTATION" }],
          log: "setup\nFAIL split.test.js CODEX-LOGTAIL\n##[error]Process completed with exit code 1.",
        },
      ],
    });
    openai.script(
      replies.shell("echo 'export const split = (s) => s.split(/\\r?\\n/);' > src/split.js"),
      replies.text("CODEX-CI-FIXED"),
    );
    const m = openai.responseRequests().length;
    const ids: string[] = [];
    for (const ev of stack.gh.checks.events(REPO, run.runId)) {
      const res = await stack.gh.deliver(stack.app.url, ev.name, ev.payload, SECRET);
      expect(res.status).toBeLessThan(300);
      ids.push(res.deliveryId);
    }
    const outcomes = await processed(ids);
    expect(outcomes.filter((o) => /CI created task/.test(o))).toHaveLength(1);

    const deadline = Date.now() + 150_000;
    let task: Record<string, unknown> | undefined;
    for (;;) {
      const { rows } = await db.pool.query(
        `SELECT * FROM tasks WHERE issue_number = $1 AND trigger = 'ci'`,
        [issue],
      );
      expect(rows.length).toBeLessThanOrEqual(1);
      task = rows[0] as Record<string, unknown> | undefined;
      if (task && ["succeeded", "failed", "cancelled"].includes(task.status as string)) break;
      if (Date.now() > deadline)
        throw new Error(
          `CI task not finished: ${JSON.stringify(task)}\n${stack.app.output().slice(-4000)}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(task).toMatchObject({
      cli: "codex",
      status: "succeeded",
      resume_reason: "resumed",
      publish_result: "published",
    });
    const prompt = lastUserText(openai.responseRequests()[m]!);
    expect(prompt).toContain("CI failed on your pull request");
    expect(prompt).toContain("node tests");
    expect(prompt).toContain("src/split.js:1 [failure] CODEX-ANNOTATION");
    expect(prompt).toContain("FAIL split.test.js CODEX-LOGTAIL");
    const sha2 = (await stack.gh.sha(REPO, branch))!;
    expect(sha2).not.toBe(sha1);
    expect(
      execFileSync("git", ["-C", stack.gh.barePath(REPO), "show", `${sha2}:src/split.js`], {
        encoding: "utf8",
      }),
    ).toContain("\\r?\\n");
  });
});
