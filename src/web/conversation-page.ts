/**
 * A conversation's chain (GET /dashboard/conversations/<owner>/<name>/<issue>/<agent>): the
 * totals at the top, the branch and pull request, the sessions (a poisoned or retired one's
 * stored transcript downloadable while it is kept), then every turn. Rendered here from the
 * same Chain that GET /api/conversations/… returns as JSON, so the two cannot disagree; every
 * value goes through escapeHtml, and numbers carry their exact value in data-value.
 */
import { shortSessionId } from "../core/redact.js";
import { conversationPath } from "../core/conversation-path.js";
import type { Chain, ChainSession, ChainTurn } from "../sql/stats/conversation.js";
import { escapeHtml as e, shell } from "./dashboard-page.js";

const nf = new Intl.NumberFormat("en-US");
const int = (n: number | null): string => (n === null ? "–" : nf.format(Math.round(n)));
const usd = (v: number | null): string => (v === null ? "–" : `$${v.toFixed(4)}`);
/** "03-10 12:34" (UTC), the full time in its title. */
const when = (iso: string | null): string =>
  iso === null
    ? "–"
    : `<span title="${e(iso)}">${e(`${iso.slice(5, 10)} ${iso.slice(11, 16)}`)}</span>`;
const secs = (ms: number | null): string => (ms === null ? "–" : `${(ms / 1000).toFixed(1)} s`);
const bytes = (n: number): string =>
  n < 1024
    ? `${n} B`
    : n < 1024 * 1024
      ? `${(n / 1024).toFixed(1)} KiB`
      : `${(n / 1048576).toFixed(1)} MiB`;
/** Only http(s) links leave the page; anything else is shown as text. */
const safeUrl = (u: string | null): string | null => (u && /^https?:\/\//i.test(u) ? u : null);
const link = (u: string | null, text: string): string => {
  const s = safeUrl(u);
  return s ? `<a href="${e(s)}" target="_blank" rel="noopener noreferrer">${e(text)}</a>` : e(text);
};
const pill = (cls: string, text: string, title = ""): string =>
  `<span class="pill ${e(cls)}"${title ? ` title="${e(title)}"` : ""}>${e(text)}</span>`;
const muted = (t = "–") => `<span class="muted">${e(t)}</span>`;

function kpi(name: string, label: string, value: string, raw: number, detail: string): string {
  return `<div class="kpi"><div class="label">${e(label)}</div><div class="value" data-stat="${name}" data-value="${raw}">${e(value)}</div><div class="detail">${detail}</div></div>`;
}

export function conversationPage(nonce: string, chain: Chain, opts: { signOut: boolean }): string {
  const t = chain.totals;
  const title = `${chain.repo}#${chain.issueNumber} · ${chain.agent}`;
  const issuePage =
    chain.turns.find((x) => safeUrl(x.triggerUrl))?.triggerUrl.split("#")[0] ?? null;
  const signOut = opts.signOut
    ? `<form method="post" action="/dashboard/logout"><button type="submit">Sign out</button></form>`
    : "";
  const tokens = t.inputTokens + t.cacheReadTokens + t.cacheCreationTokens;
  const b = chain.branch;
  const branch = b
    ? `<dl class="kv">
  <dt>Branch</dt><dd><code data-stat="branch">${e(b.branch)}</code> <span class="muted">onto ${e(b.baseBranch)}</span></dd>
  <dt>Commits pushed</dt><dd data-stat="commits" data-value="${b.commits}">${int(b.commits)}${b.headSha ? ` <span class="muted mono">head ${e(b.headSha.slice(0, 12))}</span>` : ""}</dd>
  <dt>Pull request</dt><dd data-stat="pull">${b.pullNumber !== null ? link(b.pullUrl, `#${b.pullNumber}`) : muted("none opened")}</dd>
</dl>`
    : `<p class="muted" data-stat="branch">No changes published yet: no branch, no pull request.</p>`;
  return shell(
    nonce,
    `Tether · ${title}`,
    `<header class="top">
  <div class="brand"><span class="logo" aria-hidden="true"></span>Tether <span class="muted">conversation</span></div>
  <a class="back" href="/dashboard">← Dashboard</a>
  <div class="grow"></div>
  <a href="${e(conversationPath(chain, "/api/conversations"))}">JSON</a>
  ${signOut}
</header>
<main id="main" data-loaded="conversation">
  <h1>${link(issuePage, `${chain.repo}#${chain.issueNumber}`)} <span class="muted">· agent ${e(chain.agent)}</span></h1>
  <section class="kpis">
    ${kpi("turns", "Turns", int(t.turns), t.turns, `${int(t.tasks)} tasks · ${int(t.refused)} refused by a spend limit`)}
    ${kpi("resumed", "Resumed", int(t.resumed), t.resumed, `of ${int(t.followUps)} follow-ups`)}
    ${kpi("cost", "Cost", usd(t.costUsd), t.costUsd, t.turns ? `avg ${usd(t.costUsd / t.turns)} per turn` : "no turns")}
    ${kpi("tokens", "Tokens in", int(tokens), tokens, `${int(t.cacheReadTokens)} cached · ${int(t.outputTokens)} out`)}
    ${kpi("failed", "Failed turns", int(t.failed), t.failed, t.turns ? `of ${int(t.turns)} turns` : "no turns")}
    ${kpi("duration", "Run time", secs(t.durationMs), t.durationMs, "the turns' CLI runs, added up")}
  </section>
  <section class="grid-1-2">
    <div class="panel"><div class="panel-head"><h2>Changes</h2></div>${branch}</div>
    <div class="panel">
      <div class="panel-head"><h2>Sessions</h2><span class="muted">a poisoned or retired session's transcript can be downloaded while it is kept</span></div>
      <div class="scroll"><table id="sessions">${sessionsTable(chain)}</table></div>
    </div>
  </section>
  <section class="panel">
    <div class="panel-head"><h2>Turns</h2><span class="muted">newest first${chain.turns.length < t.tasks ? `, the latest ${chain.turns.length} of ${t.tasks}` : ""}</span></div>
    <div class="scroll"><table id="turns" class="num-table">${turnsTable(chain.turns)}</table></div>
  </section>
</main>`,
  );
}

function sessionsTable(chain: Chain): string {
  const head = `<thead><tr><th>Session</th><th>CLI</th><th>State</th><th>Created (UTC)</th><th>Last used</th><th>Transcript</th></tr></thead>`;
  if (!chain.sessions.length)
    return `${head}<tbody><tr><td class="empty" colspan="6">No session yet.</td></tr></tbody>`;
  const row = (s: ChainSession) => {
    const broken = s.state === "poisoned" || s.state === "retired";
    const transcript =
      s.transcriptBytes === null
        ? muted(broken ? "not kept" : "–")
        : broken
          ? `<a data-download="${e(s.sessionId)}" href="${e(`${conversationPath(chain)}/transcripts/${encodeURIComponent(s.sessionId)}`)}" download>download (${e(bytes(s.transcriptBytes))})</a>`
          : muted(bytes(s.transcriptBytes));
    return `<tr data-session="${e(s.sessionId)}"><td class="mono" title="${e(s.sessionId)}">${e(shortSessionId(s.sessionId))}…</td><td>${e(s.cli)}</td><td>${pill(s.state === "active" ? "resumed" : s.state, s.state)}${s.stateReason ? ` <span class="muted">${e(s.stateReason)}</span>` : ""}</td><td>${when(s.createdAt)}</td><td>${when(s.lastUsedAt)}</td><td>${transcript}</td></tr>`;
  };
  return `${head}<tbody>${chain.sessions.map(row).join("")}</tbody>`;
}

function turnsTable(turns: ChainTurn[]): string {
  const cols = [
    ["#", true],
    ["Created (UTC)", false],
    ["Trigger", false],
    ["Session", false],
    ["Decision", false],
    ["Model", false],
    ["Input", true],
    ["Cache read", true],
    ["Cache write", true],
    ["Output", true],
    ["Cost", true],
    ["Duration", true],
    ["Outcome", false],
    ["Changes", false],
    ["Answer", false],
  ] as const;
  const head = `<thead><tr>${cols.map(([t, n]) => `<th${n ? ' class="n"' : ""}>${e(t)}</th>`).join("")}</tr></thead>`;
  if (!turns.length)
    return `${head}<tbody><tr><td class="empty" colspan="${cols.length}">No tasks.</td></tr></tbody>`;
  const row = (t: ChainTurn) => {
    const decision = t.resumeDecision
      ? pill(
          t.resumeDecision === "resume" ? "resumed" : "fresh",
          t.resumeDecision +
            (t.resumeReason && t.resumeReason !== "resumed" ? ` · ${t.resumeReason}` : ""),
        )
      : muted();
    const page = t.triggerUrl.split("#")[0] ?? "";
    const answer =
      t.answerCommentId !== null && safeUrl(page)
        ? link(`${page}#issuecomment-${t.answerCommentId}`, "answer")
        : muted();
    const changes = t.publishResult
      ? `${e(t.publishResult)}${t.pullOpened !== null ? ` · opened #${t.pullOpened}` : ""}`
      : muted();
    const outcome = t.outcome
      ? pill(t.outcome, t.outcome, t.failureReason ?? "")
      : pill(t.status, t.status);
    const n = (v: number | null, text = int(v)) =>
      `<td class="n"${v === null ? "" : ` data-value="${v}"`}>${e(text)}</td>`;
    return `<tr data-task="${t.id}"><td class="n">${t.id}</td><td>${when(t.createdAt)}</td><td title="${e(`asked by ${t.triggerAuthor}`)}">${link(t.triggerUrl, t.trigger)}</td><td class="mono" title="${e(t.sessionId ?? "")}">${t.sessionId ? `${e(shortSessionId(t.sessionId))}…` : "–"}</td><td>${decision}</td><td>${t.model ? e(t.model) : muted()}${t.cacheTtl ? ` <span class="muted">cache ${e(t.cacheTtl)}</span>` : ""}</td>${n(t.inputTokens)}${n(t.cacheReadTokens)}${n(t.cacheCreationTokens)}${n(t.outputTokens)}${n(t.costUsd, usd(t.costUsd))}${n(t.durationMs, secs(t.durationMs))}<td>${outcome}</td><td>${changes}</td><td>${answer}</td></tr>`;
  };
  return `${head}<tbody>${turns.map(row).join("")}</tbody>`;
}

/** The page for a key with no task (a mistyped link, or one whose tasks are gone). */
export function noConversationPage(nonce: string, what: string): string {
  return shell(
    nonce,
    "Tether · no such conversation",
    `<main class="center">
  <div class="panel login">
    <h1><span class="logo" aria-hidden="true"></span>No such conversation</h1>
    <p>${e(what)}</p>
    <p><a href="/dashboard">← Dashboard</a></p>
  </div>
</main>`,
  );
}
