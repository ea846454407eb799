/**
 * The live view's page (GET /live/<task>): the turn's header, then its events, drawn by
 * browser/live.js from the page's own event stream (/live/<task>/events, server-sent events),
 * which replays the turn from its start and then follows it. Every value is escaped here; the
 * script builds its elements with textContent only.
 */
import { escapeHtml as e, readScript, shell } from "./dashboard-page.js";
import type { LiveTask } from "../sql/turn-events.js";

/** browser/live.js beside this module (copied to dist/ by `npm run build`), inlined. */
const SCRIPT = readScript(new URL("./browser/live.js", import.meta.url));

export function livePage(nonce: string, task: LiveTask, eventsPath: string): string {
  const title = `${task.repo}#${task.issueNumber} · ${task.agent} · task ${task.id}`;
  return shell(
    nonce,
    `Tether · live · ${title}`,
    `<header class="top">
  <div class="brand"><span class="logo" aria-hidden="true"></span>Tether <span class="muted">live</span></div>
  <div class="grow"></div>
</header>
<main id="main" data-events="${e(eventsPath)}">
  <h1>${e(`${task.repo}#${task.issueNumber}`)} <span class="muted">· agent ${e(task.agent)} · task ${task.id}</span></h1>
  <p class="live-status">
    <span>Status: <strong id="status" data-status="${e(task.status)}">${e(task.status)}</strong></span>
    <span>Tool calls: <strong id="tools">0</strong></span>
    <span>Tokens: <strong id="tokens">–</strong></span>
    <span>Cost so far: <strong id="cost">–</strong></span>
    <span id="conn" class="muted">connecting…</span>
  </p>
  <p id="dropped" class="banner" hidden></p>
  <ol id="events" class="live-events"></ol>
</main>`,
    SCRIPT,
  );
}
