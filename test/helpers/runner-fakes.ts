/** Narrow stand-ins for the runner's ports and its runtime row, shared by the runner tests on real Postgres. */
import fs from "node:fs";
import path from "node:path";
import type { Pool } from "pg";
import type {
  Agent,
  AgentSettings,
  SpendSettings,
  AgentRunRequest,
  AgentRunResult,
  GitHubThread,
  IssueComment,
  StagedRun,
  WorkspacePort,
} from "../../src/runner/ports.js";
import type { TranscriptState } from "../../src/core/resume-decision.js";
import { registerRuntime } from "../../src/sql/runtimes.js";

/**
 * What a stand-in agent says of its CLI unless a test says otherwise: it resumes, its version is
 * unknown, it does not compact, it keeps its sessions itself (`local`), and stages nothing.
 */
export const agentDefaults: Omit<Agent, "run"> = {
  canResume: async () => true,
  cliVersion: async () => null,
  canCompact: () => false,
  canRewind: () => false,
  transcriptState: async () => ({ where: "local" }),
  stage: () => null,
};

/** A stand-in agent with agentDefaults; a test's own says how it runs. */
export abstract class StandInAgent implements Agent {
  canResume(): Promise<boolean> {
    return agentDefaults.canResume();
  }
  cliVersion(): Promise<string | null> {
    return agentDefaults.cliVersion();
  }
  canCompact(): boolean {
    return agentDefaults.canCompact();
  }
  canRewind(): boolean {
    return agentDefaults.canRewind();
  }
  transcriptState(): Promise<TranscriptState> {
    return Promise.resolve({ where: "local" });
  }
  stage(req: Parameters<Agent["stage"]>[0]): StagedRun | null {
    return agentDefaults.stage(req);
  }
  abstract run(req: AgentRunRequest): Promise<AgentRunResult>;
}

/** An agent whose runs end only when the test lets them. */
export class GatedAgent extends StandInAgent {
  readonly started: string[] = [];
  private readonly gates = new Map<string, () => void>();
  async run(req: AgentRunRequest): Promise<AgentRunResult> {
    this.started.push(req.cwd);
    await new Promise<void>((resolve) => this.gates.set(req.cwd, resolve));
    return {
      outcome: "success",
      sessionId: null,
      text: "done",
      usage: null,
      contextWindow: null,
      toolRan: false,
      detail: null,
    };
  }
  release(cwd: string) {
    this.gates.get(cwd)?.();
  }
}

/** How one test's thread differs from the plain one. */
export interface FakeThreadOptions {
  /** The id of the first comment Tether posts; later ones count up from it. */
  firstId?: number;
  /** Stamp posted comments with the current time instead of "". */
  stampComments?: boolean;
  /** Editing a comment that is not in the thread fails like GitHub's 404 instead of doing nothing. */
  strictUpdates?: boolean;
  /** The agents `.github/tether.yml` defines. */
  agents?: Record<string, AgentSettings>;
  /** Its spend settings. Default: no monthly limits, `/fresh` keeps the count. */
  spend?: SpendSettings;
}

/** One issue's thread in memory: what Tether posted is in `comments`, `creates` counts the posts. */
export function fakeThread(
  opts: FakeThreadOptions = {},
): GitHubThread & { comments: IssueComment[]; creates: number } {
  let next = opts.firstId ?? 1;
  const agents = opts.agents ?? {
    tether: { name: "tether", cli: "claude", timeoutMinutes: 30, stallMinutes: 5 },
  };
  const t = {
    comments: [] as IssueComment[],
    creates: 0,
    cloneUrl: "https://github.com/octo/widgets.git",
    token: async () => "ghs_faketokenfaketokenfaketoken1234",
    getIssue: async () => ({
      title: "Bug",
      body: "It breaks",
      author: "alice",
      url: "https://github.com/octo/widgets/issues/1",
      isPullRequest: false,
    }),
    listComments: async () => t.comments,
    createComment: async (_n: number, body: string) => {
      t.creates++;
      const id = next++;
      const createdAt = opts.stampComments ? new Date().toISOString() : "";
      t.comments.push({ id, author: "tether[bot]", url: `c${id}`, body, createdAt });
      return id;
    },
    updateComment: async (id: number, body: string) => {
      const c = t.comments.find((x) => x.id === id);
      if (c) c.body = body;
      else if (opts.strictUpdates) throw new Error("404");
    },
    loadConfig: async () => ({
      ok: true as const,
      settings: {
        agents,
        resume: { enabled: true, ttlHours: 72, contextBudget: 0.8 },
        spend: opts.spend ?? { freshResetsConversation: false },
      },
    }),
  };
  return t;
}

export function fakeWorkspace(root: string, over: Partial<WorkspacePort> = {}): WorkspacePort {
  return {
    pathFor: (k) => path.join(root, k.repo, `issue-${k.issueNumber}`, k.agent),
    exists: async (dir) => fs.existsSync(dir),
    prepare: async (req) => {
      const dir = path.join(root, req.repo, `issue-${req.issueNumber}`, req.agent);
      fs.mkdirSync(dir, { recursive: true });
      return { dir };
    },
    ...over,
  };
}

/** The runtime row `rt` that seeded tasks are claimed under. */
export async function registerTestRuntime(
  pool: Pool,
  over: Partial<Parameters<typeof registerRuntime>[1]> = {},
): Promise<void> {
  await registerRuntime(pool, {
    id: "rt",
    hostname: "h",
    homeDir: "/h",
    cliPath: "/c",
    cliVersion: "x",
    canResume: true,
    concurrency: 1,
    ...over,
  });
}
