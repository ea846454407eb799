/**
 * The prompt cache's lifetime a turn asks for reaches the Messages API (issue 32): the built app,
 * the real Claude CLI in its sandbox against the fake Messages API, which records every request's
 * `cache_control` markers and beta header.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";
import type { FakeRequest } from "../helpers/fake-anthropic.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
  hourly:
    model: claude-sonnet-4-5
    cacheTtl: 1h
  brief:
    model: claude-sonnet-4-5
    cacheTtl: 5m
`;

const db = await createTestDatabase();
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ pool: db.pool, databaseUrl: db.url, config: CONFIG });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const mark = () => stack.api.requests.length;
const since = (from: number) => stack.api.messageRequests().filter((r) => r.n > from);

/** Every distinct cache_control marker the requests carried. */
function markers(reqs: FakeRequest[]): string[] {
  const seen = new Set<string>();
  for (const r of reqs)
    JSON.stringify(r.body, (k, v: unknown) => {
      if (k === "cache_control") seen.add(JSON.stringify(v));
      return v;
    });
  return [...seen];
}
const betas = (reqs: FakeRequest[]) => reqs.map((r) => String(r.headers["anthropic-beta"] ?? ""));

/** One turn: its requests, the task row and the answer's footer. */
async function turn(issue: number, body: string) {
  const from = mark();
  const task = await stack.finishedTask(await stack.comment(issue, body));
  const reqs = since(from);
  const answer = stack.taskComments(issue, task.id as number).at(-1);
  return { task, reqs, footer: String(answer?.body ?? "") };
}

describe("the prompt cache's lifetime on the API request", { timeout: 150_000 }, () => {
  it("auto: a first turn asks for five minutes; a follow-up within the hour asks for an hour", async () => {
    const n = stack.gh.addIssue({ repo: REPO, title: "t", body: "b", user: "alice" })
      .number as number;
    const first = await turn(n, "@tether what does split() do?");
    expect(first.task).toMatchObject({ status: "succeeded", cache_ttl: "5m" });
    expect(first.reqs.length).toBeGreaterThan(0);
    expect(markers(first.reqs)).toEqual(['{"type":"ephemeral"}']);
    expect(betas(first.reqs).some((b) => b.includes("extended-cache-ttl"))).toBe(false);
    expect(first.footer).toContain("cache 5m");

    const next = await turn(n, "@tether and join()?");
    expect(next.task).toMatchObject({
      status: "succeeded",
      resume_reason: "resumed",
      cache_ttl: "1h",
    });
    expect(markers(next.reqs)).toEqual(['{"type":"ephemeral","ttl":"1h"}']);
    expect(betas(next.reqs).every((b) => b.includes("extended-cache-ttl-2025-04-11"))).toBe(true);
    expect(next.footer).toContain("cache 1h");
  });

  it("cacheTtl: 1h asks for an hour from the first turn; 5m never does", async () => {
    const n = stack.gh.addIssue({ repo: REPO, title: "t", body: "b", user: "alice" })
      .number as number;
    const hourly = await turn(n, "@hourly what does split() do?");
    expect(hourly.task).toMatchObject({ status: "succeeded", cache_ttl: "1h" });
    expect(markers(hourly.reqs)).toEqual(['{"type":"ephemeral","ttl":"1h"}']);

    await turn(n, "@brief what does split() do?");
    const brief = await turn(n, "@brief and join()?");
    expect(brief.task).toMatchObject({ resume_reason: "resumed", cache_ttl: "5m" });
    expect(markers(brief.reqs)).toEqual(['{"type":"ephemeral"}']);
    expect(brief.footer).toContain("cache 5m");
  });
});
