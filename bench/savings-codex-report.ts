/**
 * The savings benchmark's Codex arm (bench/savings-codex.ts): a Responses API request in the
 * cache order the accounting reads (savings-accounting.ts), the figures and checks, and the
 * Markdown report beside Claude's figures. Pure.
 *
 * A Responses request is read as tools, then `instructions`, then the `input` items: a message
 * item is cut into its content parts (one block each, as a Messages API message is), any other
 * item (a reasoning item, a function call and its output) is one block. The API's prompt cache
 * is automatic and prices a cached input token at 0.1× for the GPT-5 family, with no write
 * surcharge, so the rule is the same as Claude's: the longest run of whole blocks repeating the
 * start of an earlier request of the same model (in the same arm) at 0.1×, the rest at 1×.
 */
import { tokens, type PromptBody, type RequestAccount } from "./savings-accounting.js";
import type { Arm } from "./savings-report.js";

/** The parts of a Responses API request body the accounting reads. */
export interface ResponsesPrompt {
  model?: string;
  instructions?: string;
  tools?: ReadonlyArray<Record<string, unknown>>;
  input?: string | ReadonlyArray<Record<string, unknown>>;
}

/** A Responses request as the accounting's PromptBody: tools, instructions, input items. */
export function responsesAsPrompt(body: ResponsesPrompt): PromptBody {
  const input =
    typeof body.input === "string"
      ? [{ type: "message", role: "user", content: body.input }]
      : (body.input ?? []);
  return {
    ...(body.model === undefined ? {} : { model: body.model }),
    ...(body.tools ? { tools: body.tools } : {}),
    ...(body.instructions === undefined ? {} : { system: body.instructions }),
    messages: input.map((item) => {
      const type = typeof item.type === "string" ? item.type : "message";
      const role = typeof item.role === "string" ? item.role : type;
      if (type === "message") {
        const c = item.content;
        const content = typeof c === "string" ? c : Array.isArray(c) ? c : [];
        return { role, content: content as string | Array<Record<string, unknown>> };
      }
      return { role, content: [item] };
    }),
  };
}

/** One turn of one arm of the Codex benchmark, as measured. */
export interface CodexTurnRecord {
  arm: Arm;
  turn: number;
  status: string;
  decision: string;
  reason: string;
  sessionId: string | null;
  commentBytes: number;
  /** The new user message Codex sent (the prompt Tether wrote to its stdin), in bytes. */
  promptBytes: number;
  /** POST /v1/responses requests the turn made. */
  apiRequests: number;
  apiRequestBytes: number;
  wallMs: number;
  accounts: RequestAccount[];
  /** The fake's token-level prompt-cache simulation: input tokens and the cached ones. */
  simulated: Array<{ input: number; cached: number }>;
}

export interface CodexTurnFigures {
  arm: Arm;
  turn: number;
  reason: string;
  promptBytes: number;
  promptOverheadBytes: number;
  apiRequestBytes: number;
  readShare: number;
  billedTokens: number;
  floorTokens: number;
  billedOverFloor: number;
  /** The fake's simulation priced the same way: uncached 1×, cached 0.1×. */
  simulatedBilledTokens: number;
  wallMs: number;
}

export interface CodexCheck {
  name: string;
  pass: boolean;
  detail: string;
}

export interface CodexSummary {
  turns: number;
  cliVersion: string;
  model: string;
  machine: string;
  benchSeconds: number;
  figures: CodexTurnFigures[];
  ratios: Array<{
    turn: number;
    resume: number;
    cold: number;
    ratio: number;
    cumulativeRatio: number;
    simulatedRatio: number;
  }>;
  totals: Record<Arm, { billedTokens: number; simulatedBilledTokens: number; wallMs: number }>;
  checks: CodexCheck[];
}

/** A resumed prompt may exceed its comment by at most this much (guard, markers, turn facts). */
export const MAX_RESUMED_OVERHEAD = 2048;
/** A resumed turn may be billed at most this multiple of its floor. */
export const MAX_OVER_FLOOR = 1.1;

export function codexFigures(r: CodexTurnRecord): CodexTurnFigures {
  const sum = (f: (a: RequestAccount) => number) => r.accounts.reduce((n, a) => n + f(a), 0);
  const total = sum((a) => a.totalBytes);
  const billed = sum((a) => a.billedBytes);
  const floor = sum((a) => a.floorBytes);
  return {
    arm: r.arm,
    turn: r.turn,
    reason: r.reason,
    promptBytes: r.promptBytes,
    promptOverheadBytes: r.promptBytes - r.commentBytes,
    apiRequestBytes: r.apiRequestBytes,
    readShare: total ? sum((a) => a.readBytes) / total : 0,
    billedTokens: tokens(billed),
    floorTokens: tokens(floor),
    billedOverFloor: floor ? billed / floor : NaN,
    simulatedBilledTokens: r.simulated.reduce(
      (n, u) => n + (u.input - u.cached) + 0.1 * u.cached,
      0,
    ),
    wallMs: r.wallMs,
  };
}

export function summarizeCodex(
  records: CodexTurnRecord[],
  meta: Pick<CodexSummary, "turns" | "cliVersion" | "model" | "machine" | "benchSeconds">,
): CodexSummary {
  const figures = records.map(codexFigures);
  const arm = (a: Arm) => figures.filter((f) => f.arm === a).sort((x, y) => x.turn - y.turn);
  const resume = arm("resume");
  const cold = arm("cold");
  let sumResume = 0;
  let sumCold = 0;
  const ratios = resume.flatMap((r) => {
    const c = cold.find((x) => x.turn === r.turn);
    if (!c) return [];
    sumResume += r.billedTokens;
    sumCold += c.billedTokens;
    return [
      {
        turn: r.turn,
        resume: r.billedTokens,
        cold: c.billedTokens,
        ratio: r.billedTokens / c.billedTokens,
        cumulativeRatio: sumResume / sumCold,
        simulatedRatio: r.simulatedBilledTokens / c.simulatedBilledTokens,
      },
    ];
  });
  const total = (list: CodexTurnFigures[]) => ({
    billedTokens: list.reduce((n, f) => n + f.billedTokens, 0),
    simulatedBilledTokens: list.reduce((n, f) => n + f.simulatedBilledTokens, 0),
    wallMs: list.reduce((n, f) => n + f.wallMs, 0),
  });
  return {
    ...meta,
    figures,
    ratios,
    totals: { resume: total(resume), cold: total(cold) },
    checks: codexChecks(records, figures),
  };
}

function codexChecks(records: CodexTurnRecord[], figures: CodexTurnFigures[]): CodexCheck[] {
  const resumeArm = records.filter((r) => r.arm === "resume");
  const coldArm = records.filter((r) => r.arm === "cold");
  const list = (rs: CodexTurnRecord[]) => rs.map((r) => `${r.turn}:${r.reason}`).join(", ");
  const checks: CodexCheck[] = [];
  const badResume = resumeArm.filter((r) =>
    r.turn === 1
      ? r.reason !== "no_prior_session"
      : r.decision !== "resume" || r.reason !== "resumed",
  );
  checks.push({
    name: "resume arm: turn 1 fresh (no_prior_session), every later turn resumed",
    pass: badResume.length === 0 && resumeArm.length > 0,
    detail: badResume.length ? `unexpected: ${list(badResume)}` : "as expected",
  });
  const sessions = new Set(resumeArm.map((r) => r.sessionId));
  checks.push({
    name: "resume arm: one Codex thread for the whole conversation",
    pass: sessions.size === 1 && !sessions.has(null),
    detail: `${sessions.size} thread id(s)`,
  });
  const coldSessions = new Set(coldArm.map((r) => r.sessionId));
  const badCold = coldArm.filter((r) =>
    r.turn === 1
      ? r.reason !== "no_prior_session"
      : r.decision !== "fresh" || r.reason !== "resume_disabled",
  );
  checks.push({
    name: "cold arm: every turn a fresh thread (resume_disabled after the first)",
    pass: badCold.length === 0 && coldArm.length > 0 && coldSessions.size === coldArm.length,
    detail: badCold.length
      ? `unexpected: ${list(badCold)}`
      : `${coldSessions.size} thread id(s) for ${coldArm.length} turns`,
  });
  const notOne = records.filter((r) => r.apiRequests !== 1);
  checks.push({
    name: "one POST /v1/responses per turn (the fake answers with text, no tools)",
    pass: notOne.length === 0,
    detail: notOne.length
      ? notOne.map((r) => `${r.arm} ${r.turn}: ${r.apiRequests} requests`).join("; ")
      : "as expected",
  });
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

/** Claude's ratios from a text-only bench/savings.ts run, when there is one to compare. */
export interface ClaudeRatios {
  /** The bench/savings.ts result the figures come from, relative to the repository. */
  file: string;
  cliVersion: string;
  model: string;
  ratios: Array<{ turn: number; ratio: number; cumulativeRatio: number }>;
}

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const secs = (ms: number) => (ms / 1000).toFixed(2);

function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

export function renderCodexReport(
  s: CodexSummary,
  command: string,
  claude: ClaudeRatios | null,
): string {
  const key = [2, 5, 10, 20, 30, s.turns].filter((t, i, a) => t <= s.turns && a.indexOf(t) === i);
  const armTable = (arm: Arm) =>
    table(
      [
        "turn",
        "reason",
        "prompt → CLI (B)",
        "API request (KB)",
        "cache read",
        "billed-eq. input (tokens)",
        ...(arm === "resume" ? ["floor (tokens)", "billed ÷ floor"] : []),
        "fake's cache simulation (tokens)",
        "wall (s)",
      ],
      s.figures
        .filter((f) => f.arm === arm)
        .sort((a, b) => a.turn - b.turn)
        .map((f) => [
          String(f.turn),
          `\`${f.reason}\``,
          int(f.promptBytes),
          (f.apiRequestBytes / 1000).toFixed(1),
          pct(f.readShare),
          int(f.billedTokens),
          ...(arm === "resume"
            ? f.turn === 1
              ? ["—", "—"]
              : [int(f.floorTokens), f.billedOverFloor.toFixed(3)]
            : []),
          int(f.simulatedBilledTokens),
          secs(f.wallMs),
        ]),
    );
  const claudeAt = (turn: number) => claude?.ratios.find((r) => r.turn === turn);
  const ratioTable = table(
    [
      "turn",
      "Codex resumed (tokens)",
      "Codex cold (tokens)",
      "Codex resumed ÷ cold",
      "cumulative",
      "by the fake's simulation",
      ...(claude ? ["Claude resumed ÷ cold", "cumulative"] : []),
    ],
    s.ratios.map((r) => [
      key.includes(r.turn) ? `**${r.turn}**` : String(r.turn),
      int(r.resume),
      int(r.cold),
      key.includes(r.turn) ? `**${r.ratio.toFixed(2)}**` : r.ratio.toFixed(2),
      r.cumulativeRatio.toFixed(2),
      r.simulatedRatio.toFixed(2),
      ...(claude
        ? [
            claudeAt(r.turn)?.ratio.toFixed(2) ?? "—",
            claudeAt(r.turn)?.cumulativeRatio.toFixed(2) ?? "—",
          ]
        : []),
    ]),
  );
  const t = s.totals;
  const at = key.flatMap((n) => {
    const r = s.ratios.find((x) => x.turn === n);
    return r ? [`turn ${n}: **${r.ratio.toFixed(2)}**`] : [];
  });
  return `# Savings, Codex: resumed thread vs cold start

\`${command}\` (${s.turns} turns). Codex CLI ${s.cliVersion}, model \`${s.model}\`, ${s.machine};
the run took ${s.benchSeconds.toFixed(0)} s.${claude ? ` Claude's figures beside it: ${claude.file} (Claude Code ${claude.cliVersion}, \`${claude.model}\`).` : ""}

Resume arm ÷ cold arm, billed-equivalent input per turn: ${at.join(", ")}.
Whole thread: ${(t.resume.billedTokens / t.cold.billedTokens).toFixed(2)} (${int(t.resume.billedTokens)} vs ${int(t.cold.billedTokens)} tokens); by the fake's token-level simulation ${(t.resume.simulatedBilledTokens / t.cold.simulatedBilledTokens).toFixed(2)}.

## How it is measured

- As bench/savings.ts does for Claude, with \`cli: codex\`: the built app (real runner, the real
  Codex binary in Tether's sandbox, real PostgreSQL), GitHub stood in for locally, a fake
  Responses API that records every request. The same thread (issue body, comments, answers),
  the resume arm on \`octo/warm-arm\`, the cold arm on \`octo/cold-arm\` with
  \`resume: {enabled: false}\`, turns alternating.
- **prompt → CLI**: the new user message of the turn's request, which is the prompt Tether wrote
  to Codex's stdin, verbatim.
- **Billed-equivalent input**: the request read as tools, \`instructions\`, then the \`input\`
  items (a message cut into its content parts, any other item one block); the longest run of
  whole blocks repeating the start of an earlier request of the same model in the same arm at
  0.1× (the GPT-5 family's cached-input price), the rest at 1×; tokens = bytes ÷ 4. The
  **floor** of a resumed turn: everything before the new user message at 0.1×, the message at 1×.
- **Fake's cache simulation**: the token counts the fake reported (bytes ÷ 4, the longest prefix
  of whole input items any earlier request of the model sent counted as cached from 1,024 tokens
  up in steps of 128), priced the same way, for reference. It is harsher on the cold arm than the
  rule above: Codex gives every message item an \`id\` of its thread, so a fresh thread's
  developer messages (about 27 KB) never repeat whole, while the rule compares their content
  parts (what the model reads) and leaves the ids out.
- Kinder to the cold arm than the real API: each cold turn is a new Codex thread, and Codex sends
  the thread id as \`prompt_cache_key\`, which the API uses to route requests to a cache; here a
  cold turn still reads Codex's own prompt from cache.

## Resume arm (\`octo/warm-arm\`)

${armTable("resume")}

## Cold arm (\`octo/cold-arm\`, every turn a fresh thread)

${armTable("cold")}

## Resume ÷ cold${claude ? ", beside Claude's" : ""}

${ratioTable}

Wall time, comment to answer: resume arm ${secs(t.resume.wallMs)} s over the thread, cold arm ${secs(t.cold.wallMs)} s.

## Checks

${s.checks.map((c) => `- ${c.pass ? "PASS" : "**FAIL**"}: ${c.name} (${c.detail})`).join("\n")}
`;
}
