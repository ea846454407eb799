/**
 * The session controls a comment gives (#30): `/model <name>` (this turn on another model),
 * `/sessions` (the issue's sessions) and `/resume <id-prefix>` (which session the next turn
 * resumes). What each replies, and what it checks first, so that intake only wires them in.
 */
import { findCli, forkingClis } from "../cli-registry.js";
import { MODEL_ID, type AgentConfig, type RepoConfig } from "../config/repo-config.js";
import type { TaskKey } from "../core/task.js";
import type { Queryable } from "../sql/db.js";
import { unforceFresh } from "../sql/tasks/enqueue.js";
import {
  issueSessions,
  pinSession,
  priorSession,
  SESSION_PREFIX,
  sessionsByPrefix,
  type SessionSummary,
} from "../sql/sessions.js";
import { formatSpent } from "../spend/spend-limits.js";

/** Sessions are named by this many characters of their id, never the whole id. */
export const ID_PREFIX = 8;

export type ModelCheck = { ok: true; model: string } | { ok: false; reply: string };

/**
 * Whether `/model <name>` may run this agent's turn on `name`: a model id in shape, and one of
 * the agent's `models` when it lists them (its own `model` always is).
 */
export function checkModel(agent: AgentConfig, name: string): ModelCheck {
  const who = code(agent.mention);
  const allowed = agent.models ? [...new Set([agent.model, ...agent.models])] : null;
  const choices = allowed
    ? `It may run on: ${allowed.map(code).join(", ")}.`
    : `It may run on any model its CLI accepts; its own is ${code(agent.model)}.`;
  if (!name)
    return {
      ok: false,
      reply: `${who}: \`/model\` needs a model name, e.g. \`${agent.mention} /model ${allowed?.[1] ?? agent.model} <request>\`. ${choices} Nothing was run.`,
    };
  if (!MODEL_ID.test(name))
    return {
      ok: false,
      reply: `${who}: ${code(name.slice(0, 100))} is not a model id (letters, digits, \`.\`, \`-\`, \`_\`, \`:\` and brackets, at most 100). ${choices} Nothing was run.`,
    };
  if (allowed && !allowed.includes(name))
    return {
      ok: false,
      reply: `${who}: ${code(name)} is not one of this agent's models (\`models\` in \`.github/tether.yml\`). ${choices} Nothing was run.`,
    };
  return { ok: true, model: name };
}

export type ResumeChoice =
  { ok: true; sessionId: string; reply: string } | { ok: false; reply: string };

/**
 * `/resume <id-prefix>`: the key's one session whose id starts with the prefix becomes the one
 * its next turn resumes (priorSession), under the usual resume guards. None, several, or one that
 * can never be resumed again get a reply saying so, and nothing changes.
 */
export async function chooseSession(
  db: Queryable,
  key: TaskKey,
  mention: string,
  prefix: string,
): Promise<ResumeChoice> {
  const who = code(mention);
  const list = `\`${mention} /sessions\` lists them`;
  if (!SESSION_PREFIX.test(prefix))
    return {
      ok: false,
      reply: `${who}: \`/resume\` needs the first characters (at least 4) of one of its sessions on this issue; ${list}. Nothing was changed.`,
    };
  const found = await sessionsByPrefix(db, key, prefix);
  if (!found.length)
    return {
      ok: false,
      reply: `${who}: no session of this agent on this issue starts with ${code(prefix)}; ${list}. Nothing was changed.`,
    };
  if (found.length > 1)
    return {
      ok: false,
      reply: `${who}: ${found.length} sessions start with ${code(prefix)} (${found.map((s) => code(s.sessionId.slice(0, prefix.length + 4))).join(", ")}): give more of the id. Nothing was changed.`,
    };
  const chosen = found[0]!;
  const short = code(chosen.sessionId.slice(0, ID_PREFIX));
  if (chosen.state !== "active")
    return {
      ok: false,
      reply: `${who}: session ${short} is ${chosen.state} (it broke, or its CLI would not resume it) and is never resumed again. Nothing was changed.`,
    };
  await pinSession(db, key, chosen.sessionId);
  // A `/fresh` still queued would start fresh and pass the choice by: the choice is the later word.
  const unforced = await unforceFresh(db, key);
  return {
    ok: true,
    sessionId: chosen.sessionId,
    reply: `${who}: the next turn resumes session ${short}${unforced.length ? " (instead of the fresh session a queued `/fresh` asked for)" : ""}, if the resume rules allow it (\`${mention} /status\` tells); its answer's footer says what happened.`,
  };
}

export type ForkChoice = { ok: true; sessionId: string } | { ok: false; reply: string };

/**
 * `/from <agent>`: the session of `<agent>` (its name or mention) on this issue that `agent`'s
 * turn starts as a fork of. Same CLI only, and only a CLI that forks (its registry entry); the other
 * agent needs a session here that can still be resumed.
 */
export async function chooseFork(
  db: Queryable,
  config: RepoConfig,
  key: TaskKey,
  from: string,
): Promise<ForkChoice> {
  const me = config.agents[key.agent]!;
  const who = code(me.mention);
  const name = from.replace(/^@/, "").toLowerCase();
  const found = Object.entries(config.agents).find(
    ([n, a]) => n === name || a.mention.toLowerCase() === `@${name}`,
  );
  const agents = Object.entries(config.agents)
    .filter(([n]) => n !== key.agent)
    .map(([n]) => code(n))
    .join(", ");
  if (!found)
    return {
      ok: false,
      reply: `${who}: \`/from\` needs another agent of this repository${from ? `, and ${code(from.slice(0, 40))} is none` : ""} (${agents || "there is no other"}). Nothing was run.`,
    };
  const [source, sourceAgent] = found;
  if (source === key.agent)
    return {
      ok: false,
      reply: `${who}: \`/from\` forks another agent's session; to go on with this agent's own, just ask. Nothing was run.`,
    };
  const cli = me.cli;
  const sourceCli = sourceAgent.cli;
  if (cli !== sourceCli || !findCli(cli)?.forks)
    return {
      ok: false,
      reply: `${who}: an agent can fork only a session of its own CLI, and only on ${forkingClis()}; this one runs on ${cli}, ${code(sourceAgent.mention)} on ${sourceCli}. Nothing was run.`,
    };
  const session = await priorSession(db, { ...key, agent: source });
  if (!session || session.state !== "active")
    return {
      ok: false,
      reply: `${who}: ${code(sourceAgent.mention)} has ${session ? `no session on this issue that can be resumed (its last is ${session.state})` : "no session on this issue"} to fork. Nothing was run.`,
    };
  return { ok: true, sessionId: session.sessionId };
}

/** The `/sessions` reply: every session of `agents` on the issue, newest first. */
export async function describeSessions(
  db: Queryable,
  req: {
    repoId: number;
    repo: string;
    issueNumber: number;
    agents: string[];
    config: RepoConfig;
    now: Date;
  },
): Promise<string> {
  const sessions = await issueSessions(db, req.repoId, req.issueNumber, req.agents);
  const blocks: string[] = [];
  for (const agent of req.agents) {
    const mention = req.config.agents[agent]?.mention ?? `@${agent}`;
    const mine = sessions.filter((s) => s.agent === agent);
    if (!mine.length) {
      blocks.push(`**${code(mention)}**: no session on this issue yet.`);
      continue;
    }
    const next = await priorSession(db, {
      repoId: req.repoId,
      repo: req.repo,
      issueNumber: req.issueNumber,
      agent,
    });
    blocks.push(
      [
        `**${code(mention)} sessions on this issue**`,
        "",
        "| session | turns | last used | state | model | cost |",
        "| --- | --- | --- | --- | --- | --- |",
        ...mine.map((s) => sessionRow(s, s.sessionId === next?.sessionId, req.now)),
      ].join("\n"),
    );
  }
  blocks.push(
    `\`/resume <session>\` makes one of them the session the next turn resumes; ⏭ marks the one it resumes now (the resume rules permitting).`,
  );
  return blocks.join("\n\n");
}

function sessionRow(s: SessionSummary, isNext: boolean, now: Date): string {
  const id = `${code(s.sessionId.slice(0, ID_PREFIX))}${isNext ? " ⏭" : ""}`;
  const models = s.models.length ? s.models.map(code).join(", ") : "—";
  return `| ${id} | ${s.turns} | ${ago(s.lastUsedAt, now)} | ${s.state} | ${models} | ${formatSpent(s.costUsd)} |`;
}

function ago(then: Date, now: Date): string {
  const s = Math.max(0, Math.round((now.getTime() - then.getTime()) / 1000));
  if (s < 90) return `${s} s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min ago`;
  if (s < 48 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

/** A code span for text from a comment or config (a backtick inside cannot end it). */
function code(text: string): string {
  return `\`${text.replace(/`/g, "'")}\``;
}
