import { describe, expect, it } from "vitest";
import { renderFooter } from "../../src/runner/render/thread-comments.js";
import { pickMcpServers } from "../../src/runner/wiring/cli-agent.js";

const base = { resumed: false, reason: "no_prior_session" as const, sessionId: null, usage: null };

describe("a turn's MCP servers (#39)", () => {
  it("picks the agent's servers from the operator's list; a name the list lacks fails, and every given one is counted", () => {
    const picked = pickMcpServers(["sentry", "gone"], {
      sentry: { type: "stdio", command: "s", args: [], env: { T: "x" }, network: [] },
      docs: { type: "http", url: "https://d.example/mcp", headers: {} },
    });
    expect(picked.servers.map((s) => s.name)).toEqual(["sentry"]);
    expect(picked.facts).toEqual({
      failed: [{ name: "gone", why: "not configured on this runner" }],
      toolCalls: { sentry: 0, gone: 0 },
    });
    expect(picked.given).toBe(true);
    expect(pickMcpServers([], {}).given).toBe(false);
    // A name that is a property of every object is not a server.
    expect(pickMcpServers(["constructor"], {}).servers).toEqual([]);
  });

  it("the footer names a server that did not start, and says the turn went on", () => {
    const f = renderFooter({ ...base, mcpFailed: [{ name: "sentry", why: "failed" }] });
    expect(f).toContain(
      "🔌 MCP server not started, the turn went on without it: `sentry` (`failed`)",
    );
    const two = renderFooter({
      ...base,
      mcpFailed: [
        { name: "a", why: "failed" },
        { name: "b`x\nc", why: "needs-auth" },
      ],
    });
    expect(two).toContain(
      "MCP servers not started, the turn went on without them: `a` (`failed`), `bxc` (`needs-auth`)",
    );
    expect(renderFooter(base)).not.toContain("MCP");
  });
});
