/**
 * The savings benchmark's figures and checks, from the recorded turns, and the Markdown report
 * that is printed and written to bench/results. Pure.
 */
import { BYTES_PER_TOKEN, PRICE, tokens, type RequestAccount } from "./savings-accounting.js";

export type Arm = "resume" | "cold";

export interface BenchOptions {
  turns: number;
  bodyBytes: number;
  commentBytes: number;
  replyBytes: number;
  /** The fake's policy: read the files a comment needs (savings-agent.ts), or answer with text. */
  agent: "reads" | "text";
  /** Size of each repository file the reading agent reads. */
  fileBytes: number;
  /** Path of the result files without extension. */
  out: string;
  /** The agent CLI both arms run on (`claude` by default, or `opencode`). */
  cli?: "claude" | "opencode";
}

/** One turn of one arm, as measured. */
export interface TurnRecord {
  arm: Arm;
  turn: number;
  taskId: number;
  status: string;
  decision: string;
  reason: string;
  sessionId: string | null;
  /** The comment that asked for this turn, as posted. */
  commentBytes: number;
  /** CLI runs started for the turn (the wrapper saw them). */
  cliRuns: number;
  /** Bytes the runner wrote to the CLI's stdin, summed over its runs. */
  promptBytes: number;
  /** A run was started with --resume. */
  resumeFlag: boolean;
  /** POST /v1/messages requests the turn made. */
  apiRequests: number;
  /** Tool calls the fake asked for (Reads), one a request at most. */
  toolCalls: number;
  /** The files this turn's comment needs (reading agent); [] for text-only. */
  needs: string[];
  /** Their bodies' size as sent. */
  apiRequestBytes: number;
  /** Comment to answer: the task's created_at to finished_at. */
  wallMs: number;
  /** What the CLI reported as its run's duration. */
  cliDurationMs: number;
  accounts: RequestAccount[];
  /** The same requests with the cache cold at the turn's start (accounted on their own). */
  coldCacheAccounts: RequestAccount[];
  /** The fake API's own usage simulation, for reference only (not used for any figure). */
  fakeUsage: unknown[];
}

/** A turn's figures in the units the report shows. */
export interface TurnFigures {
  arm: Arm;
  turn: number;
  reason: string;
  promptBytes: number;
  /** promptBytes − commentBytes: guard, markers and turn facts (resumed), or the thread (cold). */
  promptOverheadBytes: number;
  apiRequests: number;
  toolCalls: number;
  apiRequestBytes: number;
  /** Billed-equivalent input with the cache cold at the start of the turn. */
  coldCacheTokens: number;
  /** Bytes of block JSON in cache order (what the accounting prices). */
  cacheOrderBytes: number;
  readShare: number;
  billedTokens: number;
  billedWithWritesTokens: number;
  strictBilledTokens: number;
  floorTokens: number;
  billedOverFloor: number;
  wallMs: number;
}

export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}

export interface Summary {
  options: BenchOptions;
  cliVersion: string;
  model: string;
  cliPrefixBytes: { toolsAndSystem: number; reminders: number };
  systemStable: Record<Arm, boolean>;
  machine: string;
  benchSeconds: number;
  figures: TurnFigures[];
  ratios: Array<{
    turn: number;
    resume: number;
    cold: number;
    ratio: number;
    cumulativeRatio: number;
  }>;
  /** The same, with the cache cold at the start of every turn. */
  coldCacheRatios: Array<{
    turn: number;
    resume: number;
    cold: number;
    ratio: number;
    cumulativeRatio: number;
  }>;
  totals: Record<
    Arm,
    {
      billedTokens: number;
      billedWithWritesTokens: number;
      strictBilledTokens: number;
      wallMs: number;
      coldCacheTokens: number;
      apiRequests: number;
      toolCalls: number;
    }
  >;
  checks: Check[];
}

/** Turns whose ratio the report calls out: 2, 5 and 10 (the issue's), every tenth, the last. */
export function keyTurns(turns: number): number[] {
  const out = new Set([2, 5, 10]);
  for (let t = 20; t <= turns; t += 10) out.add(t);
  out.add(turns);
  return [...out].filter((t) => t <= turns).sort((a, b) => a - b);
}
/** A resumed prompt may exceed its comment by at most this much (guard, markers, turn facts). */
export const MAX_RESUMED_OVERHEAD = 2048;
/** A resumed turn may be billed at most this multiple of its floor. */
export const MAX_OVER_FLOOR = 1.1;

export function figuresOf(r: TurnRecord): TurnFigures {
  const sum = (f: (a: RequestAccount) => number) => r.accounts.reduce((n, a) => n + f(a), 0);
  const cacheOrderBytes = sum((a) => a.totalBytes);
  const billed = sum((a) => a.billedBytes);
  const floor = sum((a) => a.floorBytes);
  return {
    arm: r.arm,
    turn: r.turn,
    reason: r.reason,
    promptBytes: r.promptBytes,
    promptOverheadBytes: r.promptBytes - r.commentBytes,
    apiRequests: r.apiRequests,
    toolCalls: r.toolCalls,
    apiRequestBytes: r.apiRequestBytes,
    coldCacheTokens: tokens(r.coldCacheAccounts.reduce((n, a) => n + a.billedBytes, 0)),
    cacheOrderBytes,
    readShare: cacheOrderBytes ? sum((a) => a.readBytes) / cacheOrderBytes : 0,
    billedTokens: tokens(billed),
    billedWithWritesTokens: tokens(sum((a) => a.billedWithWritesBytes)),
    strictBilledTokens: tokens(sum((a) => a.strictBilledBytes)),
    floorTokens: tokens(floor),
    billedOverFloor: floor ? billed / floor : NaN,
    wallMs: r.wallMs,
  };
}

export function summarize(
  records: TurnRecord[],
  meta: Omit<Summary, "figures" | "ratios" | "coldCacheRatios" | "totals" | "checks">,
): Summary {
  const figures = records.map(figuresOf);
  const arm = (a: Arm) => figures.filter((f) => f.arm === a).sort((x, y) => x.turn - y.turn);
  const resume = arm("resume");
  const cold = arm("cold");
  const ratiosOf = (pick: (f: TurnFigures) => number) => {
    let sumResume = 0;
    let sumCold = 0;
    return resume.flatMap((r) => {
      const c = cold.find((x) => x.turn === r.turn);
      if (!c) return [];
      sumResume += pick(r);
      sumCold += pick(c);
      return [
        {
          turn: r.turn,
          resume: pick(r),
          cold: pick(c),
          ratio: pick(r) / pick(c),
          cumulativeRatio: sumResume / sumCold,
        },
      ];
    });
  };
  const ratios = ratiosOf((f) => f.billedTokens);
  const coldCacheRatios = ratiosOf((f) => f.coldCacheTokens);
  const total = (list: TurnFigures[]) => ({
    billedTokens: list.reduce((n, f) => n + f.billedTokens, 0),
    billedWithWritesTokens: list.reduce((n, f) => n + f.billedWithWritesTokens, 0),
    strictBilledTokens: list.reduce((n, f) => n + f.strictBilledTokens, 0),
    wallMs: list.reduce((n, f) => n + f.wallMs, 0),
    coldCacheTokens: list.reduce((n, f) => n + f.coldCacheTokens, 0),
    apiRequests: list.reduce((n, f) => n + f.apiRequests, 0),
    toolCalls: list.reduce((n, f) => n + f.toolCalls, 0),
  });
  return {
    ...meta,
    figures,
    ratios,
    coldCacheRatios,
    totals: { resume: total(resume), cold: total(cold) },
    checks: checksOf(records, figures),
  };
}

function checksOf(records: TurnRecord[], figures: TurnFigures[]): Check[] {
  const resumeArm = records.filter((r) => r.arm === "resume");
  const coldArm = records.filter((r) => r.arm === "cold");
  const list = (rs: TurnRecord[]) =>
    rs.map((r) => `${r.turn}:${r.reason}${r.resumeFlag ? "(--resume)" : ""}`).join(", ");
  const checks: Check[] = [];

  const badResume = resumeArm.filter((r) =>
    r.turn === 1
      ? r.reason !== "no_prior_session" || r.resumeFlag
      : r.decision !== "resume" || r.reason !== "resumed" || !r.resumeFlag,
  );
  checks.push({
    name: "resume arm: turn 1 fresh (no_prior_session), every later turn resumed with --resume",
    pass: badResume.length === 0 && resumeArm.length > 0,
    detail: badResume.length ? `unexpected: ${list(badResume)}` : "as expected",
  });
  const sessions = new Set(resumeArm.map((r) => r.sessionId));
  checks.push({
    name: "resume arm: one session for the whole thread",
    pass: sessions.size === 1 && !sessions.has(null),
    detail: `${sessions.size} session id(s)`,
  });
  const badCold = coldArm.filter((r) =>
    r.turn === 1
      ? r.reason !== "no_prior_session" || r.resumeFlag
      : r.decision !== "fresh" || r.reason !== "resume_disabled" || r.resumeFlag,
  );
  checks.push({
    name: "cold arm: every turn fresh (resume_disabled after the first)",
    pass: badCold.length === 0 && coldArm.length > 0,
    detail: badCold.length ? `unexpected: ${list(badCold)}` : "as expected",
  });
  if (records.some((r) => r.needs.length)) {
    // The reading agent: a cold start reads every file its comment needs; a resumed session
    // reads only the files no earlier turn of it read.
    const known = new Set<string>();
    const bad = records.filter((r) => {
      const expected =
        r.arm === "cold" ? r.needs.length : r.needs.filter((f) => !known.has(f)).length;
      if (r.arm === "resume") for (const f of r.needs) known.add(f);
      return r.cliRuns !== 1 || r.toolCalls !== expected || r.apiRequests !== expected + 1;
    });
    checks.push({
      name: "one CLI run a turn; the cold arm reads every file its comment needs, the resumed session only those it has not read (one request per Read, then the answer)",
      pass: bad.length === 0,
      detail: bad.length
        ? bad
            .map(
              (r) =>
                `${r.arm} ${r.turn}: ${r.cliRuns} runs, ${r.toolCalls} reads, ${r.apiRequests} requests`,
            )
            .join("; ")
        : "as expected",
    });
    return checksAfter(checks, figures);
  }
  const notOne = records.filter((r) => r.cliRuns !== 1 || r.apiRequests !== 1);
  checks.push({
    name: "one CLI run and one POST /v1/messages per turn (the fake answers with text, no tools)",
    pass: notOne.length === 0,
    detail: notOne.length
      ? notOne
          .map((r) => `${r.arm} ${r.turn}: ${r.cliRuns} runs, ${r.apiRequests} requests`)
          .join("; ")
      : "as expected",
  });
  return checksAfter(checks, figures);
}

function checksAfter(checks: Check[], figures: TurnFigures[]): Check[] {
  const resumed = figures.filter((f) => f.arm === "resume" && f.turn > 1);
  if (resumed.length) {
    const overheads = resumed.map((f) => f.promptOverheadBytes);
    const max = Math.max(...overheads);
    checks.push({
      name: `resumed prompts stay flat: prompt − comment ≤ ${MAX_RESUMED_OVERHEAD} B on every resumed turn`,
      pass: max <= MAX_RESUMED_OVERHEAD,
      detail: `prompt − comment from ${Math.min(...overheads)} to ${max} B over turns 2–${resumed.at(-1)!.turn}`,
    });
    const worst = Math.max(...resumed.map((f) => f.billedOverFloor));
    checks.push({
      name: `every resumed turn billed within ${Math.round((MAX_OVER_FLOOR - 1) * 100)}% of its floor`,
      pass: worst <= MAX_OVER_FLOOR,
      detail: `worst billed ÷ floor ${worst.toFixed(3)}`,
    });
  }
  return checks;
}

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)}`;
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const secs = (ms: number) => (ms / 1000).toFixed(2);

function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

export function renderReport(s: Summary): string {
  const o = s.options;
  const key = keyTurns(o.turns);
  const command = [
    "npx tsx bench/savings.ts",
    o.turns !== 10 ? ` --turns=${o.turns}` : "",
    o.bodyBytes !== 10_000 ? ` --body-kb=${o.bodyBytes / 1000}` : "",
    o.commentBytes !== 2000 ? ` --comment-kb=${o.commentBytes / 1000}` : "",
    o.replyBytes !== 300 ? ` --reply-bytes=${o.replyBytes}` : "",
    o.cli && o.cli !== "claude" ? ` --cli=${o.cli}` : "",
  ].join("");
  const armTable = (arm: Arm) => {
    const rows = s.figures.filter((f) => f.arm === arm).sort((a, b) => a.turn - b.turn);
    return table(
      [
        "turn",
        "reason",
        "prompt → CLI (B)",
        "API requests",
        "tool calls",
        "API requests (KB)",
        "cache read",
        "billed-eq. input (tokens)",
        "… cache cold between turns",
        ...(arm === "resume" ? ["floor (tokens)", "billed ÷ floor"] : []),
        "wall (s)",
      ],
      rows.map((f) => [
        String(f.turn),
        `\`${f.reason}\``,
        int(f.promptBytes),
        String(f.apiRequests),
        String(f.toolCalls),
        kb(f.apiRequestBytes),
        pct(f.readShare),
        int(f.billedTokens),
        int(f.coldCacheTokens),
        ...(arm === "resume"
          ? f.turn === 1
            ? ["—", "—"]
            : [int(f.floorTokens), f.billedOverFloor.toFixed(3)]
          : []),
        secs(f.wallMs),
      ]),
    );
  };
  const ratioTable = table(
    ["turn", "resume (tokens)", "cold (tokens)", "resume ÷ cold", "cumulative resume ÷ cold"],
    s.ratios.map((r) => [
      key.includes(r.turn) ? `**${r.turn}**` : String(r.turn),
      int(r.resume),
      int(r.cold),
      key.includes(r.turn) ? `**${r.ratio.toFixed(2)}**` : r.ratio.toFixed(2),
      r.cumulativeRatio.toFixed(2),
    ]),
  );
  const coldCacheTable = table(
    ["turn", "resume (tokens)", "cold (tokens)", "resume ÷ cold", "cumulative resume ÷ cold"],
    s.coldCacheRatios.map((r) => [
      key.includes(r.turn) ? `**${r.turn}**` : String(r.turn),
      int(r.resume),
      int(r.cold),
      key.includes(r.turn) ? `**${r.ratio.toFixed(2)}**` : r.ratio.toFixed(2),
      r.cumulativeRatio.toFixed(2),
    ]),
  );
  const t = s.totals;
  const variant = (name: string, k: keyof (typeof t)["resume"]) => [
    name,
    int(t.resume[k]),
    int(t.cold[k]),
    (t.resume[k] / t.cold[k]).toFixed(2),
  ];
  const totalsTable = table(
    ["pricing", "resume arm (tokens)", "cold arm (tokens)", "resume ÷ cold"],
    [
      variant("the rule above (reads 0.1×, the rest 1×)", "billedTokens"),
      variant("… and cache writes at 1.25×", "billedWithWritesTokens"),
      variant("reads only up to an earlier breakpoint", "strictBilledTokens"),
      variant("the cache cold at the start of every turn", "coldCacheTokens"),
    ],
  );
  const atOf = (list: Summary["ratios"]) =>
    key.flatMap((n) => {
      const r = list.find((x) => x.turn === n);
      return r ? [`turn ${n}: **${r.ratio.toFixed(2)}**`] : [];
    });
  const at = atOf(s.ratios);
  const agent =
    o.agent === "reads"
      ? `The fake model reads files: each comment needs two of the repository's eight files (${kb(o.fileBytes)} KB each), and it asks the CLI to Read each one whose contents are not in the conversation it was sent, one Read a request, then answers with ~${o.replyBytes} B of text. A cold start re-reads what its comment needs; a resumed session reads only files it has not read before.`
      : `The fake model answers every request with ~${o.replyBytes} B of text and calls no tool: one request a turn.`;
  const medianWall = (a: Arm) => {
    const w = s.figures
      .filter((f) => f.arm === a)
      .map((f) => f.wallMs)
      .sort((x, y) => x - y);
    return w.length % 2 ? w[(w.length - 1) / 2]! : (w[w.length / 2 - 1]! + w[w.length / 2]!) / 2;
  };
  const stable = (a: Arm) => (s.systemStable[a] ? "byte-identical" : "NOT identical");
  const opencode = o.cli === "opencode";

  return `# Savings: resumed session vs cold start

\`${command}\` (${o.turns} turns; issue body ${kb(o.bodyBytes)} KB, comments ${kb(o.commentBytes)} KB, answers ${o.replyBytes} B; 1 KB = 1000 bytes).
${opencode ? "opencode" : "Claude Code"} ${s.cliVersion}, model \`${s.model}\`, ${s.machine}; the run took ${s.benchSeconds.toFixed(0)} s.

${agent}

Resume arm ÷ cold arm, billed-equivalent input per turn: ${at.join(", ")}.
Whole thread: ${(t.resume.billedTokens / t.cold.billedTokens).toFixed(2)} (${int(t.resume.billedTokens)} vs ${int(t.cold.billedTokens)} tokens).
API requests over the thread: resume arm ${t.resume.apiRequests} (${t.resume.toolCalls} tool calls), cold arm ${t.cold.apiRequests} (${t.cold.toolCalls} tool calls).
With the cache cold at the start of every turn (turns further apart than its lifetime): ${atOf(s.coldCacheRatios).join(", ")}; whole thread ${(t.resume.coldCacheTokens / t.cold.coldCacheTokens).toFixed(2)}.

## How it is measured

- End to end: the built app (real runner, real ${opencode ? "opencode (`cli: opencode` in both arms)" : "Claude"} CLI, real PostgreSQL), GitHub stood in
  for locally, a fake Messages API that records every request. The resume arm is
  \`octo/warm-arm\` (default config); the cold arm is \`octo/cold-arm\` with
  \`resume: {enabled: false}\`, so every turn there is fresh and its prompt carries the whole
  thread (issue body, every earlier comment and every earlier answer). Same comments, same
  answers, turns alternating between the arms.
- **prompt → CLI**: the bytes the runner wrote to the CLI's stdin, recorded by a wrapper
  (\`${opencode ? "TETHER_OPENCODE_PATH" : "TETHER_CLAUDE_PATH"}\`) that then runs the real binary.
- **API requests**: the \`POST /v1/messages\` requests the CLI sent for the turn and their
  bodies' size; **tool calls**: how many of them the fake answered with a tool call (a Read).
  Other requests (\`HEAD /\` probes) are left out.
- **Billed-equivalent input**, a stated approximation of Anthropic's prompt-cache pricing: each
  request is read in cache order (tools, system, messages) as whole content blocks
  (\`cache_control\` ignored, a string and a one-block list with the same text are the same
  block). The longest run of whole blocks that repeats the start of any earlier request of the
  same model, in the same arm, is a cache read at ${PRICE.cacheRead}× the input price; the rest
  is input at ${PRICE.input}×. Tokens = bytes of block JSON ÷ ${BYTES_PER_TOKEN}. Each arm has a
  cache of its own. Output tokens are not counted (the same answers in both arms).
- **Floor** of a resumed turn: everything before the new user message read from cache
  (${PRICE.cacheRead}×), the new message (focus guard + comment + turn facts) at ${PRICE.input}×.
  The gap to it is the previous answer, which no earlier request had sent.
- **… cache cold between turns**: the same requests, each turn accounted on its own, so
  only a turn's later requests read from its earlier ones: what a turn costs when it comes
  more than the cache's lifetime (five minutes by default, an hour at most) after the last.
- **cache read**: the share of the request's bytes read from cache. **wall**: comment to
  answer (the task's created_at to finished_at), CLI start-up included.
- The CLI's own prompt, ${kb(s.cliPrefixBytes.toolsAndSystem)} KB of tool definitions and system
  prompt plus ${kb(s.cliPrefixBytes.reminders)} KB of reminder blocks in its first user message,
  is sent by both arms on every turn and read from cache after the first. Tools and system were
  ${stable("resume")} across the resume arm's requests and ${stable("cold")} across the cold arm's.

## Resume arm (\`octo/warm-arm\`)

${armTable("resume")}

## Cold arm (\`octo/cold-arm\`, every turn fresh)

${armTable("cold")}

## Resume ÷ cold

${ratioTable}

With the cache cold at the start of every turn:

${coldCacheTable}

Totals over the thread, under the rule and two variants of it. Counting cache writes charges
both arms for the new part of each request; reading only up to an earlier request's
\`cache_control\` breakpoint (as the real API does) takes from the cold arm the CLI's reminder
blocks, which sit before its prompt with no breakpoint after them.

${totalsTable}

Wall time, comment to answer: resume arm ${secs(t.resume.wallMs)} s over the thread (median ${secs(medianWall("resume"))} s a turn), cold arm ${secs(t.cold.wallMs)} s (median ${secs(medianWall("cold"))} s). The fake answers at once, so this is the CLI's start-up, its requests and its tool calls, not the model's time.

## Checks

${s.checks.map((c) => `- ${c.pass ? "PASS" : "**FAIL**"}: ${c.name} (${c.detail})`).join("\n")}
`;
}
