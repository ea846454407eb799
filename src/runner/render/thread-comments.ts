/**
 * What Tether writes in the thread, as pure functions. One comment per task: it is created
 * when the run starts, edited with progress, and finally replaced by the answer, so a task has
 * exactly one answer even when it is retried or its runner crashed (the marker finds it again).
 */
import type { SkippedImage } from "../../core/images.js";
import { findCli } from "../../cli-registry.js";
import { shortenSessionIds, shortSessionId } from "../../core/redact.js";
import { describeReason, type ReasonCode } from "../../core/resume-decision.js";
import type { Outcome, Usage } from "../../core/task.js";
import type { CacheTtl } from "../../core/settings.js";
import {
  dayName,
  formatLimit,
  formatSpent,
  monthName,
  nextMonthStart,
  type ReachedLimit,
} from "../../spend/spend-limits.js";
import { CONFIG_FILE } from "../../config/repo-config.js";

export function taskMarker(taskId: number): string {
  return `<!-- tether:task:${taskId} -->`;
}

export function findTaskMarker(body: string | undefined | null): number | null {
  const m = /<!-- tether:task:(\d+) -->/.exec(body ?? "");
  return m ? Number(m[1]) : null;
}

export interface TrackingState {
  taskId: number;
  agent: string;
  resumed: boolean;
  reason: ReasonCode;
  /** Latest activity, shortest first: tool names and the last bit of text. */
  tools: string[];
  lastText: string | null;
  startedAt: Date;
  now: Date;
  /** The turn's live view (TETHER_PUBLIC_URL set, TETHER_LIVE not off): linked as "watch live". */
  liveUrl?: string;
}

export function renderTracking(s: TrackingState): string {
  const how = s.resumed
    ? s.reason === "compacted"
      ? "🗜️ The session's context is nearly full: compacting it (a summary), then resuming it."
      : s.reason === "forked"
        ? "🍴 Starting from a fork of another agent's session on this issue (/from)."
        : s.reason === "rewound"
          ? "⏪ A comment the session had read was edited or deleted: resuming the session as it stood just before it."
          : "🔗 Resuming the session this issue already has."
    : `🆕 Starting a fresh session: ${describeReason(s.reason)}.`;
  const lines = [`⏳ **${s.agent}** is working on this.`, "", how];
  const secs = Math.max(0, Math.round((s.now.getTime() - s.startedAt.getTime()) / 1000));
  const activity: string[] = [];
  if (s.tools.length) {
    const recent = s.tools
      .slice(-5)
      .map((t) => `\`${t}\``)
      .join(", ");
    activity.push(
      `${s.tools.length} tool call${s.tools.length === 1 ? "" : "s"} so far (latest: ${recent})`,
    );
  }
  if (s.lastText) activity.push(`> ${oneLine(s.lastText, 200)}`);
  const live = s.liveUrl ? ` · 👀 [watch live](${s.liveUrl})` : "";
  lines.push("", `<sub>${secs}s elapsed${live} · \`/cancel\` to stop</sub>`);
  if (activity.length) lines.push("", ...activity);
  lines.push(taskMarker(s.taskId));
  return lines.join("\n");
}

export interface FooterFacts {
  resumed: boolean;
  /** Null when the turn ended before its resume decision (a task swept before it got that far). */
  reason: ReasonCode | null;
  sessionId: string | null;
  usage: Usage | null;
  /**
   * The model the turn ran on; `requested`: a comment's `/model` asked for it, for this turn, or
   * (`escalated`) the CI loop's `escalate` did, for an attempt after a failed one.
   */
  model?: { name: string; requested: boolean; escalated?: boolean };
  /** The CLI stopped the run at this per-turn limit (outcome `turn_limit`). */
  turnLimitUsd?: number;
  /** The conversation's spend with this turn, and its limit when one is set. */
  conversation?: { spentUsd: number; limitUsd?: number };
  /** The prompt cache's lifetime the turn asked for (absent: the CLI's own). */
  cacheTtl?: CacheTtl;
  /** The conversation's page on the dashboard (TETHER_PUBLIC_URL set); behind its token. */
  chainUrl?: string;
  /** Compacted, or not resumed, because the turn's `/model` has a smaller window than the session holds. */
  smallerWindow?: boolean;
  /** A plan turn (`/plan`: read-only, nothing published), or the `/go` turn that carries one out. */
  plan?: "plan" | "approved";
  /** Images from the thread: how many the model was shown, and those left out with why. */
  images?: { shown: number; skipped: SkippedImage[] };
  /** Started by a schedule of `.github/tether.yml` (trigger `schedule`), not by a person. */
  scheduled?: boolean;
  /** The agent's MCP servers that did not start (the turn went on without them), and why. */
  mcpFailed?: Array<{ name: string; why: string }>;
}

export function renderFooter(f: FooterFacts): string {
  const parts: string[] = [];
  const smaller = "the turn's model has a smaller context window";
  if (f.resumed)
    parts.push(
      f.reason === "compacted"
        ? `🗜️ compacted and resumed session${f.smallerWindow ? ` (${smaller})` : ""}`
        : f.reason === "forked"
          ? "🍴 forked session (/from)"
          : f.reason === "rewound"
            ? "⏪ rewound session (a comment it had read changed)"
            : "🔗 resumed session",
    );
  else if (f.reason !== null)
    parts.push(`🆕 fresh session (${f.reason}${f.smallerWindow ? `: ${smaller}` : ""})`);
  else parts.push("no session started");
  if (f.scheduled) parts.push("⏰ schedule");
  if (f.plan === "plan") parts.push("📝 plan (read-only, nothing published)");
  else if (f.plan === "approved") parts.push("▶️ plan approved (/go)");
  if (f.sessionId) parts.push(`\`${shortSessionId(f.sessionId)}\``);
  if (f.model) parts.push(`\`${f.model.name}\`${modelNote(f.model)}`);
  const u = f.usage;
  if (u) {
    parts.push(`${u.numTurns} turn${u.numTurns === 1 ? "" : "s"}`);
    const input = u.inputTokens + u.cacheReadTokens + u.cacheCreationTokens;
    parts.push(
      `${compact(input)} in (${compact(u.cacheReadTokens)} cached${f.cacheTtl ? `, cache ${f.cacheTtl}` : ""}) / ${compact(u.outputTokens)} out`,
    );
    parts.push(`$${u.costUsd.toFixed(4)}`);
    parts.push(`${(u.durationMs / 1000).toFixed(1)}s`);
  }
  if (f.turnLimitUsd !== undefined)
    parts.push(`⛔ stopped at the ${formatLimit(f.turnLimitUsd)} turn limit`);
  const c = f.conversation;
  if (c)
    parts.push(
      `conversation ${formatSpent(c.spentUsd)}${c.limitUsd !== undefined ? ` of ${formatLimit(c.limitUsd)}` : ""}`,
    );
  // Markdown's link syntax breaks on these; the URL is ours (core/conversation-path.ts), but check.
  if (f.chainUrl && /^https?:\/\/[^\s()<>[\]]+$/.test(f.chainUrl))
    parts.push(`[conversation log (operators only)](${f.chainUrl})`);
  if (f.images?.shown)
    parts.push(`🖼️ ${f.images.shown} image${f.images.shown === 1 ? "" : "s"} shown`);
  // Names and words are the operator's and the CLI's; shown as code, cut short.
  if (f.mcpFailed?.length)
    parts.push(
      `🔌 MCP server${f.mcpFailed.length === 1 ? "" : "s"} not started, the turn went on without ${f.mcpFailed.length === 1 ? "it" : "them"}: ${f.mcpFailed
        .slice(0, 10)
        .map((m) => `${codeSpan(m.name)} (${codeSpan(m.why)})`)
        .join(", ")}`,
    );
  const line = `<sub>${parts.join(" · ")}</sub>`;
  const skipped = f.images?.skipped ?? [];
  if (skipped.length === 0) return line;
  return `${line}\n<sub>🖼️ left out: ${skipped.slice(0, MAX_SKIPPED_NAMED).map(renderSkipped).join("; ")}${skipped.length > MAX_SKIPPED_NAMED ? `; and ${skipped.length - MAX_SKIPPED_NAMED} more` : ""}</sub>`;
}

/** Short words as a code span no backtick or line break of theirs can end. */
function codeSpan(text: string): string {
  return `\`${text.replace(/[`\r\n]/g, "").slice(0, 60)}\``;
}

/** Image references named in a footer; the rest are counted. */
const MAX_SKIPPED_NAMED = 5;

/**
 * One left-out image: its link as code (cut, with no backtick that could close the span), so a
 * link someone wrote never renders as markup, a mention or an image in Tether's answer.
 */
function renderSkipped(s: SkippedImage): string {
  const link = s.source.replace(/[`\r\n]/g, "").slice(0, 120);
  return `\`${link}${s.source.length > 120 ? "…" : ""}\` (${s.why})`;
}

function modelNote(m: NonNullable<FooterFacts["model"]>): string {
  if (!m.requested) return "";
  return m.escalated ? " (`escalate`: after a failed CI attempt)" : " (/model, this turn only)";
}

/** GitHub refuses comment bodies over 65,536 characters. */
export const MAX_ANSWER = 60_000;

/**
 * The answer: the agent's text, then what became of its changes (docs/changes.md "Changes"), then the
 * footer. The text gives way to the changes when both would not fit in a comment.
 */
export function renderAnswer(
  taskId: number,
  answer: string,
  footer: FooterFacts,
  changes = "",
): string {
  let body = answer.trim() || "_(The agent finished without a final message.)_";
  const room = MAX_ANSWER - changes.length;
  if (body.length > room) {
    body = `${body.slice(0, room)}\n\n_(Answer cut at ${room} characters: GitHub limits comment size.)_`;
  }
  const middle = changes ? `\n\n---\n${changes}` : "";
  return `${body}${middle}\n\n---\n${renderFooter(footer)}\n${taskMarker(taskId)}`;
}

export interface FailureFacts {
  outcome: Exclude<Outcome, "success">;
  /** A line shown after the explanation (the review the turn's line comments went into). */
  extra?: string;
  detail: string | null;
  taskId: number;
  timeoutMinutes?: number;
  stallMinutes?: number;
  /** The agent's per-turn limit, and what the stopped turn cost (`turn_limit`). */
  turnLimitUsd?: number;
  costUsd?: number;
  /** The agent's name, for the setting to raise. */
  agent?: string;
  /** What the agent had written when it was stopped (`turn_limit`); callers redact it. */
  lastText?: string | null;
  /** The agent's CLI (which API and which credentials are meant); default: the registry's. */
  cli?: string;
}

/** The model API an agent's CLI talks to, in words; "model API" for a CLI not registered. */
function apiOf(cli: string | undefined): { name: string; credentials: string } {
  return findCli(cli)?.api ?? { name: "model API", credentials: "model API credentials" };
}

/** Plain words: what happened and what to do. Never a stack trace; callers redact `detail`. */
export function explainFailure(f: FailureFacts): string {
  switch (f.outcome) {
    case "poisoned":
      return "The conversation no longer fits the model (or the API rejected its history), so this session is retired. Comment again and I will start a fresh session with the whole thread.";
    case "resume_rejected":
      return "I could not resume this issue's session, and tools had already run in this turn, so I did not retry on my own. Comment again to start fresh.";
    case "auth_failed":
      return `The ${apiOf(f.cli).name} refused Tether's credentials (HTTP 401/403), so nothing ran. An operator needs to check the runner's ${apiOf(f.cli).credentials}.`;
    case "timed_out":
      return `The run hit its time limit${f.timeoutMinutes ? ` of ${f.timeoutMinutes} minutes` : ""} and was stopped. Ask for something narrower, or raise \`timeoutMinutes\` for this agent in \`.github/tether.yml\`.`;
    case "stalled":
      return `The run produced no output${f.stallMinutes ? ` for ${f.stallMinutes} minutes` : " for too long"} and was stopped. Comment again to retry; if it keeps happening, an operator should check the runner's connection to the ${apiOf(f.cli).name}.`;
    case "cancelled":
      return "Cancelled with `/cancel`.";
    case "turn_limit": {
      const limit = f.turnLimitUsd !== undefined ? ` of ${formatLimit(f.turnLimitUsd)}` : "";
      const cost = f.costUsd !== undefined ? ` after spending ${formatSpent(f.costUsd)}` : "";
      const setting = `\`agents.${f.agent ?? "<name>"}.turnLimitUsd\``;
      return `The run reached this agent's per-turn spend limit${limit} and the ${findCli(f.cli)?.label ?? "CLI"} stopped it${cost}, before it had finished. The CLI checks the limit after each model call, so a turn can end a little over it. The session is kept: comment again to go on from where it stopped, ask for something smaller, or raise ${setting} in \`${CONFIG_FILE}\`.`;
    }
    case "limit_refused":
      return `Not run: a spend limit was reached${f.detail ? ` (${oneLine(shortenSessionIds(f.detail), 300)})` : ""}. Raise the limit in \`${CONFIG_FILE}\`, then comment again.`;
    case "failed":
      return `The run failed${f.detail ? `: ${oneLine(shortenSessionIds(f.detail), 500)}` : ""}. Comment again to retry; if it keeps failing, an operator can look up task ${f.taskId} in the logs and on the dashboard.`;
  }
}

export function renderFailure(f: FailureFacts, footer: FooterFacts): string {
  const icon = f.outcome === "cancelled" ? "🛑" : f.outcome === "turn_limit" ? "💸" : "⚠️";
  const said = f.outcome === "turn_limit" && f.lastText?.trim() ? lastWords(f.lastText) : "";
  const extra = f.extra ? `\n\n${f.extra}` : "";
  return `${icon} ${explainFailure(f)}${said}${extra}\n\n---\n${renderFooter(footer)}\n${taskMarker(f.taskId)}`;
}

/** What a stopped agent had written, quoted, within GitHub's comment size. */
function lastWords(text: string): string {
  let t = text.trim();
  if (t.length > MAX_ANSWER / 2) t = `${t.slice(0, MAX_ANSWER / 2)}…`;
  const quoted = t
    .split("\n")
    .map((l) => `> ${l}`)
    .join("\n");
  return `\n\nWhat the agent had written when it was stopped:\n\n${quoted}`;
}

export interface RefusalFacts {
  taskId: number;
  /** The agent's name and mention. */
  agent: string;
  mention: string;
  reached: readonly ReachedLimit[];
  /** Whether `/fresh` starts the conversation's count again (`spend.freshResetsConversation`). */
  freshResets: boolean;
  now: Date;
}

/**
 * The reply to a turn a spend limit kept from running: what was spent, the limit, the setting
 * that raises it, and what else would let the conversation go on.
 */
export function renderRefusal(r: RefusalFacts): string {
  const m = `\`${r.mention}\``;
  const lines = r.reached.map((l) => {
    const spent = `**${formatSpent(l.spentUsd)}**`;
    const limit = `**${formatLimit(l.limitUsd)}**`;
    switch (l.kind) {
      case "conversation":
        return `- This conversation (${m} on this issue) has spent ${spent} of its ${limit} limit (\`agents.${r.agent}.conversationLimitUsd\`).`;
      case "repository_month":
        return `- This repository has spent ${spent} of its ${limit} limit for ${monthName(r.now)} (UTC) (\`spend.repositoryMonthlyUsd\`).`;
      case "installation_month":
        return `- This installation (every repository Tether is installed on with this one) has spent ${spent} of its ${limit} limit for ${monthName(r.now)} (UTC) (\`spend.installationMonthlyUsd\`).`;
    }
  });
  const kinds = new Set(r.reached.map((l) => l.kind));
  const ways = [
    `**To go on**, raise the limit in \`${CONFIG_FILE}\` on the default branch (or in the organisation's \`.github\` repository, when the setting comes from there), then comment again.`,
  ];
  if (kinds.has("conversation"))
    ways.push(
      r.freshResets
        ? `Or start over with \`${r.mention} /fresh <request>\`: a fresh session starts a new count here (\`spend.freshResetsConversation: true\`).`
        : "`/fresh` does not help: it starts a new session, not a new count (`spend.freshResetsConversation` is off).",
    );
  if (kinds.has("repository_month") || kinds.has("installation_month"))
    ways.push(
      `Or wait: the monthly count starts again on ${dayName(nextMonthStart(r.now))} (UTC).`,
    );
  return [
    `💸 Not run: a spend limit is reached, so I did not start this turn.`,
    "",
    ...lines,
    "",
    ways.join(" "),
    "",
    "---",
    "<sub>not run · no cost</sub>",
    taskMarker(r.taskId),
  ].join("\n");
}

function compact(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  if (n >= 1_000) return `${(n / 1_000).toFixed(1)}k`;
  return String(n);
}

function oneLine(s: string, max: number): string {
  const flat = s.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
