/**
 * A shell script run in the real bubblewrap sandbox the way an agent's tool runs one: the
 * workspace at /workspace, and the only way out the egress proxy to one model endpoint. The
 * proxy drills (test/integration/model-proxy.test.ts, gemini-model-proxy.test.ts,
 * model-call-rules-drill.test.ts) send their requests from it with curl.
 */
import path from "node:path";
import type { Logger } from "pino";
import { expect } from "vitest";
import type { DialectModelAccess } from "../../src/agent-cli/cli-dialect.js";
import type { CliAdapter } from "../../src/agent-cli/runtime-adapter.js";
import { createClaudeCli } from "../../src/claude/claude-cli.js";
import { runCommand } from "../../src/process/run-command.js";
import type { Egress } from "../../src/sandbox/egress.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";

/**
 * Runs `script` with /bin/sh in `sandbox`, `workspace` bound at /workspace, egress to `access`'s
 * model only; a non-zero exit fails the test. Returns the (closed) egress proxy, whose stats()
 * say what it metered.
 */
export async function runModelOnlyShell(
  sandbox: Sandbox,
  workspace: string,
  access: Pick<DialectModelAccess, "endpoint" | "inside" | "outside">,
  script: string,
): Promise<Egress | undefined> {
  const prepared = await sandbox.prepare({
    workspace,
    env: { PATH: "/usr/local/bin:/usr/bin:/bin" },
    egress: { model: access.endpoint, network: { kind: "model-only" } },
    modelEnv: { inside: access.inside, outside: access.outside },
    command: ["/bin/sh", "-c", script],
  });
  try {
    const r = await runCommand(prepared.file, prepared.args, {
      cwd: prepared.cwd,
      env: prepared.env,
      fd3: prepared.fd3,
      timeoutMs: 120_000,
      killGraceMs: 2000,
    });
    expect(r.exitCode, r.stderr).toBe(0);
  } finally {
    await prepared.dispose();
  }
  return prepared.egress;
}

/**
 * Tether's bwrap sandbox (its state under `root`) and the real Claude CLI beside it, holding the
 * operator's `key` for the fake Messages API at `apiUrl`: what the drills that run the CLI in
 * the sandbox (mcp-servers, model-proxy) start from.
 */
export async function sandboxedClaude(
  root: string,
  log: Logger,
  key: string,
  apiUrl: string,
): Promise<{ sandbox: Sandbox; cli: CliAdapter }> {
  const sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(root, "sandbox"), log });
  expect(sandbox.status).toMatchObject({ ok: true });
  const cli = createClaudeCli({
    log,
    killGraceMs: 2000,
    baseEnv: {
      PATH: process.env.PATH,
      HOME: root,
      ANTHROPIC_API_KEY: key,
      ANTHROPIC_BASE_URL: apiUrl,
    },
  });
  return { sandbox, cli };
}
