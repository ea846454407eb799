import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino, type Logger } from "pino";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import type { CliAdapter, RunOutcome, RunSpec } from "../../src/agent-cli/runtime-adapter.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";

/*
 * The stack every adapter test of a real CLI stands on (codex-, gemini-, opencode-adapter):
 * a temp root, the CLI's fake model API, Tether's bwrap sandbox, and the CLI built with a base
 * environment that holds the operator's key and a GitHub token it must never pass on. After each
 * test no scripted reply may be left over; after the file everything is closed and removed.
 */

/** What the harness needs of a fake model API (fake-anthropic, fake-openai, fake-gemini). */
interface ModelFake {
  url: string;
  pending(): number;
  reset(): void;
  close(): Promise<void>;
}

/** A workspace and a HOME for one session. */
export interface Place {
  cwd: string;
  home: string;
}

export interface AdapterHarness<F, C> {
  root: string;
  log: Logger;
  readonly fake: F;
  readonly sandbox: Sandbox;
  readonly cli: C;
  /** How many places were made so far (the last one's number). */
  readonly dirs: number;
  /**
   * A workspace (a git repository, as Tether's are) and a HOME. With `files` (or when the
   * harness commits), the workspace holds a README.md and them, committed.
   */
  place(files?: Record<string, string>): Place;
  /** A run of `prompt: "hello"` in `p` under the harness's model and limits, in the sandbox. */
  spec(p: Place, over?: Partial<RunSpec>): RunSpec;
  /**
   * A run resuming `sessionId`, which the CLI does not hold: resume_rejected, with no session
   * and no tool, and no request reached the model (`requests` counts them).
   */
  resumeUnknown(sessionId: string, requests: () => number): Promise<RunOutcome>;
  /** A fresh run the model cannot answer for its context: poisoned, and the detail says so. */
  overflowed(): Promise<RunOutcome>;
  /** A fresh run whose key the API refuses: auth_failed, naming `variable` (the key's). */
  keyRefused(variable: string): Promise<RunOutcome>;
}

export function adapterHarness<F extends ModelFake, C extends Pick<CliAdapter, "start">>(o: {
  /** Names the temp root, e.g. "codex" for tether-codex-adapter-…. */
  name: string;
  model: string;
  /** The run's timeout and stall limit, in milliseconds (default two minutes). */
  limitMs?: number;
  /** Whether a place's workspace has a first commit (README.md and the files asked for). */
  commit?: boolean;
  startFake(): Promise<F>;
  /** Env the CLI gets on top of the base (PATH, HOME, LANG, GITHUB_TOKEN): its key and URL. */
  env(fake: F): Record<string, string>;
  createCli(o: { log: Logger; baseEnv: Record<string, string | undefined> }): C;
}): AdapterHarness<F, C> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `tether-${o.name}-adapter-`));
  const log = pino({ level: "silent" });
  let fake: F | undefined;
  let sandbox: Sandbox | undefined;
  let cli: C | undefined;
  let dirs = 0;
  const limitMs = o.limitMs ?? 120_000;

  beforeAll(async () => {
    fake = await o.startFake();
    sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(root, "sandbox"), log });
    expect(sandbox.status).toMatchObject({ ok: true });
    cli = o.createCli({
      log,
      baseEnv: {
        PATH: process.env.PATH,
        HOME: root,
        LANG: "C.UTF-8",
        ...o.env(fake),
        GITHUB_TOKEN: "ghs_must_not_leak",
      },
    });
  });
  afterAll(async () => {
    await fake?.close();
    fs.rmSync(root, { recursive: true, force: true });
  });
  afterEach(() => {
    const left = fake!.pending();
    fake!.reset();
    expect(left).toBe(0);
  });

  const place = (files: Record<string, string> = {}): Place => {
    const n = ++dirs;
    const cwd = path.join(root, `work-${n}`);
    const home = path.join(root, `home-${n}`);
    fs.mkdirSync(cwd);
    fs.mkdirSync(home);
    if (!o.commit) {
      execFileSync("git", ["init", "-q"], { cwd });
      return { cwd, home };
    }
    fs.writeFileSync(path.join(cwd, "README.md"), "a repository\n");
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(cwd, name)), { recursive: true });
      fs.writeFileSync(path.join(cwd, name), text);
    }
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], {
        cwd,
      });
    git("init", "-q");
    git("add", "-A");
    git("commit", "-qm", "init");
    return { cwd, home };
  };

  const spec = (p: Place, over: Partial<RunSpec> = {}): RunSpec => ({
    cwd: p.cwd,
    home: p.home,
    prompt: "hello",
    settings: { model: o.model, timeoutMs: limitMs, stallMs: limitMs },
    sandbox: { sandbox: sandbox!, network: { kind: "model-only" } },
    ...over,
  });

  return {
    root,
    log,
    get fake() {
      return fake!;
    },
    get sandbox() {
      return sandbox!;
    },
    get cli() {
      return cli!;
    },
    get dirs() {
      return dirs;
    },
    place,
    spec,
    async resumeUnknown(sessionId, requests) {
      const before = requests();
      const run = cli!.start(spec(place(), { resumeSessionId: sessionId }));
      const o = await run.outcome;
      expect(o).toMatchObject({ kind: "resume_rejected", sessionId: undefined, toolRan: false });
      expect(requests() - before).toBe(0);
      return o;
    },
    async overflowed() {
      const o = await cli!.start(spec(place())).outcome;
      expect(o.kind).toBe("poisoned");
      expect(o.detail).toContain("context window");
      return o;
    },
    async keyRefused(variable) {
      const o = await cli!.start(spec(place())).outcome;
      expect(o.kind).toBe("auth_failed");
      expect(o.detail).toContain(variable);
      return o;
    },
  };
}
