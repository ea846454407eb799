/**
 * The dashboard's HTML: one self-contained document (inline CSS and script, no fonts, no CDN:
 * operators' networks and this project's CI have no internet). The page fetches
 * /api/stats?range=… and draws everything itself, the chart as inline SVG.
 *
 * The script is plain browser JavaScript kept in a string; the browser test
 * (test/browser/dashboard.test.ts) is what checks it. It builds every element with
 * textContent, never innerHTML, so repository names, authors or URLs cannot inject markup.
 */

export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c,
  );
}

function shell(nonce: string, title: string, body: string, script = ""): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
${body}
${script ? `<script nonce="${nonce}">${script}</script>` : ""}
</body>
</html>
`;
}

export function loginPage(nonce: string, error?: string): string {
  return shell(
    nonce,
    "Tether · sign in",
    `<main class="center">
  <form class="panel login" method="post" action="/dashboard/login">
    <h1><span class="logo" aria-hidden="true"></span>Tether dashboard</h1>
    <p class="muted">Enter the dashboard token (<code>TETHER_DASHBOARD_TOKEN</code>).</p>
    ${error ? `<p class="banner" role="alert">${escapeHtml(error)}</p>` : ""}
    <label for="token">Token</label>
    <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
    <button type="submit" class="primary">Sign in</button>
  </form>
</main>`,
  );
}

export function forbiddenPage(nonce: string, reason: string): string {
  return shell(
    nonce,
    "Tether · dashboard off",
    `<main class="center">
  <div class="panel login">
    <h1><span class="logo" aria-hidden="true"></span>Dashboard unavailable</h1>
    <p>${escapeHtml(reason)}</p>
  </div>
</main>`,
  );
}

export function dashboardPage(nonce: string, opts: { signOut: boolean }): string {
  const signOut = opts.signOut
    ? `<form method="post" action="/dashboard/logout"><button type="submit">Sign out</button></form>`
    : "";
  return shell(
    nonce,
    "Tether · operations",
    `<header class="top">
  <div class="brand"><span class="logo" aria-hidden="true"></span>Tether <span class="muted">operations</span></div>
  <div class="seg" role="group" aria-label="Time range">
    <button type="button" data-range="24h">24 h</button><button type="button" data-range="7d">7 d</button><button type="button" data-range="30d">30 d</button>
  </div>
  <div class="grow"></div>
  <span id="updated" class="muted" aria-live="polite"></span>
  <label class="toggle"><input type="checkbox" id="auto"> Auto-refresh (30 s)</label>
  <button type="button" id="refresh">Refresh</button>
  ${signOut}
</header>
<div id="error" class="banner wide" role="alert" hidden></div>
<main id="main" class="loading">
  <section class="kpis">
    <div class="kpi"><div class="label">Resume rate</div><div class="value" data-stat="resumeRate">–</div><div class="detail" data-stat="resumeDetail"></div></div>
    <div class="kpi"><div class="label">Sessions across runners</div><div class="value" data-stat="resumedAcross">–</div><div class="detail" data-stat="restoreDetail"></div></div>
    <div class="kpi"><div class="label">Turns</div><div class="value" data-stat="turns">–</div><div class="detail" data-stat="turnsDetail"></div></div>
    <div class="kpi"><div class="label">Cost</div><div class="value" data-stat="cost">–</div><div class="detail" data-stat="costDetail"></div><div class="detail" data-stat="refused"></div></div>
    <div class="kpi"><div class="label">Failed turns</div><div class="value" data-stat="failed">–</div><div class="detail" data-stat="failedDetail"></div></div>
    <div class="kpi"><div class="label">Queue</div><div class="value" data-stat="queueDepth">–</div><div class="detail" data-stat="queueDetail"></div></div>
    <div class="kpi"><div class="label">Running</div><div class="value" data-stat="running">–</div><div class="detail" data-stat="runningDetail"></div></div>
  </section>
  <section class="grid-2-1">
    <div class="panel">
      <div class="panel-head"><h2>Resume rate over time</h2>
        <div class="legend"><span class="sw line"></span>resume rate <span class="sw resumed"></span>resumed <span class="sw fresh"></span>fresh follow-ups <span class="sw first"></span>first turns</div>
      </div>
      <div id="chart" class="chart"></div>
    </div>
    <div class="panel">
      <div class="panel-head"><h2>Resume decisions by reason</h2><span class="muted" id="reasons-total"></span></div>
      <ul id="reasons" class="reasons"></ul>
    </div>
  </section>
  <section class="grid-1-1">
    <div class="panel">
      <div class="panel-head"><h2>Tokens and cost per turn</h2><span class="muted">averages over turns that reported usage</span></div>
      <div class="scroll"><table id="savings" class="num-table"></table></div>
      <p id="savings-note" class="note"></p>
    </div>
    <div class="panel">
      <div class="panel-head"><h2>Runners</h2><span class="muted" id="queue-line"></span></div>
      <div class="scroll"><table id="runners"></table></div>
      <div class="panel-head sub"><h2>Outcomes</h2><span class="muted">turns in this range</span></div>
      <div id="outcomes" class="chips"></div>
      <div class="panel-head sub"><h2>Changes</h2><span class="muted">what agents' changes became</span></div>
      <div id="changes" class="chips"></div>
    </div>
  </section>
  <section class="panel">
    <div class="panel-head"><h2>By agent CLI</h2><span class="muted">Codex cost is Tether's estimate from its tokens</span></div>
    <div class="scroll"><table id="clis" class="num-table"></table></div>
  </section>
  <section class="panel">
    <div class="panel-head"><h2>By repository and agent</h2><span class="muted" id="repos-note"></span></div>
    <div class="scroll tall"><table id="repos" class="num-table"></table></div>
  </section>
  <section class="panel">
    <div class="panel-head"><h2>Latest tasks</h2><span class="muted">newest first, any status</span></div>
    <div class="scroll tall"><table id="latest"></table></div>
  </section>
</main>`,
    SCRIPT,
  );
}

const STYLE = String.raw`
:root {
  --bg: #f5f6f8; --panel: #fff; --text: #1f2328; --muted: #5f6873; --border: #d9dee4;
  --grid: #eceff2; --accent: #0969da; --resumed: #1f883d; --fresh: #bf8700; --first: #8c959f;
  --bad: #cf222e; --chip: #eef1f4;
  color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0f1419; --panel: #171d24; --text: #e6edf3; --muted: #9aa5b1; --border: #2d3640;
    --grid: #222a33; --accent: #4493f8; --resumed: #3fb950; --fresh: #d29922; --first: #6e7681;
    --bad: #f85149; --chip: #222a33;
  }
}
* { box-sizing: border-box; }
html, body { margin: 0; background: var(--bg); color: var(--text); }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", "DejaVu Sans", sans-serif; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, "Liberation Mono", "DejaVu Sans Mono", monospace; font-size: 12.5px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
h1 { font-size: 20px; margin: 0 0 8px; display: flex; align-items: center; gap: 8px; }
h2 { font-size: 14px; margin: 0; font-weight: 600; }
.muted { color: var(--muted); }
button { font: inherit; color: var(--text); background: var(--panel); border: 1px solid var(--border);
  border-radius: 6px; padding: 4px 10px; cursor: pointer; }
button:hover { border-color: var(--muted); }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; padding: 7px 14px; }
.logo { display: inline-block; width: 18px; height: 18px; border-radius: 5px; vertical-align: -3px;
  margin-right: 6px; background: linear-gradient(135deg, var(--resumed), var(--accent)); }
.top { position: sticky; top: 0; z-index: 5; display: flex; align-items: center; gap: 12px;
  padding: 10px 24px; background: var(--panel); border-bottom: 1px solid var(--border); flex-wrap: wrap; }
.top form { margin: 0; }
.brand { font-weight: 650; font-size: 16px; white-space: nowrap; }
.brand .muted { font-weight: 400; }
.grow { flex: 1; }
.seg { display: inline-flex; border: 1px solid var(--border); border-radius: 7px; overflow: hidden; }
.seg button { border: 0; border-radius: 0; padding: 4px 12px; }
.seg button + button { border-left: 1px solid var(--border); }
.seg button[aria-pressed="true"] { background: var(--accent); color: #fff; }
.toggle { display: inline-flex; align-items: center; gap: 6px; white-space: nowrap; cursor: pointer; }
.banner { background: #fff1f0; color: #82071e; border: 1px solid #ffcecb; border-radius: 6px; padding: 8px 12px; }
@media (prefers-color-scheme: dark) { .banner { background: #3a1d20; color: #ffb1ab; border-color: #6e2a2f; } }
.banner.wide { margin: 12px 24px 0; }
main { max-width: 1600px; margin: 0 auto; padding: 16px 24px 32px; display: grid; gap: 16px; }
main.loading { opacity: .6; }
.center { min-height: 100vh; display: grid; place-items: center; }
.panel { background: var(--panel); border: 1px solid var(--border); border-radius: 8px; padding: 14px 16px; min-width: 0; }
.panel-head { display: flex; align-items: baseline; justify-content: space-between; gap: 12px; margin-bottom: 10px; flex-wrap: wrap; }
.login { width: min(420px, 92vw); display: grid; gap: 10px; }
.login input { font: inherit; padding: 7px 10px; border: 1px solid var(--border); border-radius: 6px; background: var(--bg); color: var(--text); }
.kpis { display: grid; grid-template-columns: repeat(6, minmax(0, 1fr)); gap: 12px; }
.kpi { background: var(--panel); border: 1px solid var(--border); border-radius: 8px; padding: 12px 14px; min-width: 0; }
.kpi .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.kpi .value { font-size: 26px; font-weight: 650; font-variant-numeric: tabular-nums; margin-top: 2px; white-space: nowrap; }
.kpi .detail { color: var(--muted); font-size: 12.5px; line-height: 1.35; margin-top: 2px; }
.kpi .value.good { color: var(--resumed); }
.kpi .value.warn { color: var(--fresh); }
td .warn { color: var(--fresh); }
.kpi .value.bad { color: var(--bad); }
.grid-2-1 { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 1fr); gap: 16px; }
.grid-1-1 { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; }
@media (max-width: 1180px) { .kpis { grid-template-columns: repeat(3, minmax(0, 1fr)); } }
@media (max-width: 1000px) { .grid-2-1, .grid-1-1 { grid-template-columns: minmax(0, 1fr); } }
@media (max-width: 560px) { .kpis { grid-template-columns: repeat(2, minmax(0, 1fr)); } .top, main { padding-left: 12px; padding-right: 12px; } }
.legend { color: var(--muted); font-size: 12px; display: flex; align-items: center; gap: 6px; flex-wrap: wrap; }
.sw { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-left: 6px; }
.sw.line { height: 3px; background: var(--accent); }
.sw.resumed { background: var(--resumed); opacity: .55; }
.sw.fresh { background: var(--fresh); opacity: .55; }
.sw.first { background: var(--first); opacity: .35; }
.chart { position: relative; height: 260px; }
.chart svg { display: block; width: 100%; height: 100%; }
.chart .axis { fill: var(--muted); font-size: 11px; font-variant-numeric: tabular-nums; }
.chart .gridline { stroke: var(--grid); stroke-width: 1; }
.chart .bar-resumed { fill: var(--resumed); opacity: .5; }
.chart .bar-fresh { fill: var(--fresh); opacity: .5; }
.chart .bar-first { fill: var(--first); opacity: .3; }
.chart .rate-line { fill: none; stroke: var(--accent); stroke-width: 2.25; stroke-linejoin: round; stroke-linecap: round; }
.chart .rate-dot { fill: var(--panel); stroke: var(--accent); stroke-width: 2; }
.chart .hover { fill: transparent; }
.chart .hover:hover { fill: var(--text); opacity: .05; }
.chart .empty { fill: var(--muted); font-size: 13px; }
.tip { position: absolute; pointer-events: none; background: var(--text); color: var(--panel); border-radius: 6px;
  padding: 6px 9px; font-size: 12px; line-height: 1.4; white-space: nowrap; z-index: 3; font-variant-numeric: tabular-nums; }
.reasons { list-style: none; margin: 0; padding: 0; display: grid; gap: 5px; }
.reasons li { display: grid; grid-template-columns: minmax(120px, 11em) minmax(0, 1fr) 4.5em 3.8em; align-items: center; gap: 8px; font-size: 13px; }
.reasons li.zero { color: var(--muted); }
.reasons .name { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; cursor: help; }
.reasons .bar { height: 8px; background: var(--chip); border-radius: 4px; overflow: hidden; }
.reasons .bar span { display: block; height: 100%; background: var(--fresh); border-radius: 4px; }
.reasons li.resumed .bar span { background: var(--resumed); }
.reasons li.first .bar span { background: var(--first); }
.reasons .count, .reasons .share { text-align: right; font-variant-numeric: tabular-nums; }
.reasons .share { color: var(--muted); }
.scroll { overflow: auto; }
.scroll.tall { max-height: 440px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 5px 8px; border-bottom: 1px solid var(--grid); text-align: left; white-space: nowrap; vertical-align: middle; }
th { color: var(--muted); font-weight: 600; font-size: 12px; position: sticky; top: 0; background: var(--panel); z-index: 1; }
tbody tr:hover td { background: var(--bg); }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.empty { color: var(--muted); text-align: center; padding: 18px; white-space: normal; }
.num-table th:first-child, .num-table td:first-child { text-align: left; }
.rate { display: inline-flex; align-items: center; gap: 6px; justify-content: flex-end; }
.rate .mini { width: 48px; height: 6px; background: var(--chip); border-radius: 3px; overflow: hidden; display: inline-block; }
.rate .mini span { display: block; height: 100%; background: var(--resumed); }
.pill { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; background: var(--chip); }
.pill.succeeded, .pill.success, .pill.resumed { background: color-mix(in srgb, var(--resumed) 18%, transparent); color: var(--resumed); }
.pill.failed, .pill.poisoned, .pill.auth_failed, .pill.timed_out, .pill.stalled, .pill.resume_rejected, .pill.turn_limit { background: color-mix(in srgb, var(--bad) 15%, transparent); color: var(--bad); }
.pill.running, .pill.queued { background: color-mix(in srgb, var(--accent) 15%, transparent); color: var(--accent); }
.pill.fresh, .pill.limit_refused { background: color-mix(in srgb, var(--fresh) 18%, transparent); color: var(--fresh); }
.dot { display: inline-block; width: 8px; height: 8px; border-radius: 50%; margin-right: 6px; background: var(--bad); }
.dot.alive { background: var(--resumed); }
.clip { max-width: 22em; overflow: hidden; text-overflow: ellipsis; }
.note { margin: 10px 0 0; color: var(--muted); }
.panel-head.sub { margin: 16px 0 8px; }
.chips { display: flex; flex-wrap: wrap; gap: 6px; }
.chips .pill { font-variant-numeric: tabular-nums; }
.note strong { color: var(--text); }
`;

const SCRIPT = String.raw`
"use strict";
(function () {
  var REASONS = {
    resumed: "Resumed the key's session",
    no_prior_session: "First turn: the key had no session yet",
    forced_fresh: "Someone asked for a fresh run (/fresh or a rerun)",
    resume_disabled: "The repository config says resume: false",
    runtime_mismatch: "The session lives on another runner",
    workdir_changed: "The working directory changed or is gone",
    poisoned: "The session was poisoned or retired",
    history_edited: "A comment in the session's history was edited or deleted",
    expired: "The session is older than its time to live",
    context_budget: "The session's context is too full",
    cli_cannot_resume: "The Claude binary cannot resume",
    resume_rejected: "The CLI rejected the resume; retried fresh",
    session_too_large: "The session's transcript grew past the size bound",
    context_overflow: "The resumed session ran out of context; retried fresh",
    compacted: "The session's context was nearly full: compacted (summarised), then resumed",
    compaction_failed: "The session's context was nearly full and compacting it failed; ran fresh"
  };
  var FAILED = ["failed", "poisoned", "resume_rejected", "auth_failed", "timed_out", "stalled", "turn_limit"];
  var REFRESH_MS = 30000;
  var params = new URLSearchParams(location.search);
  var state = {
    range: ["24h", "7d", "30d"].indexOf(params.get("range")) >= 0 ? params.get("range") : "24h",
    auto: localStorage.getItem("tether.autoRefresh") !== "false",
    data: null, timer: null, inflight: null, loadedAt: 0
  };

  // ---- formatting
  var nf = new Intl.NumberFormat("en-US");
  function int(n) { return n === null || n === undefined ? "–" : nf.format(Math.round(n)); }
  function pct(r) { return r === null || r === undefined ? "–" : (r * 100).toFixed(1) + "%"; }
  function usd(v) {
    if (v === null || v === undefined) return "–";
    if (Math.abs(v) < 1) return "$" + v.toFixed(4);
    return "$" + v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  // Totals in cents; per-turn figures keep four decimals, where the savings show.
  function usdTotal(v) {
    if (v === null || v === undefined) return "–";
    return "$" + v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  function compact(n) {
    if (n === null || n === undefined) return "–";
    var a = Math.abs(n);
    if (a < 10000) return int(n);
    if (a < 1e6) return (n / 1e3).toFixed(1) + "k";
    if (a < 1e9) return (n / 1e6).toFixed(2) + "M";
    return (n / 1e9).toFixed(2) + "G";
  }
  function age(s) {
    if (s === null || s === undefined) return "–";
    s = Math.max(0, Math.round(s));
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " m " + (s % 60) + " s";
    if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " m";
    return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
  }
  function ms(v) {
    if (v === null || v === undefined) return "–";
    if (v < 1000) return Math.round(v) + " ms";
    if (v < 60000) return (v / 1000).toFixed(1) + " s";
    return age(v / 1000);
  }
  function ago(iso) { return age((Date.now() - Date.parse(iso)) / 1000) + " ago"; }
  function when(iso) { return new Date(iso).toLocaleString(); }
  function safeUrl(u) { return typeof u === "string" && /^https?:\/\//i.test(u) ? u : null; }

  // ---- DOM helpers (textContent only)
  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (attrs[k] === null || attrs[k] === undefined) continue;
      if (k === "text") el.textContent = attrs[k];
      else if (k === "cls") el.className = attrs[k];
      else el.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return el;
  }
  var SVG = "http://www.w3.org/2000/svg";
  function s(tag, attrs, text) {
    var el = document.createElementNS(SVG, tag);
    for (var k in attrs) el.setAttribute(k, attrs[k]);
    if (text !== undefined) el.textContent = text;
    return el;
  }
  function set(name, text, cls) {
    var el = document.querySelector('[data-stat="' + name + '"]');
    el.textContent = text;
    if (cls !== undefined) el.className = "value" + (cls ? " " + cls : "");
    return el;
  }
  function link(href, text) {
    var u = safeUrl(href);
    return u ? h("a", { href: u, target: "_blank", rel: "noopener noreferrer", text: text }) : document.createTextNode(text);
  }
  function table(el, head, rows, emptyText) {
    el.textContent = "";
    var tr = h("tr");
    head.forEach(function (c) { tr.appendChild(h("th", { cls: c.n ? "n" : null, text: c.t, title: c.title })); });
    el.appendChild(h("thead", null, tr));
    var body = h("tbody");
    if (!rows.length) body.appendChild(h("tr", null, h("td", { cls: "empty", colspan: String(head.length), text: emptyText })));
    rows.forEach(function (r) { body.appendChild(r); });
    el.appendChild(body);
  }
  function td(content, cls, title) {
    var cell = h("td", { cls: cls || null, title: title || null });
    if (typeof content === "string") cell.textContent = content; else if (content) cell.appendChild(content);
    return cell;
  }

  // ---- KPIs
  function renderKpis(d) {
    var t = d.totals;
    var rate = set("resumeRate", pct(d.resumeRate), d.resumeRate === null ? "" : d.resumeRate >= 0.7 ? "good" : "warn");
    rate.setAttribute("data-value", d.resumeRate === null ? "" : String(d.resumeRate));
    set("resumeDetail", int(t.resumed) + " resumed of " + int(t.followUps) + " follow-ups");
    var mv = d.sessions;
    set("resumedAcross", int(mv.resumedAcross), "");
    set("restoreDetail", int(mv.restoredFromStore) + " restored from Postgres" +
      (mv.storeRestoreMsP50 === null ? "" : " (p50 " + int(mv.storeRestoreMsP50) + " ms)") +
      ", " + int(mv.restoredFromCache) + " from a runner's cache, " + int(mv.compacted) + " compacted");
    set("turns", int(t.turns)).setAttribute("data-value", String(t.turns));
    set("turnsDetail", int(t.firstTurns) + " first · " + int(t.freshFollowUps) + " fresh follow-ups");
    set("cost", usdTotal(t.costUsd));
    var saved = d.savings.costSavedPerResumedTurnUsd;
    set("costDetail", saved === null ? "avg " + usd(t.turns ? t.costUsd / t.turns : null) + " per turn" : usd(saved) + " saved per resumed turn");
    var refused = set("refused", int(t.refused) + " refused by a spend limit");
    refused.setAttribute("data-value", String(t.refused));
    var failed = FAILED.reduce(function (sum, k) { return sum + (d.outcomes[k] || 0); }, 0);
    set("failed", int(failed), failed ? "bad" : "");
    set("failedDetail", t.turns ? pct(failed / t.turns) + " of turns" : "no turns");
    var q = d.queue;
    set("queueDepth", int(q.depth), q.oldestAgeSeconds !== null && q.oldestAgeSeconds > 600 ? "warn" : "");
    set("queueDetail", q.depth ? "oldest waiting " + age(q.oldestAgeSeconds) : "nothing waiting");
    set("running", int(q.running));
    var total = d.runners.length;
    set("runningDetail", q.runnersAlive + " of " + total + " runner" + (total === 1 ? "" : "s") + " alive");
  }

  // ---- chart
  // The count axis has four steps; a whole, round step keeps its labels whole and round.
  function niceMax(v) {
    if (v <= 4) return 4;
    var raw = v / 4, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10];
    for (var i = 0; i < steps.length; i++) {
      var step = steps[i] * p;
      if (step >= raw && Number.isInteger(step)) return step * 4;
    }
    return 40 * p;
  }
  function tickLabel(iso, bucket, first) {
    var d = new Date(iso);
    if (bucket === "day") return d.toLocaleDateString("en-US", { month: "short", day: "numeric" });
    var hh = String(d.getHours()).padStart(2, "0") + ":00";
    return first || d.getHours() === 0 ? d.toLocaleDateString("en-US", { month: "short", day: "numeric" }) + " " + hh : hh;
  }
  function drawChart(d) {
    var box = document.getElementById("chart");
    box.textContent = "";
    var W = Math.max(320, box.clientWidth), H = box.clientHeight || 260;
    var m = { l: 46, r: 46, t: 10, b: 26 };
    var pw = W - m.l - m.r, ph = H - m.t - m.b;
    var series = d.series, n = series.length;
    var svg = s("svg", { id: "rate-chart", viewBox: "0 0 " + W + " " + H, role: "img",
      "aria-label": "Resume rate per " + d.bucket, "data-buckets": String(n) });
    var maxTurns = niceMax(series.reduce(function (a, p) { return Math.max(a, p.turns); }, 0));
    var x = function (i) { return m.l + (i + 0.5) * (pw / n); };
    var yRate = function (r) { return m.t + ph * (1 - r); };
    var yCount = function (c) { return m.t + ph * (1 - c / maxTurns); };
    [0, 0.25, 0.5, 0.75, 1].forEach(function (r) {
      svg.appendChild(s("line", { class: "gridline", x1: m.l, x2: m.l + pw, y1: yRate(r), y2: yRate(r) }));
      svg.appendChild(s("text", { class: "axis", x: m.l - 6, y: yRate(r) + 4, "text-anchor": "end" }, Math.round(r * 100) + "%"));
      svg.appendChild(s("text", { class: "axis", x: m.l + pw + 6, y: yRate(r) + 4 }, int(maxTurns * r)));
    });
    var bw = Math.max(1, (pw / n) * 0.7);
    series.forEach(function (p, i) {
      var x0 = x(i) - bw / 2, base = m.t + ph;
      var parts = [["bar-resumed", p.resumed], ["bar-fresh", p.followUps - p.resumed], ["bar-first", p.turns - p.followUps]];
      parts.forEach(function (part) {
        var hgt = (ph * part[1]) / maxTurns;
        svg.appendChild(s("rect", { class: part[0], x: x0, y: base - hgt, width: bw, height: Math.max(0, hgt), "data-i": String(i) }));
        base -= hgt;
      });
    });
    var dPath = "", points = 0, prev = false;
    series.forEach(function (p, i) {
      if (p.resumeRate === null) { prev = false; return; }
      dPath += (prev ? "L" : "M") + x(i).toFixed(1) + " " + yRate(p.resumeRate).toFixed(1);
      prev = true; points++;
    });
    svg.appendChild(s("path", { class: "rate-line", d: dPath || "M0 0", "data-points": String(points) }));
    series.forEach(function (p, i) {
      if (p.resumeRate !== null && (n <= 60 || points === 1)) svg.appendChild(s("circle", { class: "rate-dot", cx: x(i), cy: yRate(p.resumeRate), r: 3 }));
    });
    var every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(pw / 80))));
    for (var i = 0; i < n; i += every) {
      svg.appendChild(s("text", { class: "axis", x: x(i), y: H - 8, "text-anchor": "middle" }, tickLabel(series[i].start, d.bucket, i === 0)));
    }
    if (!d.totals.followUps) {
      svg.appendChild(s("text", { class: "empty", x: m.l + pw / 2, y: m.t + ph / 2, "text-anchor": "middle" },
        d.totals.turns ? "No follow-up turns in this range: nothing to resume yet" : "No turns in this range"));
    }
    var tip = h("div", { cls: "tip", hidden: "" });
    series.forEach(function (p, i) {
      var r = s("rect", { class: "hover", x: m.l + i * (pw / n), y: m.t, width: pw / n, height: ph });
      r.addEventListener("mouseenter", function () {
        tip.textContent = "";
        tip.appendChild(h("div", { text: new Date(p.start).toLocaleString() }));
        tip.appendChild(h("div", { text: "resume rate " + pct(p.resumeRate) }));
        tip.appendChild(h("div", { text: int(p.resumed) + " resumed / " + int(p.followUps) + " follow-ups" }));
        tip.appendChild(h("div", { text: int(p.turns) + " turns · " + usdTotal(p.costUsd) }));
        tip.hidden = false;
        var left = x(i) + 10;
        tip.style.left = Math.min(left, W - 190) + "px";
        tip.style.top = m.t + 4 + "px";
      });
      r.addEventListener("mouseleave", function () { tip.hidden = true; });
      svg.appendChild(r);
    });
    box.appendChild(svg);
    box.appendChild(tip);
  }

  // ---- reasons
  function renderReasons(d) {
    var list = document.getElementById("reasons");
    list.textContent = "";
    var total = d.totals.turns;
    var codes = Object.keys(d.reasons).sort(function (a, b) {
      if (a === "resumed") return -1;
      if (b === "resumed") return 1;
      return d.reasons[b] - d.reasons[a];
    });
    var max = codes.reduce(function (a, c) { return Math.max(a, d.reasons[c]); }, 0);
    codes.forEach(function (code) {
      var count = d.reasons[code];
      var fill = h("span");
      fill.style.width = (max ? (100 * count) / max : 0) + "%";
      var kind = code === "resumed" || code === "compacted" ? "resumed" : code === "no_prior_session" ? "first" : "";
      list.appendChild(h("li", { cls: kind + (count ? "" : " zero"), "data-reason": code },
        h("span", { cls: "name mono", title: REASONS[code] || "A reason code this dashboard does not know", text: code }),
        h("span", { cls: "bar" }, fill),
        h("span", { cls: "count", text: int(count) }),
        h("span", { cls: "share", text: total ? pct(count / total) : "–" })));
    });
    document.getElementById("reasons-total").textContent = int(total) + " turns";
  }

  // ---- savings
  function renderSavings(d) {
    var sv = d.savings;
    var cols = [["Resumed", sv.resumed], ["Fresh follow-up", sv.freshFollowUp], ["Fresh first turn", sv.freshFirst]];
    var rows = [
      ["Turns", function (p) { return int(p.turns); }],
      ["Avg input tokens", function (p) { return int(p.avgInputTokens); }],
      ["Avg cache read tokens", function (p) { return int(p.avgCacheReadTokens); }],
      ["Avg cache write tokens", function (p) { return int(p.avgCacheCreationTokens); }],
      ["Avg output tokens", function (p) { return int(p.avgOutputTokens); }],
      ["Avg cost", function (p) { return usd(p.avgCostUsd); }],
      ["Avg duration", function (p) { return ms(p.avgDurationMs); }]
    ];
    var head = [{ t: "" }].concat(cols.map(function (c) { return { t: c[0], n: true }; }));
    table(document.getElementById("savings"), head, rows.map(function (r) {
      var tr = h("tr", null, td(r[0]));
      cols.forEach(function (c) { tr.appendChild(td(r[1](c[1]), "n")); });
      return tr;
    }), "");
    var note = document.getElementById("savings-note");
    note.textContent = "";
    if (sv.costSavedPerResumedTurnUsd === null) {
      note.textContent = "Not enough finished resumed and fresh follow-up turns in this range to compare.";
    } else {
      var saved = sv.costSavedPerResumedTurnUsd, tokens = sv.uncachedTokensSavedPerResumedTurn;
      note.appendChild(document.createTextNode("A resumed turn cost "));
      note.appendChild(h("strong", { "data-stat": "costSaved", text: usd(Math.abs(saved)) + (saved >= 0 ? " less" : " more") }));
      note.appendChild(document.createTextNode(" than a fresh follow-up"));
      if (tokens !== null) {
        note.appendChild(document.createTextNode(" and sent "));
        note.appendChild(h("strong", { text: int(Math.abs(tokens)) + (tokens >= 0 ? " fewer" : " more") }));
        note.appendChild(document.createTextNode(" uncached input tokens"));
      }
      note.appendChild(document.createTextNode(", on average."));
    }
  }

  // ---- runners and queue
  function renderRunners(d) {
    var q = d.queue;
    document.getElementById("queue-line").textContent = int(q.depth) + " queued" +
      (q.depth ? " (oldest " + age(q.oldestAgeSeconds) + ")" : "") + " · " + int(q.running) + " running" +
      (q.answersPending ? " · " + int(q.answersPending) + " answer" + (q.answersPending === 1 ? "" : "s") + " waiting for GitHub" : "");
    table(document.getElementById("runners"), [
      { t: "Runner" }, { t: "CLI" }, { t: "Sandbox", title: "how this runner runs agents" }, { t: "Heartbeat" }, { t: "Running", n: true, title: "running tasks / concurrency" }
    ], d.runners.map(function (r) {
      return h("tr", { "data-runner": r.id },
        td(h("span", null, h("span", { cls: "mono", text: r.id }), h("span", { cls: "muted", text: r.hostname === r.id ? "" : "  " + r.hostname })), "clip", r.id + " on " + r.hostname),
        td((r.cliVersion || "–") + (r.canResume === false ? " (no resume)" : "")),
        td(h("span", { cls: r.sandbox && r.sandbox.indexOf("bwrap") === 0 ? "" : "warn", "data-sandbox": r.sandbox || "", text: r.sandbox || "–" }), "clip", r.sandbox || "not reported"),
        td(h("span", null, h("span", { cls: "dot" + (r.alive ? " alive" : ""), title: r.alive ? "alive" : "silent" }), ago(r.heartbeatAt)), null, when(r.heartbeatAt)),
        td(int(r.runningTasks) + " / " + int(r.concurrency), "n"));
    }), "No runner has registered yet.");
  }

  function renderChanges(d) {
    var box = document.getElementById("changes");
    box.textContent = "";
    var c = d.changes;
    if (!c) return;
    [["pull requests opened", c.pullRequestsOpened, "success"], ["commits pushed", c.commitsPushed, "success"],
     ["published", c.published, "success"], ["patches (forks)", c.patches, "running"]].forEach(function (x) {
      box.appendChild(h("span", { cls: "pill " + x[2], "data-changes": x[0], text: x[0] + " " + int(x[1]) }));
    });
    [["refused", c.refused], ["failed", c.failed]].forEach(function (x) {
      Object.keys(x[1]).sort().forEach(function (why) {
        box.appendChild(h("span", { cls: "pill failed", "data-changes": x[0] + ":" + why, text: x[0] + ": " + why + " " + int(x[1][why]) }));
      });
    });
  }

  function renderOutcomes(d) {
    var box = document.getElementById("outcomes");
    box.textContent = "";
    var codes = Object.keys(d.outcomes).filter(function (k) { return d.outcomes[k] > 0; })
      .sort(function (a, b) { return d.outcomes[b] - d.outcomes[a]; });
    if (!codes.length) box.appendChild(h("span", { cls: "muted", text: "No turns in this range." }));
    codes.forEach(function (k) {
      box.appendChild(h("span", { cls: "pill " + (k === "pending" ? "running" : k), "data-outcome": k, text: k + " " + int(d.outcomes[k]) }));
    });
  }

  // ---- repositories
  function rateCell(r) {
    var fill = h("span");
    fill.style.width = (r === null ? 0 : r * 100) + "%";
    return h("span", { cls: "rate" }, h("span", { text: pct(r) }), h("span", { cls: "mini" }, fill));
  }
  function renderRepos(d) {
    table(document.getElementById("repos"), [
      { t: "Repository" }, { t: "Agent" }, { t: "Turns", n: true }, { t: "Follow-ups", n: true }, { t: "Resumed", n: true },
      { t: "Resume rate", n: true }, { t: "Cost", n: true }, { t: "Refused", n: true }, { t: "Input tok", n: true }, { t: "Cache read tok", n: true },
      { t: "Cache write tok", n: true }, { t: "Output tok", n: true }
    ], d.repos.map(function (r) {
      return h("tr", { "data-repo": r.repo + "/" + r.agent },
        td(r.repo, "clip", r.repo), td(r.agent), td(int(r.turns), "n"), td(int(r.followUps), "n"), td(int(r.resumed), "n"),
        td(rateCell(r.resumeRate), "n"), td(usdTotal(r.costUsd), "n", usd(r.costUsd)),
        td(int(r.refused), "n", "tasks a spend limit kept from running"),
        td(compact(r.inputTokens), "n", int(r.inputTokens)), td(compact(r.cacheReadTokens), "n", int(r.cacheReadTokens)),
        td(compact(r.cacheCreationTokens), "n", int(r.cacheCreationTokens)), td(compact(r.outputTokens), "n", int(r.outputTokens)));
    }), "No turns in this range.");
    document.getElementById("repos-note").textContent = d.reposTotal > d.repos.length
      ? "busiest " + d.repos.length + " of " + d.reposTotal : d.reposTotal + " repository/agent pair" + (d.reposTotal === 1 ? "" : "s");
  }

  // ---- per CLI
  function renderClis(d) {
    var clis = Object.keys(d.byCli || {});
    table(document.getElementById("clis"), [
      { t: "CLI" }, { t: "Turns", n: true }, { t: "Follow-ups", n: true }, { t: "Resumed", n: true },
      { t: "Resume rate", n: true }, { t: "Cost", n: true }, { t: "Fresh follow-ups by reason" }
    ], clis.map(function (cli) {
      var c = d.byCli[cli];
      var reasons = Object.keys(c.reasons).filter(function (k) { return k !== "resumed" && k !== "no_prior_session" && c.reasons[k] > 0; })
        .sort(function (a, b) { return c.reasons[b] - c.reasons[a]; })
        .map(function (k) { return k + " " + int(c.reasons[k]); }).join(", ");
      return h("tr", { "data-cli": cli },
        td(cli), td(int(c.turns), "n"), td(int(c.followUps), "n"), td(int(c.resumed), "n"),
        td(rateCell(c.resumeRate), "n"),
        td((c.costEstimated ? "≈ " : "") + usdTotal(c.costUsd), "n", c.costEstimated ? "estimated: " + usd(c.costUsd) : usd(c.costUsd)),
        td(reasons || "–", "clip", reasons));
    }), "No turns in this range.");
  }

  // ---- latest tasks
  function renderLatest(d) {
    table(document.getElementById("latest"), [
      { t: "#", n: true }, { t: "Created" }, { t: "Task" }, { t: "Agent" }, { t: "Status" }, { t: "Outcome" },
      { t: "Decision" }, { t: "Session" }, { t: "Duration", n: true }, { t: "Cost", n: true }, { t: "Answer" }
    ], d.latest.map(function (t) {
      var decision = t.resumeDecision
        ? h("span", { cls: "pill " + (t.resumeDecision === "resume" ? "resumed" : "fresh"), title: REASONS[t.resumeReason] || "" ,
            text: t.resumeDecision + (t.resumeReason && t.resumeReason !== "resumed" ? " · " + t.resumeReason : "") })
        : h("span", { cls: "muted", text: "–" });
      return h("tr", { "data-task": String(t.id) },
        td(String(t.id), "n"),
        td(ago(t.createdAt), null, when(t.createdAt)),
        td(link(t.triggerUrl, t.repo + "#" + t.issueNumber), "clip", "asked by " + t.triggerAuthor),
        td(t.agent),
        td(h("span", { cls: "pill " + t.status, text: t.status })),
        td(t.outcome ? h("span", { cls: "pill " + t.outcome, text: t.outcome }) : h("span", { cls: "muted", text: "–" })),
        td(decision),
        td(t.sessionId ? h("span", { cls: "mono", text: t.sessionId.slice(0, 8) + "…" }) : "–", null, t.sessionId || ""),
        td(ms(t.durationMs), "n"),
        td(usd(t.costUsd), "n"),
        td(t.answerUrl ? link(t.answerUrl, "answer") : h("span", { cls: "muted", text: "–" })));
    }), "No tasks yet.");
  }

  // ---- loading
  function showError(text) {
    var el = document.getElementById("error");
    el.textContent = text || "";
    el.hidden = !text;
  }
  function render(d) {
    state.data = d;
    renderKpis(d); drawChart(d); renderReasons(d); renderSavings(d); renderRunners(d); renderOutcomes(d); renderClis(d); renderChanges(d); renderRepos(d); renderLatest(d);
    document.getElementById("main").classList.remove("loading");
    document.body.setAttribute("data-loaded", d.range);
  }
  function load() {
    if (state.inflight) state.inflight.abort();
    var ctl = new AbortController();
    state.inflight = ctl;
    var range = state.range;
    return fetch("/api/stats?range=" + encodeURIComponent(range), { headers: { accept: "application/json" }, credentials: "same-origin", signal: ctl.signal })
      .then(function (res) {
        return res.json().catch(function () { return { error: "HTTP " + res.status }; }).then(function (body) {
          if (res.status === 401) throw new Error("Signed out: reload the page to sign in again.");
          if (!res.ok) throw new Error(body.error || "HTTP " + res.status);
          return body;
        });
      })
      .then(function (d) {
        if (range !== state.range) return;
        state.loadedAt = Date.now();
        showError("");
        render(d);
        document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
      })
      .catch(function (err) {
        if (err.name === "AbortError") return;
        showError("Could not load /api/stats: " + err.message + (state.data ? " (showing the last figures)" : ""));
      })
      .finally(function () { if (state.inflight === ctl) state.inflight = null; });
  }
  function schedule() {
    clearInterval(state.timer);
    state.timer = null;
    if (state.auto) state.timer = setInterval(function () { if (!document.hidden) load(); }, REFRESH_MS);
  }
  function selectRange(r) {
    state.range = r;
    document.querySelectorAll("[data-range]").forEach(function (b) { b.setAttribute("aria-pressed", String(b.getAttribute("data-range") === r)); });
    var p = new URLSearchParams(location.search);
    p.set("range", r);
    history.replaceState(null, "", location.pathname + "?" + p.toString());
    document.getElementById("main").classList.add("loading");
    load();
  }

  document.querySelectorAll("[data-range]").forEach(function (b) {
    b.addEventListener("click", function () { selectRange(b.getAttribute("data-range")); });
  });
  var auto = document.getElementById("auto");
  auto.checked = state.auto;
  auto.addEventListener("change", function () {
    state.auto = auto.checked;
    localStorage.setItem("tether.autoRefresh", String(state.auto));
    schedule();
  });
  document.getElementById("refresh").addEventListener("click", function () { load(); });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && state.auto && Date.now() - state.loadedAt > REFRESH_MS) load();
  });
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { if (state.data) drawChart(state.data); }, 100);
  });
  schedule();
  selectRange(state.range);
})();
`;
