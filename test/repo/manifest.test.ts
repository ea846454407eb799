/**
 * app.yml against the code: the events GitHub sends are exactly the ones the app subscribes to,
 * and the permissions are exactly what the code's GitHub calls need, no more.
 */
import fs from "node:fs";
import path from "node:path";
import type { ApplicationFunctionOptions, Probot } from "probot";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { tetherApp } from "../../src/app.js";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { pushPermissions } from "../../src/github/scoped-auth.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

interface Manifest {
  name: string;
  description: string;
  url: string;
  public?: boolean;
  default_events: string[];
  default_permissions: Record<string, "read" | "write">;
  hook_attributes?: unknown;
}

const manifest = parseYaml(fs.readFileSync(path.join(ROOT, "app.yml"), "utf8")) as Manifest;

/** The webhook events `tetherApp` subscribes to, recorded from its own `app.on` calls. */
function subscribedEvents(): string[] {
  const events: string[] = [];
  const app = {
    on: (names: string | string[]) => events.push(...[names].flat()),
    onAny: () => {
      throw new Error("tetherApp subscribes to every event: app.yml cannot list them");
    },
    log: createLogger("silent"),
  } as unknown as Probot;
  // Never connected: registering routes and handlers must not touch the database.
  const pool = new pg.Pool({ connectionString: "postgres://nobody@127.0.0.1:1/none" });
  const deps = { env: loadEnv({}), log: createLogger("silent"), pool };
  void tetherApp(deps)(app, { addHandler: () => {} } as unknown as ApplicationFunctionOptions);
  void pool.end();
  return events;
}

type Level = "read" | "write";
type Needs = Partial<Record<string, Level>>;

/**
 * What each GitHub call in src/ needs. Comments and reactions on a pull request's thread go
 * through the issues API, but GitHub checks the pull requests permission for them, so those
 * calls need both. A call missing from this table fails the test: decide what it needs first.
 */
const REST_NEEDS: Record<string, Needs> = {
  "issues.get": { issues: "read", pull_requests: "read" },
  "issues.listComments": { issues: "read", pull_requests: "read" },
  "issues.createComment": { issues: "write", pull_requests: "write" },
  // A `title:` schedule's first tick opens its issue (src/intake/scheduler.ts).
  "issues.create": { issues: "write" },
  "issues.updateComment": { issues: "write", pull_requests: "write" },
  "reactions.createForIssueComment": { issues: "write", pull_requests: "write" },
  "reactions.createForIssue": { issues: "write", pull_requests: "write" },
  "reactions.createForPullRequestReviewComment": { pull_requests: "write" },
  "pulls.get": { pull_requests: "read" },
  // A fresh turn on a pull request reads its review discussion.
  "pulls.listReviewComments": { pull_requests: "read" },
  "pulls.listReviews": { pull_requests: "read" },
  // A review that starts a turn brings its line comments (#29).
  "pulls.listCommentsForReview": { pull_requests: "read" },
  // A reply in a review thread carries the comment it answers.
  "pulls.getReviewComment": { pull_requests: "read" },
  // A CI failure's turn (#29): the failing checks, their annotations, a job's log tail; only
  // the check suites of the conversation's pull request, suite by suite (#38).
  "checks.listSuitesForRef": { checks: "read" },
  "checks.listForSuite": { checks: "read" },
  "checks.listAnnotations": { checks: "read" },
  "actions.downloadJobLogsForWorkflowRun": { actions: "read" },
  // Where an Actions suite's commit came from: its workflow run's head repository (#38).
  "actions.listWorkflowRunsForRepo": { actions: "read" },
  "repos.getCollaboratorPermissionLevel": { metadata: "read" },
  // Probot's config plugin: GET /repos/{owner}/{repo}/contents/.github/tether.yml.
  "config.get": { contents: "read" },
  // Publishing: is the branch protected, find or open the conversation's pull request.
  "repos.getBranch": { contents: "read" },
  // publish.signedCommits: the turn's commit made through the Git Data API, with the push token.
  "git.createBlob": { contents: "write" },
  "git.createTree": { contents: "write" },
  "git.createCommit": { contents: "write" },
  "git.createRef": { contents: "write" },
  "git.updateRef": { contents: "write" },
  // Whether a ruleset requires signed commits on the branch: metadata, as every token has.
  "repos.getBranchRules": { metadata: "read" },
  "pulls.list": { pull_requests: "read" },
  "pulls.create": { pull_requests: "write" },
  "pulls.listFiles": { pull_requests: "read" },
  "pulls.createReview": { pull_requests: "write" },
  // Public profiles: the no-reply addresses of the app's bot and of Co-authored-by trailers.
  "users.getByUsername": {},
  // With the app's own JWT, no installation permission: its slug.
  "apps.getAuthenticated": {},
  // With the app's own JWT, no installation permission: the app webhook's delivery log, read
  // and redelivered by the redelivery sweeper.
  "apps.listWebhookDeliveries": {},
  "apps.redeliverWebhookDelivery": {},
  // The scheduler's hourly listing (src/intake/scheduler.ts): the installations with the app's
  // JWT, then each installation's repositories with its token (metadata, as every token has).
  "apps.listInstallations": {},
  "apps.listReposAccessibleToInstallation": { metadata: "read" },
};
/** git subcommands the workspace runs; clone and fetch authenticate with the installation token. */
const GIT_NEEDS: Record<string, Needs> = {
  clone: { contents: "read" },
  fetch: { contents: "read" },
  push: { contents: "write" },
};
const ALWAYS: Needs = { metadata: "read" };

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => path.join(dir, f));
}

/** `octokit.rest.<scope>.<method>` and `octokit.config.get` calls, and git subcommands, in src/. */
function githubCallsInSource(): { rest: Set<string>; git: Set<string> } {
  const rest = new Set<string>();
  const git = new Set<string>();
  for (const file of sourceFiles(path.join(ROOT, "src"))) {
    const text = fs.readFileSync(file, "utf8");
    for (const m of text.matchAll(/\boctokit\.rest\.(\w+)\.(\w+)/g)) rest.add(`${m[1]}.${m[2]}`);
    for (const m of text.matchAll(/\boctokit\.config\.get\b/g)) rest.add(m[0].slice(8));
    for (const m of text.matchAll(/\bgit\(\s*\[\s*"([\w-]+)"/g)) git.add(m[1]!);
  }
  return { rest, git };
}

function merge(into: Needs, more: Needs): void {
  for (const [perm, level] of Object.entries(more)) {
    if (into[perm] !== "write") into[perm] = level;
  }
}

describe("app.yml, the GitHub App manifest", () => {
  it("names and describes the app, and is private", () => {
    expect(manifest.name).toMatch(/\S/);
    expect(manifest.description.length).toBeGreaterThan(20);
    expect(manifest.url).toMatch(/^https:\/\//);
    expect(manifest.public).toBe(false);
  });

  it("leaves the webhook URL to Probot's setup (a value here would replace the smee channel)", () => {
    expect(manifest.hook_attributes).toBeUndefined();
  });

  it("subscribes to exactly the events the app handles", () => {
    const handled = subscribedEvents();
    expect(handled.length).toBeGreaterThan(0);
    const eventNames = new Set(handled.map((e) => e.split(".")[0]));
    expect(new Set(manifest.default_events)).toEqual(eventNames);
  });

  it("asks for exactly the permissions the code's GitHub calls need", () => {
    const { rest, git } = githubCallsInSource();
    const unknownRest = [...rest].filter((c) => !(c in REST_NEEDS));
    expect(unknownRest, "GitHub calls with no entry in REST_NEEDS").toEqual([]);
    const unusedRest = Object.keys(REST_NEEDS).filter((c) => !rest.has(c));
    expect(unusedRest, "REST_NEEDS entries no code calls any more").toEqual([]);
    // The workspace runs git; its network subcommands decide the contents permission.
    expect(git.has("clone")).toBe(true);
    expect(git.has("fetch")).toBe(true);

    const needed: Needs = { ...ALWAYS };
    for (const call of rest) merge(needed, REST_NEEDS[call]!);
    for (const sub of git) if (GIT_NEEDS[sub]) merge(needed, GIT_NEEDS[sub]);
    expect(manifest.default_permissions).toEqual(needed);
  });

  it("writes code only by pushing, with tokens minted for one repository and contents: write", () => {
    expect(githubCallsInSource().git.has("push")).toBe(true);
    expect(manifest.default_permissions.contents).toBe("write");
    // Workflows are not asked for: a repository that wants them published grants it itself.
    expect(manifest.default_permissions.workflows).toBeUndefined();
    expect(pushPermissions(false)).toEqual({ contents: "write", metadata: "read" });
    expect(pushPermissions(true)).toEqual({
      contents: "write",
      workflows: "write",
      metadata: "read",
    });
  });
});
