/**
 * Savings benchmark, Gemini arm (issue 31): what resuming saves for an agent with `cli: gemini`.
 * The runner's whole turn (runTask: the resume decision, the prompt it builds, the session store
 * in real PostgreSQL) with the real Gemini CLI (@google/gemini-cli, pinned) in Tether's sandbox
 * against the fake Gemini API (test/helpers/fake-gemini.ts), which records every request. GitHub
 * and the workspace are the narrow in-memory fakes of test/integration/run-task.test.ts, not the
 * built app with the GitHub stand-in (bench/savings-codex.ts's way): the turn's code path from the
 * claim on is the same. The thread is savings-thread.ts's: a body of about 10 KB, comments of
 * about 2 KB each, the answers posted back so the thread grows. Resume arm (default resume
 * policy) and cold arm (`resume: {enabled: false}`) alternate turns.
 *
 *   npx tsx bench/savings-gemini.ts [--turns=10] [--out=bench/results/savings-gemini]
 *
 * Billed input is the prompt tokens the fake reports (4 bytes a token over the request body);
 * the fake has no implicit cache, so this is the ratio before any caching Google grants. Writes
 * <out>.md and <out>.json.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPool } from "../src/db/pool.js";
import { createGeminiCli, resolveGeminiPath } from "../src/gemini/gemini-cli.js";
import { createLogger } from "../src/log.js";
import { agentForClis } from "../src/runner/wiring/agent-clis.js";
import { cliAgent } from "../src/runner/wiring/cli-agent.js";
import { runTask } from "../src/runner/turn/run-task.js";
import { Sandbox } from "../src/sandbox/sandbox.js";
import { geminiLayout } from "../src/gemini/session-layout.js";
import { postgresTranscripts } from "../src/sessions/postgres-transcripts.js";
import { claimTasks } from "../src/sql/tasks/claim.js";
import {
  geminiReplies,
  startFakeGemini,
  type FakeGeminiRequest,
} from "../test/helpers/fake-gemini.js";
import { fakeThread, fakeWorkspace, registerTestRuntime } from "../test/helpers/runner-fakes.js";
import { readTask, seedTask } from "../test/helpers/seed.js";
import { accountRequests, BYTES_PER_TOKEN, type PromptBody } from "./savings-accounting.js";
import { answerText, planThread } from "./savings-thread.js";
import { benchDatabase } from "./support.js";
import { postgresTurnStore } from "../src/sql/turn-store.js";

const MODEL = "gemini-2.5-flash";
const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, v = ""] = a.replace(/^--/, "").split("=");
    return [k, v];
  }),
);
const TURNS = Number(args.turns ?? 10);
const OUT = args.out ?? "bench/results/savings-gemini";
const log = createLogger("silent");
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-bench-gemini-"));
const started = Date.now();

type Arm = "resume" | "cold";
interface Row {
  arm: Arm;
  turn: number;
  reason: string;
  requests: number;
  promptTokens: number;
  /** Billed-equivalent input tokens with Gemini's implicit cache simulated (see below). */
  billedTokens: number;
  wallMs: number;
  bodies: FakeGeminiRequest["body"][];
}

/**
 * A Gemini request in the accounting's cache order (savings-accounting.ts): tools, the system
 * instruction, then the contents, one block per part. Gemini 2.5's implicit cache reads a
 * repeated prefix at 0.1× the input price, as the accounting's rule bills a read.
 */
function geminiAsPrompt(body: FakeGeminiRequest["body"], model: string): PromptBody {
  const sys = body?.systemInstruction;
  const sysParts = typeof sys === "string" ? [{ text: sys }] : (sys?.parts ?? []);
  return {
    model,
    tools: (body?.tools ?? []).flatMap((t) => t.functionDeclarations ?? [t]) as Array<
      Record<string, unknown>
    >,
    system: sysParts,
    messages: (body?.contents ?? []).map((c) => ({
      role: c.role ?? "user",
      content: c.parts ?? [],
    })),
  };
}

const pg = await benchDatabase();
const pool = createPool(pg.url, { max: 4 });
const fake = await startFakeGemini({
  defaultReply: (req) => geminiReplies.text(answerText(300, req.n)),
});
const sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(root, "sandbox"), log });
const rows: Row[] = [];
try {
  if (!sandbox.status.ok) throw new Error(`no sandbox: ${sandbox.status.detail}`);
  await registerTestRuntime(pool);
  const cli = createGeminiCli({
    path: resolveGeminiPath({}),
    log,
    baseEnv: {
      PATH: process.env.PATH,
      HOME: root,
      GEMINI_API_KEY: "AIza-bench-key",
      GOOGLE_GEMINI_BASE_URL: fake.url,
    },
  });
  const version = (await cli.probe()).version;
  const agent = agentForClis({
    gemini: cliAgent(cli, {
      log,
      contain: {
        sandbox,
        homes: path.join(root, "homes"),
        transcripts: postgresTranscripts({
          pool,
          cacheRoot: path.join(root, "sessions"),
          log,
          maxBytes: 64 * 1024 * 1024,
          cliVersion: version,
          layout: geminiLayout,
        }),
      },
    }),
  });
  const plan = planThread({
    turns: TURNS,
    bodyBytes: 10_000,
    commentBytes: 2000,
    mention: "@tether",
  });
  const threads = {} as Record<Arm, ReturnType<typeof fakeThread>>;
  for (const arm of ["resume", "cold"] as const) {
    const t = fakeThread({
      stampComments: true,
      agents: {
        tether: {
          name: "tether",
          cli: "gemini",
          model: MODEL,
          timeoutMinutes: 10,
          stallMinutes: 5,
        },
      },
    });
    const settings = await t.loadConfig();
    threads[arm] = {
      ...t,
      getIssue: async () => ({
        title: plan.title,
        body: plan.body,
        author: "alice",
        url: `https://github.com/octo/${arm}/issues/1`,
        isPullRequest: false,
      }),
      loadConfig: async () =>
        settings.ok && arm === "cold"
          ? {
              ...settings,
              settings: {
                ...settings.settings,
                resume: { ...settings.settings.resume, enabled: false },
              },
            }
          : settings,
    } as (typeof threads)[Arm];
  }
  const workspace = fakeWorkspace(path.join(root, "ws"));
  let nextComment = 1_000_000;
  for (let turn = 1; turn <= TURNS; turn++) {
    const c = plan.comments[turn - 1]!;
    for (const arm of ["resume", "cold"] as const) {
      const thread = threads[arm];
      const id = nextComment++;
      thread.comments.push({
        id,
        author: c.author,
        url: `c${id}`,
        body: c.body,
        createdAt: new Date().toISOString(),
      });
      const seeded = await seedTask(pool, {
        repo: `octo/${arm}`,
        issue_number: 1,
        trigger_comment_id: id,
        trigger_author: c.author,
        trigger_body: c.body,
      });
      const [task] = await claimTasks(pool, "bench", "rt", 1);
      if (task?.id !== seeded.id) throw new Error("claimed another task");
      const before = fake.turnRequests().length;
      const t0 = Date.now();
      await runTask(
        {
          store: postgresTurnStore(pool),
          log,
          runnerId: "bench",
          runtimeId: "rt",
          agent,
          workspace,
          github: async () => thread,
          progressIntervalMs: 0,
        },
        task!,
        new AbortController().signal,
      );
      const row = await readTask(pool, seeded.id);
      if (row.status !== "succeeded")
        throw new Error(`turn ${turn} ${arm}: ${String(row.status)} ${String(row.error)}`);
      const reqs: FakeGeminiRequest[] = fake.turnRequests().slice(before);
      rows.push({
        arm,
        turn,
        reason: String(row.resume_reason),
        requests: reqs.length,
        promptTokens: reqs.reduce((n, r) => n + (r.usage?.promptTokenCount ?? 0), 0),
        billedTokens: 0,
        wallMs: Date.now() - t0,
        bodies: reqs.map((r) => r.body),
      });
      console.log(
        `turn ${turn} ${arm.padEnd(6)} ${String(row.resume_reason).padEnd(16)} ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );
    }
  }
  // Each arm is accounted on its own requests, in order, as if each had its own cache.
  for (const arm of ["resume", "cold"] as const) {
    const mine = rows.filter((r) => r.arm === arm);
    const accounts = accountRequests(
      mine.flatMap((r) => r.bodies.map((b) => geminiAsPrompt(b, MODEL))),
    );
    let i = 0;
    for (const r of mine) {
      const a = accounts.slice(i, i + r.bodies.length);
      i += r.bodies.length;
      r.billedTokens = Math.round(a.reduce((n, x) => n + x.billedBytes, 0) / BYTES_PER_TOKEN);
    }
  }
  const of = (arm: Arm, turn: number) => rows.find((r) => r.arm === arm && r.turn === turn)!;
  const ratio = (turn: number) => of("resume", turn).promptTokens / of("cold", turn).promptTokens;
  const billedRatio = (turn: number) =>
    of("resume", turn).billedTokens / of("cold", turn).billedTokens;
  const at = [2, 5, 10].filter((t) => t <= TURNS);
  const sum = (arm: Arm, k: "promptTokens" | "billedTokens" = "promptTokens") =>
    rows.filter((r) => r.arm === arm).reduce((n, r) => n + r[k], 0);
  const md = [
    "# Savings benchmark, Gemini arm",
    "",
    `Gemini CLI ${version}, model \`${MODEL}\`, ${TURNS} turns, the real CLI in the sandbox against the fake Gemini API, through runTask (${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}, ${((Date.now() - started) / 1000).toFixed(0)} s). Command: \`npx tsx bench/savings-gemini.ts${TURNS !== 10 ? ` --turns=${TURNS}` : ""}\`.`,
    "",
    `Resume arm ÷ cold arm, billed-equivalent input per turn (Gemini's implicit cache simulated: a repeated prefix of whole parts at 0.1×, each arm its own cache): ${at.map((t) => `turn ${t}: **${billedRatio(t).toFixed(2)}**`).join(", ")}; whole thread ${(sum("resume", "billedTokens") / sum("cold", "billedTokens")).toFixed(2)}. Without any cache (prompt tokens as sent): ${at.map((t) => `turn ${t}: ${ratio(t).toFixed(2)}`).join(", ")}; whole thread ${(sum("resume") / sum("cold")).toFixed(2)}.`,
    "",
    "| turn | resumed: reason | requests | prompt tokens | billed-equivalent | cold: reason | prompt tokens | billed-equivalent | resumed ÷ cold (billed) | resumed ÷ cold (sent) |",
    "| ---- | --------------- | -------- | ------------- | ----------------- | ------------ | ------------- | ----------------- | ----------------------- | --------------------- |",
    ...Array.from({ length: TURNS }, (_, i) => {
      const r = of("resume", i + 1);
      const c = of("cold", i + 1);
      const n = (x: number) => x.toLocaleString("en");
      return `| ${i + 1} | \`${r.reason}\` | ${r.requests} | ${n(r.promptTokens)} | ${n(r.billedTokens)} | \`${c.reason}\` | ${n(c.promptTokens)} | ${n(c.billedTokens)} | ${billedRatio(i + 1).toFixed(2)} | ${ratio(i + 1).toFixed(2)} |`;
    }),
    "",
  ].join("\n");
  fs.mkdirSync(path.dirname(OUT), { recursive: true });
  fs.writeFileSync(`${OUT}.md`, md);
  fs.writeFileSync(
    `${OUT}.json`,
    JSON.stringify(
      {
        version,
        model: MODEL,
        turns: TURNS,
        rows: rows.map(({ bodies, ...r }) => ({ ...r, apiRequests: bodies.length })),
      },
      null,
      2,
    ) + "\n",
  );
  console.log(`\n${md}`);
} finally {
  await fake.close();
  await pool.end();
  await pg.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
}
