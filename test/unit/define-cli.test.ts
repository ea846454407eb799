/**
 * Issue #43: a CLI's entry states only what differs (defineCli, src/agent-cli/agent-cli.ts), and
 * the config takes the registered CLIs as data (it sits below them and never imports the
 * registry): a list it is handed decides what `cli:` may name and what each one allows.
 */
import { describe, expect, it } from "vitest";
import { defineCli, type CliEntry } from "../../src/agent-cli/agent-cli.js";
import type { CliAdapter } from "../../src/agent-cli/runtime-adapter.js";
import type { ConfigClis } from "../../src/core/cli-abilities.js";
import { formatConfigProblems, parseRepoConfig } from "../../src/config/repo-config.js";
import { createLogger } from "../../src/log.js";

const layout = { find: () => undefined } as unknown as CliEntry["layout"];

/** The least an entry says; records what its adapter was made with. */
function entry(more: Partial<CliEntry> = {}) {
  const made: Array<{ path: string; component: unknown }> = [];
  const e: CliEntry = {
    name: "newcli",
    label: "New CLI",
    api: { name: "New API", credentials: "`NEW_API_KEY`" },
    defaultModel: "new-1",
    secretEnv: ["NEW_API_KEY"],
    controlFiles: ["NEW.md"],
    layout,
    binary: (env) => env.TETHER_NEWCLI_PATH ?? "newcli",
    adapter: (o) => {
      made.push({
        path: o.path,
        component: (o.log?.bindings() as { component?: unknown }).component,
      });
      return { name: "newcli" } as CliAdapter;
    },
    ...more,
  };
  return { e, made };
}

describe("defineCli", () => {
  it("fills in what an entry leaves out: the defaults, its binary variable and its store", () => {
    const cli = defineCli(entry().e);
    expect(cli).toMatchObject({ pathEnv: "TETHER_NEWCLI_PATH", homeStore: ".newcli" });
    expect([cli.childEnvPrefixes, cli.compactPrompt, cli.images, cli.mcpServers]).toEqual([
      [],
      null,
      true,
      true,
    ]);
    // What a new CLI must be shown to do (or is asked for only on its first turn) starts off.
    const off = ["rewinds", "forks", "toolRules", "turnLimit", "cacheTtl"] as const;
    expect(off.filter((k) => cli[k])).toEqual([]);
    expect(cli.costEstimated || cli.probeAtStart).toBe(false);
    expect(cli).not.toHaveProperty("binary");
    expect(cli).not.toHaveProperty("adapter");
  });

  it("keeps what the entry states over a default", () => {
    const cli = defineCli(
      entry({ homeStore: ".local/new", compactPrompt: "/squash", mcpServers: { why: "none" } }).e,
    );
    expect(cli).toMatchObject({ homeStore: ".local/new", compactPrompt: "/squash" });
    expect(cli.mcpServers).toEqual({ why: "none" });
  });

  it("makes the adapter over the binary the environment names, logging as the CLI", () => {
    const { e, made } = entry();
    const log = createLogger("silent");
    defineCli(e).create({ env: { TETHER_NEWCLI_PATH: "/opt/newcli" }, log });
    defineCli(e).create({ env: {}, log });
    expect(made).toEqual([
      { path: "/opt/newcli", component: "newcli" },
      { path: "newcli", component: "newcli" },
    ]);
  });
});

describe("the config takes the CLIs as data", () => {
  const clis: ConfigClis = [
    { name: "alpha", defaultModel: "alpha-1", toolRules: true, mcpServers: true },
    { name: "beta", defaultModel: "beta-2", toolRules: false, mcpServers: { why: "it cannot" } },
  ];

  it("names and defaults come from the list it is handed", () => {
    const r = parseRepoConfig({ agents: { a: { cli: "beta" }, b: {} } }, clis);
    expect(r.ok && r.config.agents.a).toMatchObject({ cli: "beta", model: "beta-2" });
    expect(r.ok && r.config.agents.b).toMatchObject({ cli: "alpha", model: "alpha-1" });
    expect(r.ok && r.config.agents.tether).toMatchObject({ cli: "alpha", model: "alpha-1" });
    const other = parseRepoConfig({ agents: { a: { cli: "claude" } } }, clis);
    expect(!other.ok && formatConfigProblems(other.problems)).toContain("must be alpha or beta");
  });

  it("each CLI's rules come from the list: tool rules and MCP servers refused where it says", () => {
    const r = parseRepoConfig(
      { agents: { a: { cli: "beta", allowedTools: ["Read"], mcpServers: ["x"] } } },
      clis,
    );
    const text = !r.ok && formatConfigProblems(r.problems);
    expect(text).toContain("a cli: beta agent has none");
    expect(text).toContain("cannot be given MCP servers: it cannot");
    const fine = parseRepoConfig({ agents: { a: { cli: "alpha", allowedTools: ["Read"] } } }, clis);
    expect(fine.ok).toBe(true);
  });
});
