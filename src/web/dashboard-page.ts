/**
 * The dashboard's HTML: one self-contained document (inline CSS and script, no fonts, no CDN:
 * operators' networks and this project's CI have no internet). The page fetches
 * /api/stats?range=… and draws everything itself, the chart as inline SVG.
 *
 * The script is browser JavaScript in its own file, browser/dashboard.js (type-checked with the
 * DOM's types and linted; see its header), read once here and inlined with the page's nonce. It
 * builds every element with textContent, never innerHTML, so repository names, authors or URLs
 * cannot inject markup. The browser test (test/browser/dashboard.test.ts) runs it in chromium.
 */
import fs from "node:fs";
import { fileURLToPath } from "node:url";

export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c,
  );
}

export function shell(nonce: string, title: string, body: string, script = ""): string {
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

/**
 * The sign-in form; `next` (a dashboard path, checked by the caller) is where the browser goes
 * once signed in: a conversation page linked from an answer, say.
 */
export function loginPage(nonce: string, error?: string, next?: string): string {
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
    ${next ? `<input type="hidden" name="next" value="${escapeHtml(next)}">` : ""}
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
      <div class="panel-head sub"><h2>Triggers</h2><span class="muted">what started the turns</span></div>
      <div id="triggers" class="chips"></div>
      <div class="panel-head sub"><h2>CI loops</h2><span class="muted">automatic CI turns, by how they ended</span></div>
      <div id="ci-loops" class="chips"></div>
      <div class="panel-head sub"><h2>Reviews</h2><span class="muted">posted on pull requests, with the agents' line comments</span></div>
      <div id="reviews" class="chips"></div>
      <div class="panel-head sub"><h2>GitHub requests per turn</h2><span class="muted">median by kind; headroom left per installation</span></div>
      <div id="github-requests" class="chips"></div>
      <div class="panel-head sub"><h2>MCP tool calls</h2><span class="muted">by server, of the operator's MCP servers</span></div>
      <div id="mcp-tool-calls" class="chips"></div>
      <div class="panel-head sub"><h2>Changes</h2><span class="muted">what agents' changes became</span></div>
      <div id="changes" class="chips"></div>
    </div>
  </section>
  <section class="panel">
    <div class="panel-head"><h2>By agent CLI</h2><span class="muted">≈: Tether's estimate from the tokens, for a CLI that reports no cost</span></div>
    <div class="scroll"><table id="clis" class="num-table"></table></div>
  </section>
  <section class="panel">
    <div class="panel-head"><h2>By repository and agent</h2><span class="muted" id="repos-note"></span></div>
    <div class="scroll tall"><table id="repos" class="num-table"></table></div>
  </section>
  <section class="panel">
    <div class="panel-head"><h2>Schedules</h2><span class="muted" id="schedules-note"></span></div>
    <div class="scroll"><table id="schedules"></table></div>
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
.grid-1-2 { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 2fr); gap: 16px; }
@media (max-width: 1180px) { .kpis { grid-template-columns: repeat(3, minmax(0, 1fr)); } }
@media (max-width: 1000px) { .grid-2-1, .grid-1-1, .grid-1-2 { grid-template-columns: minmax(0, 1fr); } }
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
.top a.back { white-space: nowrap; }
h1 .muted { font-weight: 400; }
.kv { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 4px 14px; margin: 0; }
.kv dt { color: var(--muted); }
.kv dd { margin: 0; }
td.wrap { white-space: normal; min-width: 16em; }
.live-events { list-style: none; margin: 0; padding: 0; display: grid; gap: 8px; }
.live-events li { background: var(--panel); border: 1px solid var(--border); border-radius: 8px; padding: 8px 12px; }
.live-events li.tool_use { border-left: 3px solid var(--accent); }
.live-events li.tool_result.error { border-left: 3px solid var(--bad); }
.live-events li.result { border-left: 3px solid var(--resumed); }
.live-events pre { margin: 4px 0 0; white-space: pre-wrap; word-break: break-word; max-height: 24em; overflow: auto; }
.live-events .what { font-weight: 600; }
.live-status { display: flex; gap: 14px; flex-wrap: wrap; margin: 0 0 12px; }
`;

/**
 * browser/dashboard.js beside this module: src/web/ under tsx, dist/src/web/ once built (`npm run
 * build` copies it there). Read when this module loads, so a process without it stops at start.
 */
const SCRIPT = readScript(new URL("./browser/dashboard.js", import.meta.url));

export function readScript(file: URL): string {
  if (!fs.existsSync(file)) {
    // A dist/ built by tsc alone: the copy is the second half of the build.
    throw new Error(`${fileURLToPath(file)} is missing: build with \`npm run build\``);
  }
  const text = fs.readFileSync(file, "utf8");
  // Inline, the script would end at the first "</script" (and "<!--" changes how the browser
  // looks for that end): refuse a file that holds either rather than serve a broken page.
  if (/<\/script|<!--/i.test(text)) {
    throw new Error(`${fileURLToPath(file)} holds "</script" or "<!--": it cannot be inlined`);
  }
  return `\n${text}`;
}
