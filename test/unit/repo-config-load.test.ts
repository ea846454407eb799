import { AGENT_CLIS } from "../../src/cli-registry.js";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  loadRepoConfig,
  MAX_CONFIG_BYTES,
  mergeConfig,
  type LoadedConfig,
} from "../../src/config/load-repo-config.js";
import { DEFAULT_CONFIG, defaultConfig } from "../../src/config/repo-config.js";
import { isRetryable } from "../../src/github/errors.js";
import { TestOctokit } from "../helpers/probot.js";
import { github, useNock } from "../helpers/intake-github.js";

useNock();

const OWNER = "octo";
const REPO = "widgets";
const octokit = () => new TestOctokit({ auth: "ghs_test" });
const load = () => loadRepoConfig(octokit(), { owner: OWNER, repo: REPO }, { clis: AGENT_CLIS });
const gh = () => github(OWNER, REPO);
const problemsOf = (r: LoadedConfig) =>
  r.ok ? [] : r.problems.map((p) => `${p.path}: ${p.message}`);

describe("loadRepoConfig", () => {
  it("uses the repository's .github/tether.yml", async () => {
    gh().config("agents:\n  tether:\n    maxTurns: 7\n");
    const r = await load();
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.config.agents.tether?.maxTurns).toBe(7);
      expect(r.files).toEqual(["octo/widgets:.github/tether.yml"]);
    }
  });

  it("falls back to the organisation's .github repository", async () => {
    gh().api.get(`/repos/${OWNER}/${REPO}/contents/.github%2Ftether.yml`).reply(404);
    gh().config("access:\n  minPermission: triage\n", `/repos/${OWNER}/.github`);
    const r = await load();
    expect(r.ok && r.config.access.minPermission).toBe("triage");
  });

  it("gives the defaults when neither exists", async () => {
    gh().noConfig();
    const r = await load();
    expect(r.ok && r.config.access.minPermission).toBe("write");
  });

  it("follows _extends, merging mappings and letting the repository's lists replace the base's", async () => {
    gh().config(
      "_extends: shared-config\nagents:\n  tether:\n    maxTurns: 5\naccess:\n  allowUsers: [bob]\n",
    );
    gh().config(
      "agents:\n  tether:\n    model: claude-opus-4-1\n  reviewer: {}\naccess:\n  allowUsers: [alice]\n  minPermission: maintain\n",
      `/repos/${OWNER}/shared-config`,
    );
    const r = await load();
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.agents.tether).toMatchObject({ maxTurns: 5, model: "claude-opus-4-1" });
    expect(Object.keys(r.config.agents).sort()).toEqual(["reviewer", "tether"]);
    expect(r.config.access).toMatchObject({ allowUsers: ["bob"], minPermission: "maintain" });
  });

  it("reports _extends in a circle as a problem", async () => {
    gh().config("_extends: a\n");
    gh().config("_extends: b\n", `/repos/${OWNER}/a`);
    gh().config("_extends: a\n", `/repos/${OWNER}/b`);
    expect(problemsOf(await load())).toEqual([
      expect.stringMatching(/^\(file\): Recursion detected/),
    ]);
  });

  it("reports YAML it cannot parse, with the parser's reason", async () => {
    gh().config("agents:\n  tether: [unclosed\n");
    expect(problemsOf(await load())).toEqual([
      expect.stringMatching(
        /^\(file\): Configuration could not be parsed from .*\(invalid YAML\): .+/,
      ),
    ]);
  });

  it("refuses a YAML alias bomb quickly instead of expanding it", async () => {
    const lines = ["a: &a [x, x, x, x, x, x, x, x, x]"];
    for (let i = 0; i < 9; i++)
      lines.push(
        `b${i}: &b${i} [${Array(9)
          .fill(i ? `*b${i - 1}` : "*a")
          .join(", ")}]`,
      );
    gh().config(`${lines.join("\n")}\n`);
    const started = Date.now();
    expect(problemsOf(await load())).toEqual([expect.stringMatching(/Excessive alias count/)]);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("refuses nesting deeper than the schema could use", async () => {
    let yaml = "agents:\n  tether:\n    appendSystemPrompt:\n";
    for (let i = 0; i < 12; i++) yaml += `${"  ".repeat(3 + i)}k${i}:\n`;
    gh().config(`${yaml}${"  ".repeat(15)}leaf: 1\n`);
    expect(problemsOf(await load())).toEqual([
      expect.stringMatching(/nests deeper than 10 levels/),
    ]);
  });

  it("refuses a file over the size limit before parsing it", async () => {
    gh().config(`# ${"x".repeat(MAX_CONFIG_BYTES)}\nagents: {}\n`);
    expect(problemsOf(await load())).toEqual([
      expect.stringMatching(
        /^\(file\): octo\/widgets:\.github\/tether\.yml is \d+ bytes; the limit is 65536 bytes$/,
      ),
    ]);
  });

  it("reports schema problems with the mentions it could still read", async () => {
    gh().config("agents:\n  reviewer:\n    mention: '@rb'\n    maxTurns: 0\n");
    const r = await load();
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(problemsOf(r)).toEqual([expect.stringMatching(/^agents\.reviewer\.maxTurns: /)]);
    expect(r.agents.map((a) => a.mention)).toEqual(["@tether", "@rb"]);
  });

  it("throws a GitHub outage, so the delivery is retried", async () => {
    gh().api.get(`/repos/${OWNER}/${REPO}/contents/.github%2Ftether.yml`).reply(502, "bad gateway");
    const err = await load().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ status: 502 });
    expect(isRetryable(err)).toBe(true);
  });
});

describe("the README's full example", () => {
  it("is a valid .github/tether.yml with the defaults it claims", async () => {
    const readme = fs.readFileSync(path.resolve(import.meta.dirname, "../../README.md"), "utf8");
    const section = readme.slice(readme.indexOf("### `.github/tether.yml`"));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(yaml).toBeDefined();
    gh().config(yaml!);
    const r = await load();
    expect(problemsOf(r)).toEqual([]);
    if (!r.ok) return;
    expect(r.config.agents.tether).toEqual(defaultConfig(AGENT_CLIS).agents.tether);
    expect(r.config.resume).toEqual(DEFAULT_CONFIG.resume);
    expect(r.config.access).toEqual(DEFAULT_CONFIG.access);
    expect(r.config.agents.reviewer).toMatchObject({
      mention: "@reviewer",
      permissionMode: "plan",
    });
  });
});

describe("mergeConfig", () => {
  it.each([
    [{ a: 1 }, { b: 2 }, { a: 1, b: 2 }],
    [{ a: { x: 1, y: 1 } }, { a: { y: 2 } }, { a: { x: 1, y: 2 } }],
    [{ a: [1, 2] }, { a: [3] }, { a: [3] }],
    [{ a: { x: 1 } }, { a: null }, { a: null }],
    [null, { a: 1 }, { a: 1 }],
    [{ a: 1 }, JSON.parse('{"__proto__": {"polluted": true}}'), { a: 1 }],
  ])("%j under %j → %j", (base, over, merged) => {
    expect(mergeConfig(base, over)).toEqual(merged);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
