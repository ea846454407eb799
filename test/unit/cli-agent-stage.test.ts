/**
 * cliAgent's staged HOME (Agent.stage): the per-turn HOME, with a resume's transcript restored
 * into it, made before the run while the turn waits for its workspace. The run that fits it
 * takes it; anything else makes its own; what no run took, release removes.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { AgentRun, CliAdapter, RunSpec } from "../../src/agent-cli/runtime-adapter.js";
import { createLogger } from "../../src/log.js";
import { cliAgent } from "../../src/runner/wiring/cli-agent.js";
import type { AgentRunRequest } from "../../src/runner/ports.js";
import type { Sandbox } from "../../src/sandbox/sandbox.js";
import type { TranscriptStore } from "../../src/sessions/transcripts.js";
import { repoIdOf } from "../helpers/seed.js";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-stage-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** A CLI that notes each run's HOME and what the transcript there held when it started. */
function recordingCli() {
  const runs: Array<{ home: string | undefined; transcript: string | null }> = [];
  const cli: CliAdapter = {
    name: "recording",
    path: "/bin/true",
    probe: async () => ({ version: "1", canResume: true }) as never,
    start(spec: RunSpec): AgentRun {
      const file = spec.home ? path.join(spec.home, "transcript") : null;
      runs.push({
        home: spec.home,
        transcript: file && fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null,
      });
      const outcome = Promise.resolve({
        kind: "success",
        sessionId: undefined,
        resultText: "ok",
        usage: {
          inputTokens: 0,
          outputTokens: 0,
          cacheReadTokens: 0,
          cacheCreationTokens: 0,
          costUsd: 0,
          numTurns: 1,
          durationMs: 1,
          model: null,
          contextTokens: null,
          contextWindow: null,
        },
        toolRan: false,
        detail: "",
        stderrTail: "",
        exitCode: 0,
        signal: null,
        unreadableLines: 0,
        unknownLines: 0,
      });
      return {
        events: (async function* () {})(),
        [Symbol.asyncIterator]: () => (async function* () {})(),
        outcome,
        pid: undefined,
        cancel: () => {},
      } as unknown as AgentRun;
    },
    activeRuns: () => 0,
    cancelAll: async () => {},
  };
  return { cli, runs };
}

/** A store whose restore writes the session id into the HOME, and counts. */
function countingStore() {
  const restores: string[] = [];
  const store: TranscriptStore = {
    state: async () => ({ where: "local" }) as never,
    async restore(_key, sessionId, home) {
      restores.push(sessionId);
      fs.writeFileSync(path.join(home, "transcript"), sessionId);
      return { from: "store", ms: 1 };
    },
    save: async () => null,
  };
  return { store, restores };
}

const key = {
  repoId: repoIdOf("octo/widgets"),
  repo: "octo/widgets",
  issueNumber: 1,
  agent: "tether",
};
const cwd = "/work/issue-1";

function agentUnderTest() {
  const { cli, runs } = recordingCli();
  const { store, restores } = countingStore();
  const homes = path.join(root, `homes-${Math.random().toString(36).slice(2)}`);
  const agent = cliAgent(cli, {
    log: createLogger("silent"),
    contain: { sandbox: { sandboxed: true } as unknown as Sandbox, transcripts: store, homes },
  });
  const request = (over: Partial<AgentRunRequest>): AgentRunRequest => ({
    key,
    cwd,
    prompt: "hi",
    resumeSessionId: "s-1",
    settings: { name: "tether", cli: "claude", timeoutMinutes: 1, stallMinutes: 1 },
    systemPrompt: "",
    signal: new AbortController().signal,
    onSession: () => {},
    onProgress: () => {},
    ...over,
  });
  const homesLeft = () => (fs.existsSync(homes) ? fs.readdirSync(homes) : []);
  return { agent, runs, restores, request, homesLeft };
}

describe("cliAgent.stage", () => {
  it("restores the transcript before the run is asked for, and the run that fits takes that HOME", async () => {
    const t = agentUnderTest();
    const staged = t.agent.stage!({ key, cwd, resumeSessionId: "s-1" });
    expect(staged).not.toBeNull();
    // The turn still waits for its workspace: no run is asked for, and the restore is done.
    await vi.waitFor(() => expect(t.restores).toEqual(["s-1"]), { timeout: 20_000 });
    expect(t.homesLeft()).toHaveLength(1);
    const staging = t.homesLeft()[0]!;

    await t.agent.run(t.request({ staged }));
    expect(t.restores).toEqual(["s-1"]); // not restored again
    expect(path.basename(t.runs[0]!.home!)).toBe(staging);
    expect(t.runs[0]!.transcript).toBe("s-1");
    expect(t.homesLeft()).toEqual([]); // the run removed its HOME as always
    await staged!.release(); // nothing left to release: no error
  });

  it("is taken once: a second run (the turn after a compaction) restores for itself", async () => {
    const t = agentUnderTest();
    const staged = t.agent.stage!({ key, cwd, resumeSessionId: "s-1" });
    await t.agent.run(t.request({ staged }));
    await t.agent.run(t.request({ staged }));
    expect(t.restores).toEqual(["s-1", "s-1"]);
    expect(t.runs[0]!.home).not.toBe(t.runs[1]!.home);
    expect(t.runs[1]!.transcript).toBe("s-1");
    expect(t.homesLeft()).toEqual([]);
  });

  it("a run that does not fit it (a fresh retry, another key or directory) makes its own; release removes the staged one", async () => {
    const t = agentUnderTest();
    const staged = t.agent.stage!({ key, cwd, resumeSessionId: "s-1" });
    await t.agent.run(t.request({ staged, resumeSessionId: null }));
    await t.agent.run(t.request({ staged, key: { ...key, issueNumber: 2 } }));
    await t.agent.run(t.request({ staged, cwd: "/work/elsewhere" }));
    expect(t.runs.map((r) => r.transcript)).toEqual([null, "s-1", "s-1"]);
    expect(t.homesLeft()).toHaveLength(1); // the staged HOME, still unused
    await staged!.release();
    expect(t.homesLeft()).toEqual([]);
  });

  it("released before any run (the turn ended first): the HOME goes, and a later run cannot take it", async () => {
    const t = agentUnderTest();
    const staged = t.agent.stage!({ key, cwd, resumeSessionId: "s-1" });
    await staged!.release();
    await staged!.release();
    expect(t.homesLeft()).toEqual([]);
    await t.agent.run(t.request({ staged }));
    expect(t.restores).toEqual(["s-1", "s-1"]);
    expect(t.runs[0]!.transcript).toBe("s-1");
  });

  it("a fresh turn stages an empty HOME; an agent without containment stages nothing", async () => {
    const t = agentUnderTest();
    const staged = t.agent.stage!({ key, cwd, resumeSessionId: null });
    await t.agent.run(t.request({ staged, resumeSessionId: null }));
    expect(t.restores).toEqual([]);
    expect(t.runs[0]!.transcript).toBeNull();

    const bare = cliAgent(recordingCli().cli, { log: createLogger("silent") });
    expect(bare.stage!({ key, cwd, resumeSessionId: "s-1" })).toBeNull();
  });
});
