import { AGENT_CLIS } from "../../src/cli-registry.js";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { mcpSecrets, readMcpServers } from "../../src/config/mcp-servers.js";
import { parseRepoConfig, setMcpServerNames } from "../../src/config/repo-config.js";
import { EnvError, loadEnv } from "../../src/env.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mcp-config-"));
function file(content: unknown): string {
  const f = path.join(dir, `${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(f, typeof content === "string" ? content : JSON.stringify(content));
  return f;
}

describe("the operator's MCP servers file (TETHER_MCP_SERVERS)", () => {
  const rows: Array<{ input: unknown; valid: boolean; problem?: RegExp }> = [
    { input: { mcpServers: {} }, valid: true },
    { input: { mcpServers: { sentry: { command: "node", args: ["s.js"] } } }, valid: true },
    {
      input: { mcpServers: { sentry: { type: "stdio", command: "node", env: { TOKEN: "x" } } } },
      valid: true,
    },
    {
      input: {
        mcpServers: {
          linear: {
            type: "http",
            url: "https://mcp.linear.app/mcp",
            headers: { Authorization: "Bearer t" },
          },
        },
      },
      valid: true,
    },
    {
      input: { mcpServers: { x: { type: "sse", url: "https://a.example/sse" } } },
      valid: false,
      problem: /mcpServers\.x\.type: type must be "stdio"/,
    },
    {
      input: { mcpServers: { x: { type: "http", url: "ftp://a.example" } } },
      valid: false,
      problem: /mcpServers\.x\.url: must be an http\(s\) URL/,
    },
    {
      input: { mcpServers: { x: { type: "http", url: "https://u:p@a.example" } } },
      valid: false,
      problem: /must not hold credentials/,
    },
    {
      input: { mcpServers: { x: { command: "" } } },
      valid: false,
      problem: /mcpServers\.x\.command: must not be empty/,
    },
    {
      input: { mcpServers: { x: { command: "a", cwd: "/" } } },
      valid: false,
      problem: /unrecognized|Unrecognized.*\(cwd\)/i,
    },
    {
      input: { mcpServers: { tether: { command: "a" } } },
      valid: false,
      problem: /tether is Tether's own/,
    },
    {
      input: { mcpServers: { a__b: { command: "a" } } },
      valid: false,
      problem: /server names are letters/,
    },
    {
      input: { mcpServers: { x: { command: "a", env: { "BAD NAME": "v" } } } },
      valid: false,
      problem: /environment variable name/,
    },
    { input: { servers: {} }, valid: false },
    { input: "{not json", valid: false, problem: /is not JSON/ },
  ];
  it.each(rows)("$input → valid: $valid", ({ input, valid, problem }) => {
    const read = readMcpServers(file(input));
    expect(read.ok).toBe(valid);
    if (!read.ok && problem) expect(read.problems.join("\n")).toMatch(problem);
  });

  it("never quotes a secret in a problem", () => {
    const read = readMcpServers(
      file({ mcpServers: { x: { command: "a", env: { TOKEN: "s3cret-value\nwith a newline" } } } }),
    );
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.problems.join("\n")).not.toContain("s3cret");
  });

  it("a missing file is named", () => {
    const read = readMcpServers(path.join(dir, "nope.json"));
    expect(read).toEqual({
      ok: false,
      problems: [expect.stringMatching(/cannot read .*nope\.json: ENOENT/)],
    });
  });

  it("is checked by loadEnv at start: a bad file stops the process with its problems", () => {
    const bad = file({ mcpServers: { x: { type: "http" } } });
    expect(() => loadEnv({ TETHER_MCP_SERVERS: bad })).toThrow(EnvError);
    expect(() => loadEnv({ TETHER_MCP_SERVERS: bad })).toThrow(
      /TETHER_MCP_SERVERS: .*mcpServers\.x\.url/,
    );
    const good = file({ mcpServers: { x: { command: "node" } } });
    expect(loadEnv({ TETHER_MCP_SERVERS: good }).mcpServers).toEqual({
      x: { type: "stdio", command: "node", args: [], env: {}, network: [] },
    });
    expect(loadEnv({}).mcpServers).toEqual({});
  });

  it("its secrets are the env and header values (and a bearer's token alone)", () => {
    expect(
      mcpSecrets({
        a: { type: "stdio", command: "x", args: [], env: { T: "abcdefgh12" }, network: [] },
        b: {
          type: "http",
          url: "https://x.example",
          headers: { Authorization: "Bearer tok-123456" },
        },
      }),
    ).toEqual(["abcdefgh12", "Bearer tok-123456", "tok-123456"]);
  });
});

describe("agents.<name>.mcpServers in .github/tether.yml", () => {
  afterEach(() => setMcpServerNames([]));

  it("defaults to none", () => {
    const r = parseRepoConfig({ agents: { bot: {} } }, AGENT_CLIS);
    expect(r.ok && r.config.agents.bot!.mcpServers).toEqual([]);
  });

  it("picks a server the operator offers", () => {
    setMcpServerNames(["sentry", "linear"]);
    const r = parseRepoConfig({ agents: { bot: { mcpServers: ["sentry"] } } }, AGENT_CLIS);
    expect(r.ok && r.config.agents.bot!.mcpServers).toEqual(["sentry"]);
  });

  it("an unknown name is a config error naming the field and what is offered", () => {
    setMcpServerNames(["sentry"]);
    const r = parseRepoConfig(
      { agents: { bot: { mcpServers: ["sentry", "github"] } } },
      AGENT_CLIS,
    );
    expect(r).toEqual({
      ok: false,
      problems: [
        {
          path: "agents.bot.mcpServers[1]",
          message: "no MCP server is called github (this Tether offers sentry)",
        },
      ],
    });
    setMcpServerNames([]);
    const none = parseRepoConfig({ agents: { bot: { mcpServers: ["sentry"] } } }, AGENT_CLIS);
    expect(!none.ok && none.problems[0]!.message).toMatch(
      /offers none; its operator sets them in TETHER_MCP_SERVERS/,
    );
  });

  it("a repository cannot define a server: only names", () => {
    setMcpServerNames(["sentry"]);
    const r = parseRepoConfig(
      {
        agents: { bot: { mcpServers: [{ command: "curl", args: ["evil"] }] } },
      },
      AGENT_CLIS,
    );
    expect(r.ok).toBe(false);
  });

  it("is taken for claude, codex and opencode agents", () => {
    setMcpServerNames(["sentry"]);
    for (const cli of ["claude", "codex", "opencode"]) {
      const r = parseRepoConfig({ agents: { bot: { cli, mcpServers: ["sentry"] } } }, AGENT_CLIS);
      expect(r.ok, cli).toBe(true);
    }
  });

  it("is refused for a gemini agent, saying why: the CLI starts none in an untrusted workspace", () => {
    setMcpServerNames(["sentry"]);
    const r = parseRepoConfig(
      { agents: { bot: { cli: "gemini", mcpServers: ["sentry"] } } },
      AGENT_CLIS,
    );
    expect(!r.ok && r.problems).toEqual([
      {
        path: "agents.bot.mcpServers",
        message: expect.stringMatching(
          /a cli: gemini agent cannot be given MCP servers: Gemini CLI starts no MCP server in a workspace it does not trust/,
        ),
      },
    ]);
  });
});
