/**
 * The README and docs/ cannot drift from the code: the README's example config is parsed with the
 * real schema, and every environment variable, config field, reason code, outcome, metric, role,
 * command, script and file they name is checked against the source of truth, each in the file that
 * holds it. The README stays a front door (under 400 lines) whose map links every docs/ file, and
 * every relative link in them leads to a file and heading that exist.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { isAllowedName, isDeniedName } from "../../src/process/child-env.js";
import { CODEX_MODEL_ENV } from "../../src/codex/model-endpoint.js";
import { GEMINI_MODEL_ENV } from "../../src/gemini/model-endpoint.js";
import {
  AccessConfig,
  agentConfigSchema,
  CiConfig,
  DEFAULT_CONFIG,
  defaultConfig,
  PublishConfig,
  ChangesConfig,
  ResumeConfig,
  parseRepoConfig,
} from "../../src/config/repo-config.js";
import { AGENT_CLIS, CLI_ENV_PREFIXES } from "../../src/cli-registry.js";
import { EnvSchema } from "../../src/env.js";
import { COMMANDS } from "../../src/intake/parse-comment.js";
import { Metrics } from "../../src/metrics.js";
import { REASON_CODES } from "../../src/core/resume-decision.js";
import { OUTCOMES } from "../../src/sql/stats/figures.js";
import { TRANSCRIPT_COMMAND } from "../../src/sessions/transcript-command.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");
const README = read("README.md");
/** The docs/ files, by path from the root. */
const DOCS = fs
  .readdirSync(path.join(ROOT, "docs"))
  .filter((f) => f.endsWith(".md"))
  .map((f) => `docs/${f}`)
  .sort();
/** The files the README's sections moved to (#33); with the README, all of what it once held. */
const MOVED = [
  "docs/how-a-turn-runs.md",
  "docs/changes.md",
  "docs/deploying.md",
  "docs/operations.md",
  "docs/security.md",
  "docs/benchmarks.md",
  "docs/reliability.md",
  "docs/development.md",
];
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  scripts: Record<string, string>;
};

/**
 * The text under a heading (exact heading line) of `file` (the README unless named), up to the next
 * heading of the same or higher level.
 */
function section(heading: string, file = "README.md"): string {
  const lines = read(file).split("\n");
  const start = lines.findIndex((l) => l === heading);
  expect(start, `${file} heading ${JSON.stringify(heading)}`).toBeGreaterThanOrEqual(0);
  const level = /^#+/.exec(heading)![0].length;
  let inFence = false;
  const body: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith("```")) inFence = !inFence;
    const m = /^(#+) /.exec(line);
    if (!inFence && m && m[1]!.length <= level) break;
    body.push(line);
  }
  return body.join("\n");
}

/** Rows of the first markdown table in `text`, as cells, header and separator dropped. */
function tableRows(text: string): string[][] {
  const lines = text.split("\n");
  const first = lines.findIndex((l) => l.trimStart().startsWith("|"));
  expect(first, "a table").toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.trimStart().startsWith("|")) break;
    rows.push(
      line
        .trim()
        .replace(/^\||\|$/g, "")
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    );
  }
  return rows;
}

/** `code` spans in a piece of markdown (also ``spans with ` inside``). */
const codeSpans = (text: string): string[] =>
  [...text.matchAll(/(`+)([^`][\s\S]*?)(?<!`)\1(?!`)/g)].map((m) => m[2]!.trim());

function sourceFiles(dir: string, ext = ".ts"): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(ext))
    .map((f) => path.join(dir, f));
}

/** Variables read as `process.env.NAME`, `process.env["NAME"]` or `env.NAME` in these files. */
function envReads(files: string[], pattern: RegExp): Set<string> {
  const names = new Set<string>();
  for (const file of files) {
    for (const m of fs.readFileSync(file, "utf8").matchAll(pattern)) names.add(m[1]!);
  }
  return names;
}

describe("README: environment", () => {
  const table = tableRows(section("## Environment"));
  const documented = new Set(table.flatMap((row) => codeSpans(row[0]!)));

  it("documents every variable in the env schema", () => {
    const missing = Object.keys(EnvSchema.shape).filter((k) => !documented.has(k));
    expect(missing).toEqual([]);
  });

  it("documents every variable the code reads from process.env", () => {
    const read = envReads(
      sourceFiles(path.join(ROOT, "src")),
      /process\.env(?:\.|\[\s*")([A-Z][A-Z0-9_]*)/g,
    );
    // The parser finds reads (the secret variables are read through core/secret-env.ts's list).
    expect([...read]).toEqual(expect.arrayContaining(["PATH"]));
    // Each CLI's binary is read from its registry entry's variable.
    for (const cli of AGENT_CLIS) read.add(cli.pathEnv);
    const missing = [...read].filter((k) => !documented.has(k));
    expect(missing).toEqual([]);
  });

  it("documents only variables something reads: Tether, the agent CLIs or Probot", () => {
    const probot = envReads(
      sourceFiles(path.join(ROOT, "node_modules/probot/lib"), ".js"),
      /\benv\.([A-Z][A-Z0-9_]*)/g,
    );
    const tether = new Set([...Object.keys(EnvSchema.shape), ...AGENT_CLIS.map((c) => c.pathEnv)]);
    const src = envReads(sourceFiles(path.join(ROOT, "src")), /process\.env\.([A-Z][A-Z0-9_]*)/g);
    const unknown = [...documented].filter((name) => {
      if (name.endsWith("*")) return !isAllowedName(name.slice(0, -1) + "X", CLI_ENV_PREFIXES);
      const forChild = isAllowedName(name, CLI_ENV_PREFIXES) && !isDeniedName(name);
      const forCodex = (CODEX_MODEL_ENV as readonly string[]).includes(name);
      const forGemini = (GEMINI_MODEL_ENV as readonly string[]).includes(name);
      return (
        !tether.has(name) &&
        !src.has(name) &&
        !probot.has(name) &&
        !forChild &&
        !forCodex &&
        !forGemini
      );
    });
    expect(unknown).toEqual([]);
  });

  it("states the schema's defaults", () => {
    const defaults = EnvSchema.parse({}) as Record<string, unknown>;
    for (const row of table) {
      const names = codeSpans(row[0]!);
      if (names.length !== 1) continue;
      const value = defaults[names[0]!];
      if (value === undefined) continue;
      expect(codeSpans(row[1]!)[0], `default of ${names[0]}`).toBe(String(value));
    }
  });
});

describe("README: .github/tether.yml", () => {
  const text = section("### `.github/tether.yml`");
  const yaml = /```yaml\n([\s\S]*?)```/.exec(text)?.[1];
  const fields = tableRows(text.slice(text.indexOf("| field")));

  it("has a full example that the real schema accepts", () => {
    expect(yaml).toBeDefined();
    const parsed = parseRepoConfig(parseYaml(yaml!), AGENT_CLIS);
    expect(parsed).toMatchObject({ ok: true });
  });

  it("uses every field in the example", () => {
    const raw = parseYaml(yaml!) as {
      agents: Record<string, Record<string, unknown>>;
      resume: Record<string, unknown>;
      access: Record<string, unknown>;
      publish: Record<string, unknown>;
      changes: Record<string, unknown>;
    };
    const agentKeys = new Set(Object.values(raw.agents).flatMap((a) => Object.keys(a ?? {})));
    expect([...agentKeys].sort()).toEqual(Object.keys(agentConfigSchema(AGENT_CLIS).shape).sort());
    expect(Object.keys(raw.resume).sort()).toEqual(Object.keys(ResumeConfig.shape).sort());
    expect(Object.keys(raw.access).sort()).toEqual(Object.keys(AccessConfig.shape).sort());
    expect(Object.keys(raw.publish).sort()).toEqual(Object.keys(PublishConfig.shape).sort());
    expect(Object.keys(raw.changes).sort()).toEqual(Object.keys(ChangesConfig.shape).sort());
  });

  it("describes exactly the schema's fields in its table", () => {
    const schemaFields = [
      "agents",
      ...Object.keys(agentConfigSchema(AGENT_CLIS).shape)
        .filter((k) => k !== "ci")
        .map((k) => `agents.<name>.${k}`),
      // A section of its own, documented field by field.
      ...Object.keys(CiConfig.shape).map((k) => `agents.<name>.ci.${k}`),
      ...Object.keys(ResumeConfig.shape).map((k) => `resume.${k}`),
      ...Object.keys(AccessConfig.shape).map((k) => `access.${k}`),
      ...Object.keys(PublishConfig.shape).map((k) => `publish.${k}`),
      ...Object.keys(ChangesConfig.shape).map((k) => `changes.${k}`),
    ];
    expect(fields.map((r) => codeSpans(r[0]!)[0]).sort()).toEqual(schemaFields.sort());
  });

  it("states the defaults the schema fills in", () => {
    const defaults: Record<string, unknown> = {
      ...Object.fromEntries(
        Object.entries(defaultConfig(AGENT_CLIS).agents.tether!).map(([k, v]) => [
          `agents.<name>.${k}`,
          v,
        ]),
      ),
      ...Object.fromEntries(
        Object.entries(defaultConfig(AGENT_CLIS).agents.tether!.ci).map(([k, v]) => [
          `agents.<name>.ci.${k}`,
          v,
        ]),
      ),
      ...Object.fromEntries(
        Object.entries(DEFAULT_CONFIG.resume).map(([k, v]) => [`resume.${k}`, v]),
      ),
      ...Object.fromEntries(
        Object.entries(DEFAULT_CONFIG.access).map(([k, v]) => [`access.${k}`, v]),
      ),
      ...Object.fromEntries(
        Object.entries(DEFAULT_CONFIG.publish).map(([k, v]) => [`publish.${k}`, v]),
      ),
      ...Object.fromEntries(
        Object.entries(DEFAULT_CONFIG.changes).map(([k, v]) => [`changes.${k}`, v]),
      ),
    };
    let compared = 0;
    for (const row of fields) {
      const field = codeSpans(row[0]!)[0]!;
      if (field === "agents" || field.endsWith(".mention") || field.endsWith(".label")) continue; // `@<name>`, `<name>`: per agent
      const shown = codeSpans(row[1]!)[0];
      if (shown === undefined) {
        expect(defaults[field], `${field} has no default`).toBeUndefined();
        continue;
      }
      expect(parseYaml(shown), `default of ${field}`).toEqual(defaults[field]);
      compared++;
    }
    expect(compared).toBeGreaterThan(10);
  });
});

describe("docs/changes.md: Changes", () => {
  const text = section("## Changes", "docs/changes.md");

  it("lists every refusal reason the checks give, and every other publish reason", async () => {
    const { PUBLISH_REASONS } = await import("../../src/metrics.js");
    for (const reason of PUBLISH_REASONS.filter((r) => r !== "none"))
      expect(text, reason).toContain(`\`${reason}\``);
  });

  it("says where each kind of turn's changes go, and names every setting", () => {
    for (const words of [
      "an issue",
      "a pull request from the same repository",
      "a pull request from a fork",
    ])
      expect(text).toContain(words);
    for (const setting of [
      "changes: pull_request | branch | off",
      ...Object.keys(PublishConfig.shape).map((k) => `publish.${k}`),
      ...Object.keys(ChangesConfig.shape).map((k) => `changes.${k}`),
    ])
      expect(text).toContain(setting);
  });

  it("ends the quick start's Try it with a pull request opened by Tether", () => {
    const tryIt = section("### 5. Try it");
    expect(tryIt).toMatch(
      /opens a draft pull request[\s\S]*Comment `@tether …` on that pull\s+request/,
    );
  });
});

describe("docs/how-a-turn-runs.md and docs/operations.md: resume and outcomes", () => {
  it("lists exactly the reason codes the resume decision returns", () => {
    const rows = tableRows(section("## How resume works", "docs/how-a-turn-runs.md"));
    expect(rows.map((r) => codeSpans(r[0]!)[0]).sort()).toEqual([...REASON_CODES].sort());
  });

  it("explains every outcome, in the thread and in the CLI's evidence", () => {
    const thread = tableRows(section("### Outcomes", "docs/how-a-turn-runs.md")).flatMap((r) =>
      codeSpans(r[0]!),
    );
    expect([...thread].sort()).toEqual([...OUTCOMES].sort());
    const evidence = section("## Claude CLI", "docs/operations.md");
    const cli = tableRows(evidence.slice(evidence.indexOf("| outcome"))).flatMap((r) =>
      codeSpans(r[0]!),
    );
    expect([...cli].sort()).toEqual([...OUTCOMES].sort());
  });

  it("lists the reason codes and outcomes /api/stats reports", () => {
    const stats = section("### `GET /api/stats?range=24h|7d|30d`", "docs/operations.md");
    for (const code of [...REASON_CODES, ...OUTCOMES]) expect(stats).toContain(`\`${code}\``);
  });
});

describe("metrics (docs/operations.md), roles (docs/deploying.md), commands (README)", () => {
  it("describes exactly the tether_* metrics /metrics exports", async () => {
    const exported = (await new Metrics().registry.getMetricsAsJSON())
      .map((m) => m.name)
      .filter((n) => n.startsWith("tether_"));
    const rows = tableRows(section("### `GET /metrics`", "docs/operations.md"));
    expect(rows.map((r) => codeSpans(r[0]!)[0]).sort()).toEqual(exported.sort());
  });

  it("lists every process role", () => {
    const rows = tableRows(section("## Processes and health", "docs/deploying.md"));
    expect(rows.map((r) => codeSpans(r[0]!)[0]).sort()).toEqual(
      [...EnvSchema.shape.TETHER_ROLE.unwrap().options].sort(),
    );
  });

  it("shows every comment command", () => {
    const rows = tableRows(section("### Comment commands"));
    const shown = new Set(
      rows.flatMap((r) =>
        codeSpans(r[0]!).flatMap((c) => [...c.matchAll(/\/(\w+)/g)].map((m) => m[1])),
      ),
    );
    expect([...shown].sort()).toEqual([...COMMANDS].sort());
  });
});

describe("README and the docs it moved to: commands and files they name", () => {
  const texts = ["README.md", ...MOVED].map(read);
  const blocks: string[] = [];
  const prose: string[] = [];
  for (const text of texts) {
    let open: string[] | undefined;
    for (const line of text.split("\n")) {
      if (line.trimStart().startsWith("```")) {
        if (open) blocks.push(open.join("\n"));
        open = open ? undefined : [];
      } else (open ?? prose).push(line);
    }
  }
  const spans = codeSpans(prose.join("\n"));
  const commands = [...blocks, ...spans].join("\n");

  it("gives the quick start's commands for a fresh clone", () => {
    const quick = section("## Quick start");
    expect(quick).toContain("npm ci && npm test");
    expect(quick).toContain("npm ci && npm start");
    // After registering, a plain restart: Tether reads the .env the setup flow wrote.
    expect(quick).toMatch(/Tether reads `\.env` at start/);
    expect(quick).not.toContain("--env-file");
    expect(pkg.scripts.start).toBe("node --enable-source-maps dist/src/main.js");
    expect(pkg.scripts.prestart).toBe("npm run build");
  });

  it("runs only npm scripts that exist", () => {
    // Commands, not rules such as Bash(npm test:*).
    const used = new Set(
      [...commands.matchAll(/\bnpm (?:run )?([a-z][\w:-]*)(?=\s|$)/gm)].map((m) => m[1]!),
    );
    expect(used.size).toBeGreaterThan(3);
    const builtIn = new Set(["ci", "install", "test", "start"]);
    const missing = [...used].filter((s) => !builtIn.has(s) && !(s in pkg.scripts));
    expect(missing).toEqual([]);
    for (const s of ["test", "start"]) expect(pkg.scripts[s]).toBeDefined();
  });

  it("runs only roles and commands main.ts accepts", () => {
    const roles = [
      ...(EnvSchema.shape.TETHER_ROLE.unwrap().options as readonly string[]),
      TRANSCRIPT_COMMAND,
    ];
    for (const m of commands.matchAll(/dist\/src\/main\.js[ \t]+([a-z]+)/g))
      expect(roles, m[0]).toContain(m[1]);
  });

  it("names only benchmark scripts and repository files that exist", () => {
    const paths = new Set([
      ...[...commands.matchAll(/\bnpx tsx (bench\/[\w-]+\.ts)/g)].map((m) => m[1]!),
      ...spans.filter((c) =>
        /^(?:src|test|bench|migrations|\.ci|\.github\/workflows)\/[\w./-]*$/.test(c),
      ),
      ...["app.yml", "Dockerfile", "docker-compose.yml"].filter((f) =>
        texts.some((t) => t.includes(`\`${f}\``)),
      ),
    ]);
    expect(paths.size).toBeGreaterThan(5);
    const missing = [...paths].filter((p) => !fs.existsSync(path.join(ROOT, p)));
    expect(missing).toEqual([]);
  });
});

describe("docs/development.md: CI", () => {
  interface Workflow {
    permissions: Record<string, string>;
    jobs: Record<
      string,
      {
        container?: string;
        services?: Record<string, { image: string; env: Record<string, string> }>;
        steps: Array<{ run?: string; env?: Record<string, string> }>;
      }
    >;
  }
  const workflow = parseYaml(
    fs.readFileSync(path.join(ROOT, ".github/workflows/ci.yml"), "utf8"),
  ) as Workflow;
  const ciRun = fs.readFileSync(path.join(ROOT, ".ci/run"), "utf8");
  const job = Object.values(workflow.jobs)[0]!;

  it("runs .ci/run with read-only access to the repository", () => {
    expect(workflow.permissions).toEqual({ contents: "read" });
    expect(job.steps.filter((s) => s.run).map((s) => s.run)).toEqual(["bash .ci/run"]);
    for (const step of ["npm ci", "npm run typecheck", "npm run lint", "npm test"])
      expect(ciRun).toContain(step);
  });

  it("on the lowest Node major package.json allows", () => {
    const engines = (
      JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
        engines: { node: string };
      }
    ).engines.node;
    expect(job.container).toMatch(new RegExp(`^node:${/>=\s*(\d+)/.exec(engines)![1]}-`));
  });

  it("gives .ci/run's deploy check the postgres:17 service's database", () => {
    const pg = job.services!.postgres!;
    expect(pg.image).toBe("postgres:17");
    const step = job.steps.find((s) => s.run === "bash .ci/run")!;
    const url = new URL(step.env!.TETHER_CI_DATABASE_URL!);
    expect(url.hostname).toBe("postgres");
    expect(url.username).toBe(pg.env.POSTGRES_USER);
    expect(url.password).toBe(pg.env.POSTGRES_PASSWORD);
    expect(url.pathname).toBe(`/${pg.env.POSTGRES_DB}`);
    expect(ciRun).toContain("TETHER_CI_DATABASE_URL");
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");

/** The anchors of a markdown file's headings (outside fences), numbered as GitHub does repeats. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let inFence = false;
  for (const line of read(file).split("\n")) {
    if (line.trimStart().startsWith("```")) inFence = !inFence;
    const m = /^#{1,6} (.*)$/.exec(line);
    if (inFence || !m) continue;
    const base = slug(m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1"));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The targets of a markdown file's links (not inside fences or code spans). */
function links(file: string): string[] {
  let inFence = false;
  const prose = read(file)
    .split("\n")
    .filter((line) => {
      if (line.trimStart().startsWith("```")) {
        inFence = !inFence;
        return false;
      }
      return !inFence;
    })
    .join("\n")
    .replace(/(`+)[^`][\s\S]*?(?<!`)\1(?!`)/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe("README: a front door with a map of docs/", () => {
  it("is under 400 lines", () => {
    expect(README.split("\n").length).toBeGreaterThan(100);
    expect(README.trimEnd().split("\n").length).toBeLessThan(400);
  });

  it("links every docs/*.md file from its map", () => {
    const map = new Set(links("README.md").filter((l) => l.startsWith("docs/")));
    const mapped = new Set(
      links("README.md")
        .filter((l) => section("## Documentation").includes(`](${l})`))
        .map((l) => l.split("#")[0]),
    );
    expect(map.size).toBeGreaterThan(0);
    expect(DOCS.length).toBeGreaterThanOrEqual(MOVED.length + 4);
    expect(DOCS.filter((d) => !mapped.has(d))).toEqual([]);
  });

  it("has only relative links that lead to a file, and a heading, that exist", () => {
    const broken: string[] = [];
    let checked = 0;
    let withAnchor = 0;
    for (const file of ["README.md", ...DOCS]) {
      for (const target of links(file)) {
        if (/^[a-z][a-z+.-]*:/i.test(target)) continue; // https:, mailto:
        checked++;
        const [rel, anchor] = target.split("#") as [string, string | undefined];
        const dest = rel === "" ? file : path.join(path.dirname(file), rel);
        if (!fs.existsSync(path.join(ROOT, dest))) {
          broken.push(`${file}: ${target} (no file ${dest})`);
          continue;
        }
        if (anchor === undefined || !dest.endsWith(".md")) continue;
        withAnchor++;
        if (!anchors(dest).has(anchor)) broken.push(`${file}: ${target} (no heading #${anchor})`);
      }
    }
    expect(checked).toBeGreaterThan(30);
    expect(withAnchor).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });
});
