/**
 * Issue 38: whose a finished CI run is. GitHub's example payloads (@octokit/webhooks-examples),
 * adapted to a conversation's pull request, and to a fork's run on the same commit and branch
 * name: the webhook drops what can be no conversation's, the processor what is not this one's.
 */
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { suiteBelongs } from "../../src/github/ci-report.js";
import { ciRunRefusal, screenCiRun } from "../../src/intake/ci-ownership.js";
import { readEvent } from "../../src/intake/events.js";
import { screenDelivery } from "../../src/intake/webhook.js";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const require = createRequire(import.meta.url);
const examples = require("@octokit/webhooks-examples") as Array<{ name: string; examples: Json[] }>;

const BRANCH = "tether/7-tether";
const PULL = 12;
/** The examples' repository (Codertocat/Hello-World) and a fork of it. */
const REPO_ID = 186853002;
const FORK_ID = 999001;

function example(event: string): Json {
  return structuredClone(
    examples.find((d) => d.name === event)!.examples.find((x) => x.action === "completed")!,
  );
}

function pullRef(number: number, headRepo = REPO_ID, baseRepo = REPO_ID): Json {
  const repo = (id: number) => ({
    id,
    url: `https://api.github.com/repositories/${id}`,
    name: "Hello-World",
  });
  return {
    url: `https://api.github.com/repos/Codertocat/Hello-World/pulls/${number}`,
    id: 279147437,
    number,
    head: { ref: BRANCH, sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", repo: repo(headRepo) },
    base: { ref: "main", sha: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", repo: repo(baseRepo) },
  };
}

/**
 * A failed run of `event` on the conversation's branch: GitHub's example with the conversation's
 * pull request, or as a fork's pull request makes it (`fork`: head repository the fork, and, as
 * GitHub documents for a head in a fork, no pull request), or with `pulls` given.
 */
function run(
  event: "check_run" | "check_suite" | "workflow_run",
  o: { fork?: boolean; pulls?: Json[]; branch?: string; conclusion?: string } = {},
): Json {
  const e = example(event);
  e.installation = { id: 42, node_id: "x" };
  e.repository.id = REPO_ID;
  const pulls = o.pulls ?? (o.fork ? [] : [pullRef(PULL)]);
  const branch = o.branch ?? BRANCH;
  if (event === "check_run") {
    e.check_run.conclusion = o.conclusion ?? "failure";
    e.check_run.pull_requests = pulls;
    e.check_run.check_suite.head_branch = branch;
    e.check_run.check_suite.pull_requests = pulls;
  } else {
    const r = e[event];
    r.head_branch = branch;
    r.conclusion = o.conclusion ?? "failure";
    r.pull_requests = pulls;
    if (event === "workflow_run")
      r.head_repository = o.fork
        ? { ...e.repository, id: FORK_ID, full_name: "mallory/Hello-World", fork: true }
        : { ...e.repository };
  }
  return e;
}

function ciRun(name: string, payload: Json) {
  const read = readEvent(name, payload);
  if (!read.ok || read.event.kind !== "ci") throw new Error(JSON.stringify(read));
  return read.event.run;
}

const EVENTS = ["check_run", "check_suite", "workflow_run"] as const;

describe("a fork's CI run on the conversation's commit (issue 38)", () => {
  const ROWS: Array<{
    name: string;
    payload: (event: (typeof EVENTS)[number]) => Json;
    /** Refused at the webhook (null: taken there). */
    webhook: RegExp | null;
    /** Refused by the processor for the conversation (branch BRANCH, pull PULL). */
    processor: RegExp | null;
  }> = [
    {
      name: "the repository's own run for the conversation's pull request",
      payload: (e) => run(e),
      webhook: null,
      processor: null,
    },
    {
      name: "a fork's run, same commit, same branch name",
      payload: (e) => run(e, { fork: true }),
      webhook: /fork's|another repository/,
      processor: /fork's|another repository/,
    },
    {
      name: "a run GitHub matched to a pull request whose head is a fork",
      payload: (e) => run(e, { pulls: [pullRef(PULL, FORK_ID)] }),
      webhook: /no pull request of this repository/,
      processor: /no pull request of this repository/,
    },
    {
      name: "a run matched to a pull request into another repository",
      payload: (e) => run(e, { pulls: [pullRef(PULL, REPO_ID, FORK_ID)] }),
      webhook: /no pull request of this repository/,
      processor: /no pull request of this repository/,
    },
    {
      name: "a run for another pull request of this repository on the same branch name",
      payload: (e) => run(e, { pulls: [pullRef(PULL + 1)] }),
      webhook: null,
      processor: /not for the conversation's pull request #12/,
    },
    {
      name: "a run on another conversation's branch",
      payload: (e) => run(e, { branch: "tether/8-tether" }),
      webhook: null,
      processor: /no conversation's/,
    },
    {
      name: "a run that names no pull request",
      payload: (e) => run(e, { pulls: [] }),
      webhook: /no pull request of this repository/,
      processor: /no pull request of this repository/,
    },
  ];
  for (const event of EVENTS)
    it.each(ROWS)(`${event}: $name`, ({ payload, webhook, processor }) => {
      const p = payload(event);
      const s = screenDelivery(event, p);
      expect(s.take ? null : s.reason).toEqual(webhook ? expect.stringMatching(webhook) : null);
      const r = ciRun(event, p);
      expect(screenCiRun(r)).toEqual(webhook ? expect.stringMatching(webhook) : null);
      expect(ciRunRefusal(r, { branch: BRANCH, pullNumber: PULL })).toEqual(
        processor ? expect.stringMatching(processor) : null,
      );
    });

  it("a workflow run that does not say where its commit came from is not taken", () => {
    const p = run("workflow_run");
    delete p.workflow_run.head_repository;
    const s = screenDelivery("workflow_run", p);
    expect(s).toMatchObject({ take: false, reason: expect.stringMatching(/head_repository/) });
  });

  it("the inbox keeps what the processor checks again: head repository and pull requests", () => {
    const s = screenDelivery("workflow_run", run("workflow_run"));
    if (!s.take) throw new Error(s.reason);
    const again = ciRun("workflow_run", JSON.parse(JSON.stringify(s.payload)));
    expect(again.headRepoId).toBe(REPO_ID);
    expect(again.pulls).toEqual([{ number: PULL, headRepoId: REPO_ID, baseRepoId: REPO_ID }]);
  });
});

describe("which check suites on the commit are read", () => {
  const of = { branch: BRANCH, pullNumber: PULL, repoId: REPO_ID };
  const suite = example("check_suite").check_suite as Json;
  it.each([
    {
      name: "the pull request's own suite",
      s: { head_branch: BRANCH, pull_requests: [pullRef(PULL)] },
      read: true,
    },
    {
      name: "a fork's suite (no pull request)",
      s: { head_branch: BRANCH, pull_requests: [] },
      read: false,
    },
    {
      name: "a fork's suite, no branch",
      s: { head_branch: null, pull_requests: null },
      read: false,
    },
    {
      name: "a suite of a pull request headed in a fork",
      s: { head_branch: BRANCH, pull_requests: [pullRef(PULL, FORK_ID)] },
      read: false,
    },
    {
      name: "another pull request's suite",
      s: { head_branch: BRANCH, pull_requests: [pullRef(PULL + 1)] },
      read: false,
    },
    {
      name: "another branch's suite",
      s: { head_branch: "main", pull_requests: [pullRef(PULL)] },
      read: false,
    },
  ])("$name", ({ s, read }) => {
    expect(suiteBelongs({ ...suite, ...s } as never, of)).toBe(read);
  });
});
