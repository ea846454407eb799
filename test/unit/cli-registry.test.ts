/**
 * Issue #31: the registry of agent CLIs, and what is derived from it. A CLI the registry lists is
 * accepted by the config, labelled as itself in metrics, masked on pull requests and kept out of
 * the sandbox; a name it does not list is refused by the config and counted as "other", never as
 * the default CLI (which is what the old `cli === "codex" ? "codex" : "claude"` did).
 */
import { describe, expect, it } from "vitest";
import {
  AGENT_CLIS,
  CLI_CONTROL_FILES,
  CLI_NAMES,
  CLI_SECRETS,
  cliOf,
  DEFAULT_CLI,
  findCli,
} from "../../src/cli-registry.js";
import { formatConfigProblems, parseRepoConfig } from "../../src/config/repo-config.js";
import { secretsInEnv } from "../../src/core/secret-env.js";
import { Metrics } from "../../src/metrics.js";
import { AGENT_CONTROL_PATHS } from "../../src/workspace/agent-control.js";

describe("the registry of agent CLIs", () => {
  it("names each CLI once, the first being the default", () => {
    expect(new Set(CLI_NAMES).size).toBe(AGENT_CLIS.length);
    expect(DEFAULT_CLI).toBe(AGENT_CLIS[0].name);
    expect(findCli(undefined)?.name).toBe(DEFAULT_CLI);
    expect(findCli("no-such-cli")).toBeUndefined();
    expect(() => cliOf("no-such-cli")).toThrow(/no agent CLI "no-such-cli" is registered/);
  });

  it.each(AGENT_CLIS.map((c) => [c.name, c] as const))(
    "%s: a complete entry (names, words, secrets, files, layout)",
    (_name, c) => {
      expect(c.name).toMatch(/^[a-z][a-z0-9-]*$/);
      expect(c.label).toBeTruthy();
      expect(c.api.name).toBeTruthy();
      expect(c.pathEnv).toMatch(/^TETHER_[A-Z]+_PATH$/);
      expect(c.secretEnv.length).toBeGreaterThan(0);
      expect(c.controlFiles.length).toBeGreaterThan(0);
      expect(c.homeStore).toMatch(/^\.[a-z]/);
      expect(typeof c.layout.find).toBe("function");
    },
  );

  it("the config accepts every registered CLI, with its default model, and refuses any other", () => {
    for (const c of AGENT_CLIS) {
      const r = parseRepoConfig({ agents: { a: { cli: c.name } } }, AGENT_CLIS);
      expect(r.ok && r.config.agents.a).toMatchObject({ cli: c.name, model: c.defaultModel });
    }
    const bad = parseRepoConfig({ agents: { a: { cli: "vibe" } } }, AGENT_CLIS);
    expect(bad.ok).toBe(false);
    expect(!bad.ok && formatConfigProblems(bad.problems)).toContain(
      `must be ${CLI_NAMES.join(" or ")}`,
    );
  });

  it("every CLI's control files are masked on a pull request, whichever CLI runs", () => {
    for (const f of CLI_CONTROL_FILES) expect(AGENT_CONTROL_PATHS).toContain(f);
    expect(AGENT_CONTROL_PATHS).toContain(".gitmodules");
  });

  it("every CLI's credentials are scrubbed by value", () => {
    const env = Object.fromEntries(
      AGENT_CLIS.flatMap((c) => c.secretEnv).map((n) => [n, `secret-of-${n}-0123456789`]),
    );
    const found = secretsInEnv(env, CLI_SECRETS);
    for (const value of Object.values(env)) expect(found).toContain(value);
  });

  it("metrics label a turn by its registered CLI, and an unknown one as other, never the default", async () => {
    const m = new Metrics();
    for (const c of AGENT_CLIS)
      m.recordTurn({ outcome: "success", reason: "resumed", cli: c.name });
    m.recordTurn({ outcome: "success", reason: "resumed", cli: "third-cli" });
    const text = await m.registry.metrics();
    for (const c of AGENT_CLIS)
      expect(text).toContain(
        `tether_turns_total{outcome="success",reason="resumed",cli="${c.name}"} 1`,
      );
    expect(text).toContain('tether_turns_total{outcome="success",reason="resumed",cli="other"} 1');
  });
});
