// The live view's script (src/web/live-page.ts inlines it with the page's nonce): follows the
// turn's server-sent events and draws each one. Elements are built with textContent only, so
// nothing the agent wrote can become markup. Type-checked by ./tsconfig.json.

/** @typedef {{ id: number, kind: string, body: Record<string, unknown>, at: string }} TurnEvent */

const main = /** @type {HTMLElement} */ (document.getElementById("main"));
const list = /** @type {HTMLOListElement} */ (document.getElementById("events"));
const status = /** @type {HTMLElement} */ (document.getElementById("status"));
const conn = /** @type {HTMLElement} */ (document.getElementById("conn"));
const toolCount = /** @type {HTMLElement} */ (document.getElementById("tools"));
const tokens = /** @type {HTMLElement} */ (document.getElementById("tokens"));
const cost = /** @type {HTMLElement} */ (document.getElementById("cost"));
const dropped = /** @type {HTMLElement} */ (document.getElementById("dropped"));
const nf = new Intl.NumberFormat("en-US");
let tools = 0;
/** @type {Map<string, HTMLLIElement>} */
const toolItems = new Map();

/**
 * @param {string} tag
 * @param {string} text
 * @param {string} [cls]
 */
function el(tag, text, cls) {
  const node = document.createElement(tag);
  node.textContent = text;
  if (cls) node.className = cls;
  return node;
}

/** @param {unknown} v */
const str = (v) => (typeof v === "string" ? v : v === null || v === undefined ? "" : String(v));

/** @param {TurnEvent} ev */
function draw(ev) {
  const b = ev.body;
  const at = ev.at.slice(11, 19);
  const item = document.createElement("li");
  item.className = ev.kind;
  item.dataset.kind = ev.kind;
  item.dataset.id = String(ev.id);
  const head = (/** @type {string} */ what) => {
    item.append(el("span", `${at} `, "muted mono"), el("span", what, "what"));
  };
  switch (ev.kind) {
    case "init":
      head(`session started${b.model ? ` · ${str(b.model)}` : ""}`);
      break;
    case "text":
      head(b.sub ? "sub-agent says" : "agent says");
      item.append(el("pre", str(b.text)));
      break;
    case "tool_use":
      tools++;
      toolCount.textContent = String(tools);
      head(`tool call: ${str(b.name)}`);
      item.append(el("pre", str(b.input), "mono tool-input"));
      toolItems.set(str(b.id), item);
      break;
    case "tool_result": {
      const call = toolItems.get(str(b.toolUseId));
      const out = el(
        "pre",
        str(b.output) || (b.isError ? "(failed)" : "(done)"),
        "mono tool-output",
      );
      if (call) {
        if (b.isError) call.classList.add("error");
        call.append(out);
        return;
      }
      head(b.isError ? "tool failed" : "tool result");
      item.append(out);
      break;
    }
    case "usage":
      tokens.textContent = `${nf.format(Number(b.inputTokens))} in · ${nf.format(Number(b.outputTokens))} out`;
      if (typeof b.costUsd === "number") cost.textContent = `$${b.costUsd.toFixed(4)}`;
      return;
    case "api_retry":
      head(
        `API call retried (attempt ${str(b.attempt)}${b.errorStatus ? `, status ${str(b.errorStatus)}` : ""})`,
      );
      break;
    case "compacted":
      head("conversation compacted");
      break;
    case "dropped":
      dropped.hidden = false;
      dropped.textContent = `This turn went past the live view's bound: its ${nf.format(Number(b.events))} oldest events (${nf.format(Number(b.toolCalls))} tool calls) were dropped; the newest are shown.`;
      return;
    case "result":
      head(b.isError ? `finished with an error (${str(b.subtype)})` : "answer");
      item.append(el("pre", str(b.text), "answer"));
      if (typeof b.costUsd === "number") cost.textContent = `$${b.costUsd.toFixed(4)}`;
      break;
    default:
      head(ev.kind);
  }
  list.append(item);
  if (window.innerHeight + window.scrollY >= document.body.scrollHeight - 200) {
    item.scrollIntoView({ block: "end" });
  }
}

const source = new EventSource(main.dataset.events ?? "");
source.addEventListener("open", () => {
  conn.textContent = "live";
});
source.addEventListener("turn", (m) => {
  draw(/** @type {TurnEvent} */ (JSON.parse(/** @type {MessageEvent<string>} */ (m).data)));
});
source.addEventListener("end", (m) => {
  const s = /** @type {{ status: string }} */ (
    JSON.parse(/** @type {MessageEvent<string>} */ (m).data)
  );
  status.textContent = s.status;
  status.dataset.status = s.status;
  conn.textContent = "the turn is over";
  source.close();
});
source.addEventListener("error", () => {
  if (source.readyState !== EventSource.CLOSED) conn.textContent = "reconnecting…";
});
