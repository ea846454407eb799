// @ts-check
/**
 * The dashboard's browser script. dashboard-page.ts reads this file once and inlines it, with
 * the response's CSP nonce, into the page GET /dashboard serves; `npm run build` copies it to
 * dist/src/web/browser/ beside the compiled server. A classic script, not a module, run as
 * written: no bundler, no transpiling, nothing to import.
 *
 * `npm run typecheck` checks it with the DOM's types (tsconfig.json in this folder) against the
 * part of /api/stats it reads (stats.d.ts); `npm run lint` lints it with browser globals; the
 * browser test (test/browser/dashboard.test.ts) runs it in chromium. Types are JSDoc only, so
 * what runs is what is written here. It builds every element with textContent, never innerHTML,
 * so repository names, authors or URLs cannot inject markup. Being inlined, it must never hold
 * the characters that end an inline script (dashboard-page.ts would stop the process at start).
 */

/** @typedef {import("./stats.js").DashboardStats} Stats */
/** @typedef {import("./stats.js").DashboardCostProfile} CostProfile */
/** @typedef {{ t: string, n?: boolean, title?: string }} Column a table's header cell */

"use strict";
(function () {
  /** @type {Record<string, string>} */
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
    cli_cannot_resume: "The agent CLI cannot resume",
    resume_rejected: "The CLI rejected the resume; retried fresh",
    session_too_large: "The session's transcript grew past the size bound",
    context_overflow: "The resumed session ran out of context; retried fresh",
    compacted: "The session's context was nearly full: compacted (summarised), then resumed",
    rewound: "A comment the session had read was edited or deleted: resumed from just before it",
    compaction_failed: "The session's context was nearly full and compacting it failed; ran fresh",
  };
  var FAILED = [
    "failed",
    "poisoned",
    "resume_rejected",
    "auth_failed",
    "timed_out",
    "stalled",
    "turn_limit",
  ];
  var REFRESH_MS = 30000;
  var params = new URLSearchParams(location.search);
  /**
   * @type {{ range: string, auto: boolean, data: Stats | null, timer: number | null,
   *   inflight: AbortController | null, loadedAt: number }}
   */
  var state = {
    // A string whenever indexOf finds it.
    range:
      ["24h", "7d", "30d"].indexOf(/** @type {string} */ (params.get("range"))) >= 0
        ? /** @type {string} */ (params.get("range"))
        : "24h",
    auto: localStorage.getItem("tether.autoRefresh") !== "false",
    data: null,
    timer: null,
    inflight: null,
    loadedAt: 0,
  };

  // ---- formatting
  var nf = new Intl.NumberFormat("en-US");
  /** @param {number | null | undefined} n */
  function int(n) {
    return n === null || n === undefined ? "–" : nf.format(Math.round(n));
  }
  /** @param {number | null | undefined} r */
  function pct(r) {
    return r === null || r === undefined ? "–" : (r * 100).toFixed(1) + "%";
  }
  /** @param {number | null | undefined} v */
  function usd(v) {
    if (v === null || v === undefined) return "–";
    if (Math.abs(v) < 1) return "$" + v.toFixed(4);
    return "$" + v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  // Totals in cents; per-turn figures keep four decimals, where the savings show.
  /** @param {number | null | undefined} v */
  function usdTotal(v) {
    if (v === null || v === undefined) return "–";
    return "$" + v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  /** @param {number | null | undefined} n */
  function compact(n) {
    if (n === null || n === undefined) return "–";
    var a = Math.abs(n);
    if (a < 10000) return int(n);
    if (a < 1e6) return (n / 1e3).toFixed(1) + "k";
    if (a < 1e9) return (n / 1e6).toFixed(2) + "M";
    return (n / 1e9).toFixed(2) + "G";
  }
  /** @param {number | null | undefined} s seconds */
  function age(s) {
    if (s === null || s === undefined) return "–";
    s = Math.max(0, Math.round(s));
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " m " + (s % 60) + " s";
    if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " m";
    return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
  }
  /** @param {number | null | undefined} v */
  function ms(v) {
    if (v === null || v === undefined) return "–";
    if (v < 1000) return Math.round(v) + " ms";
    if (v < 60000) return (v / 1000).toFixed(1) + " s";
    return age(v / 1000);
  }
  /** @param {string} iso */
  function ago(iso) {
    return age((Date.now() - Date.parse(iso)) / 1000) + " ago";
  }
  /** @param {string} iso */
  function when(iso) {
    return new Date(iso).toLocaleString();
  }
  /** @param {string | null | undefined} u */
  function safeUrl(u) {
    return typeof u === "string" && /^https?:\/\//i.test(u) ? u : null;
  }

  // ---- DOM helpers (textContent only)
  /**
   * An HTML element: `text` sets its textContent, `cls` its class, any other key an attribute;
   * null or undefined values are skipped. The arguments after attrs are its children.
   * @type {(
   *   tag: string,
   *   attrs?: Record<string, string | null | undefined> | null,
   *   ...children: Array<Node | string | null | undefined>
   * ) => HTMLElement}
   */
  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs)
      for (var k in attrs) {
        if (attrs[k] === null || attrs[k] === undefined) continue;
        if (k === "text") el.textContent = /** @type {string} */ (attrs[k]);
        else if (k === "cls") el.className = /** @type {string} */ (attrs[k]);
        else el.setAttribute(k, /** @type {string} */ (attrs[k]));
      }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return el;
  }
  var SVG = "http://www.w3.org/2000/svg";
  /**
   * An SVG element with these attributes (numbers become strings, as setAttribute does).
   * @param {string} tag
   * @param {Record<string, string | number>} attrs
   * @param {string} [text]
   */
  function s(tag, attrs, text) {
    var el = document.createElementNS(SVG, tag);
    for (var k in attrs) el.setAttribute(k, /** @type {string} */ (attrs[k]));
    if (text !== undefined) el.textContent = text;
    return el;
  }
  /**
   * Fills the KPI element marked data-stat=name; cls, when given, replaces its value class.
   * @param {string} name
   * @param {string} text
   * @param {string} [cls]
   */
  function set(name, text, cls) {
    var el = /** @type {Element} */ (document.querySelector('[data-stat="' + name + '"]'));
    el.textContent = text;
    if (cls !== undefined) el.className = "value" + (cls ? " " + cls : "");
    return el;
  }
  /**
   * @param {string | null} href
   * @param {string} text
   */
  function link(href, text) {
    var u = safeUrl(href);
    return u
      ? h("a", { href: u, target: "_blank", rel: "noopener noreferrer", text: text })
      : document.createTextNode(text);
  }
  /**
   * @param {HTMLElement} el
   * @param {Column[]} head
   * @param {Node[]} rows
   * @param {string} emptyText
   */
  function table(el, head, rows, emptyText) {
    el.textContent = "";
    var tr = h("tr");
    head.forEach(function (c) {
      tr.appendChild(h("th", { cls: c.n ? "n" : null, text: c.t, title: c.title }));
    });
    el.appendChild(h("thead", null, tr));
    var body = h("tbody");
    if (!rows.length)
      body.appendChild(
        h("tr", null, h("td", { cls: "empty", colspan: String(head.length), text: emptyText })),
      );
    rows.forEach(function (r) {
      body.appendChild(r);
    });
    el.appendChild(body);
  }
  /**
   * @param {Node | string | null | undefined} content
   * @param {string | null} [cls]
   * @param {string | null} [title]
   */
  function td(content, cls, title) {
    var cell = h("td", { cls: cls || null, title: title || null });
    if (typeof content === "string") cell.textContent = content;
    else if (content) cell.appendChild(content);
    return cell;
  }

  // ---- KPIs
  /** @param {Stats} d */
  function renderKpis(d) {
    var t = d.totals;
    var rate = set(
      "resumeRate",
      pct(d.resumeRate),
      d.resumeRate === null ? "" : d.resumeRate >= 0.7 ? "good" : "warn",
    );
    rate.setAttribute("data-value", d.resumeRate === null ? "" : String(d.resumeRate));
    set("resumeDetail", int(t.resumed) + " resumed of " + int(t.followUps) + " follow-ups");
    var mv = d.sessions;
    set("resumedAcross", int(mv.resumedAcross), "");
    set(
      "restoreDetail",
      int(mv.restoredFromStore) +
        " restored from Postgres" +
        (mv.storeRestoreMsP50 === null ? "" : " (p50 " + int(mv.storeRestoreMsP50) + " ms)") +
        ", " +
        int(mv.restoredFromCache) +
        " from a runner's cache, " +
        int(mv.compacted) +
        " compacted",
    );
    set("turns", int(t.turns)).setAttribute("data-value", String(t.turns));
    set(
      "turnsDetail",
      int(t.firstTurns) + " first · " + int(t.freshFollowUps) + " fresh follow-ups",
    );
    set("cost", usdTotal(t.costUsd));
    var saved = d.savings.costSavedPerResumedTurnUsd;
    set(
      "costDetail",
      saved === null
        ? "avg " + usd(t.turns ? t.costUsd / t.turns : null) + " per turn"
        : usd(saved) + " saved per resumed turn",
    );
    var refused = set("refused", int(t.refused) + " refused by a spend limit");
    refused.setAttribute("data-value", String(t.refused));
    var failed = FAILED.reduce(function (sum, k) {
      return sum + (d.outcomes[k] || 0);
    }, 0);
    set("failed", int(failed), failed ? "bad" : "");
    set("failedDetail", t.turns ? pct(failed / t.turns) + " of turns" : "no turns");
    var q = d.queue;
    set(
      "queueDepth",
      int(q.depth),
      q.oldestAgeSeconds !== null && q.oldestAgeSeconds > 600 ? "warn" : "",
    );
    set("queueDetail", q.depth ? "oldest waiting " + age(q.oldestAgeSeconds) : "nothing waiting");
    set("running", int(q.running));
    var total = d.runners.length;
    set(
      "runningDetail",
      q.runnersAlive + " of " + total + " runner" + (total === 1 ? "" : "s") + " alive",
    );
  }

  // ---- chart
  // The count axis has four steps; a whole, round step keeps its labels whole and round.
  /** @param {number} v */
  function niceMax(v) {
    if (v <= 4) return 4;
    var raw = v / 4,
      p = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10];
    for (var i = 0; i < steps.length; i++) {
      var step = steps[i] * p;
      if (step >= raw && Number.isInteger(step)) return step * 4;
    }
    return 40 * p;
  }
  /**
   * @param {string} iso
   * @param {string} bucket
   * @param {boolean} first
   */
  function tickLabel(iso, bucket, first) {
    var d = new Date(iso);
    if (bucket === "day") return d.toLocaleDateString("en-US", { month: "short", day: "numeric" });
    var hh = String(d.getHours()).padStart(2, "0") + ":00";
    return first || d.getHours() === 0
      ? d.toLocaleDateString("en-US", { month: "short", day: "numeric" }) + " " + hh
      : hh;
  }
  /** @param {Stats} d */
  function drawChart(d) {
    var box = /** @type {HTMLElement} */ (document.getElementById("chart"));
    box.textContent = "";
    var W = Math.max(320, box.clientWidth),
      H = box.clientHeight || 260;
    var m = { l: 46, r: 46, t: 10, b: 26 };
    var pw = W - m.l - m.r,
      ph = H - m.t - m.b;
    var series = d.series,
      n = series.length;
    var svg = s("svg", {
      id: "rate-chart",
      viewBox: "0 0 " + W + " " + H,
      role: "img",
      "aria-label": "Resume rate per " + d.bucket,
      "data-buckets": String(n),
    });
    var maxTurns = niceMax(
      series.reduce(function (a, p) {
        return Math.max(a, p.turns);
      }, 0),
    );
    var x = /** @param {number} i */ function (i) {
      return m.l + (i + 0.5) * (pw / n);
    };
    var yRate = /** @param {number} r */ function (r) {
      return m.t + ph * (1 - r);
    };
    [0, 0.25, 0.5, 0.75, 1].forEach(function (r) {
      svg.appendChild(
        s("line", { class: "gridline", x1: m.l, x2: m.l + pw, y1: yRate(r), y2: yRate(r) }),
      );
      svg.appendChild(
        s(
          "text",
          { class: "axis", x: m.l - 6, y: yRate(r) + 4, "text-anchor": "end" },
          Math.round(r * 100) + "%",
        ),
      );
      svg.appendChild(
        s("text", { class: "axis", x: m.l + pw + 6, y: yRate(r) + 4 }, int(maxTurns * r)),
      );
    });
    var bw = Math.max(1, (pw / n) * 0.7);
    series.forEach(function (p, i) {
      var x0 = x(i) - bw / 2,
        base = m.t + ph;
      /** @type {Array<[string, number]>} */
      var parts = [
        ["bar-resumed", p.resumed],
        ["bar-fresh", p.followUps - p.resumed],
        ["bar-first", p.turns - p.followUps],
      ];
      parts.forEach(function (part) {
        var hgt = (ph * part[1]) / maxTurns;
        svg.appendChild(
          s("rect", {
            class: part[0],
            x: x0,
            y: base - hgt,
            width: bw,
            height: Math.max(0, hgt),
            "data-i": String(i),
          }),
        );
        base -= hgt;
      });
    });
    var dPath = "",
      points = 0,
      prev = false;
    series.forEach(function (p, i) {
      if (p.resumeRate === null) {
        prev = false;
        return;
      }
      dPath += (prev ? "L" : "M") + x(i).toFixed(1) + " " + yRate(p.resumeRate).toFixed(1);
      prev = true;
      points++;
    });
    svg.appendChild(
      s("path", { class: "rate-line", d: dPath || "M0 0", "data-points": String(points) }),
    );
    series.forEach(function (p, i) {
      if (p.resumeRate !== null && (n <= 60 || points === 1))
        svg.appendChild(
          s("circle", { class: "rate-dot", cx: x(i), cy: yRate(p.resumeRate), r: 3 }),
        );
    });
    var every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(pw / 80))));
    for (var i = 0; i < n; i += every) {
      svg.appendChild(
        s(
          "text",
          { class: "axis", x: x(i), y: H - 8, "text-anchor": "middle" },
          tickLabel(series[i].start, d.bucket, i === 0),
        ),
      );
    }
    if (!d.totals.followUps) {
      svg.appendChild(
        s(
          "text",
          { class: "empty", x: m.l + pw / 2, y: m.t + ph / 2, "text-anchor": "middle" },
          d.totals.turns
            ? "No follow-up turns in this range: nothing to resume yet"
            : "No turns in this range",
        ),
      );
    }
    var tip = h("div", { cls: "tip", hidden: "" });
    series.forEach(function (p, i) {
      var r = s("rect", {
        class: "hover",
        x: m.l + i * (pw / n),
        y: m.t,
        width: pw / n,
        height: ph,
      });
      r.addEventListener("mouseenter", function () {
        tip.textContent = "";
        tip.appendChild(h("div", { text: new Date(p.start).toLocaleString() }));
        tip.appendChild(h("div", { text: "resume rate " + pct(p.resumeRate) }));
        tip.appendChild(
          h("div", { text: int(p.resumed) + " resumed / " + int(p.followUps) + " follow-ups" }),
        );
        tip.appendChild(h("div", { text: int(p.turns) + " turns · " + usdTotal(p.costUsd) }));
        tip.hidden = false;
        var left = x(i) + 10;
        tip.style.left = Math.min(left, W - 190) + "px";
        tip.style.top = m.t + 4 + "px";
      });
      r.addEventListener("mouseleave", function () {
        tip.hidden = true;
      });
      svg.appendChild(r);
    });
    box.appendChild(svg);
    box.appendChild(tip);
  }

  // ---- reasons
  /** @param {Stats} d */
  function renderReasons(d) {
    var list = /** @type {HTMLElement} */ (document.getElementById("reasons"));
    list.textContent = "";
    var total = d.totals.turns;
    var codes = Object.keys(d.reasons).sort(function (a, b) {
      if (a === "resumed") return -1;
      if (b === "resumed") return 1;
      return d.reasons[b] - d.reasons[a];
    });
    var max = codes.reduce(function (a, c) {
      return Math.max(a, d.reasons[c]);
    }, 0);
    codes.forEach(function (code) {
      var count = d.reasons[code];
      var fill = h("span");
      fill.style.width = (max ? (100 * count) / max : 0) + "%";
      var kind =
        code === "resumed" || code === "compacted" || code === "rewound"
          ? "resumed"
          : code === "no_prior_session"
            ? "first"
            : "";
      list.appendChild(
        h(
          "li",
          { cls: kind + (count ? "" : " zero"), "data-reason": code },
          h("span", {
            cls: "name mono",
            title: REASONS[code] || "A reason code this dashboard does not know",
            text: code,
          }),
          h("span", { cls: "bar" }, fill),
          h("span", { cls: "count", text: int(count) }),
          h("span", { cls: "share", text: total ? pct(count / total) : "–" }),
        ),
      );
    });
    /** @type {HTMLElement} */ (document.getElementById("reasons-total")).textContent =
      int(total) + " turns";
  }

  // ---- savings
  /** @param {Stats} d */
  function renderSavings(d) {
    var sv = d.savings;
    /** @type {Array<[string, CostProfile]>} */
    var cols = [
      ["Resumed", sv.resumed],
      ["Fresh follow-up", sv.freshFollowUp],
      ["Fresh first turn", sv.freshFirst],
    ];
    /** @type {Array<[string, (p: CostProfile) => string]>} */
    var rows = [
      [
        "Turns",
        function (p) {
          return int(p.turns);
        },
      ],
      [
        "Avg input tokens",
        function (p) {
          return int(p.avgInputTokens);
        },
      ],
      [
        "Avg cache read tokens",
        function (p) {
          return int(p.avgCacheReadTokens);
        },
      ],
      [
        "Avg cache write tokens",
        function (p) {
          return int(p.avgCacheCreationTokens);
        },
      ],
      [
        "Avg output tokens",
        function (p) {
          return int(p.avgOutputTokens);
        },
      ],
      [
        "Avg cost",
        function (p) {
          return usd(p.avgCostUsd);
        },
      ],
      [
        "Avg duration",
        function (p) {
          return ms(p.avgDurationMs);
        },
      ],
    ];
    var head = [{ t: "" }].concat(
      cols.map(function (c) {
        return { t: c[0], n: true };
      }),
    );
    table(
      /** @type {HTMLElement} */ (document.getElementById("savings")),
      head,
      rows.map(function (r) {
        var tr = h("tr", null, td(r[0]));
        cols.forEach(function (c) {
          tr.appendChild(td(r[1](c[1]), "n"));
        });
        return tr;
      }),
      "",
    );
    var note = /** @type {HTMLElement} */ (document.getElementById("savings-note"));
    note.textContent = "";
    if (sv.costSavedPerResumedTurnUsd === null) {
      note.textContent =
        "Not enough finished resumed and fresh follow-up turns in this range to compare.";
    } else {
      var saved = sv.costSavedPerResumedTurnUsd,
        tokens = sv.uncachedTokensSavedPerResumedTurn;
      note.appendChild(document.createTextNode("A resumed turn cost "));
      note.appendChild(
        h("strong", {
          "data-stat": "costSaved",
          text: usd(Math.abs(saved)) + (saved >= 0 ? " less" : " more"),
        }),
      );
      note.appendChild(document.createTextNode(" than a fresh follow-up"));
      if (tokens !== null) {
        note.appendChild(document.createTextNode(" and sent "));
        note.appendChild(
          h("strong", { text: int(Math.abs(tokens)) + (tokens >= 0 ? " fewer" : " more") }),
        );
        note.appendChild(document.createTextNode(" uncached input tokens"));
      }
      note.appendChild(document.createTextNode(", on average."));
    }
  }

  // ---- runners and queue
  /** @param {Stats} d */
  function renderRunners(d) {
    var q = d.queue;
    /** @type {HTMLElement} */ (document.getElementById("queue-line")).textContent =
      int(q.depth) +
      " queued" +
      (q.depth ? " (oldest " + age(q.oldestAgeSeconds) + ")" : "") +
      " · " +
      int(q.running) +
      " running" +
      (q.answersPending
        ? " · " +
          int(q.answersPending) +
          " answer" +
          (q.answersPending === 1 ? "" : "s") +
          " waiting for GitHub"
        : "");
    table(
      /** @type {HTMLElement} */ (document.getElementById("runners")),
      [
        { t: "Runner" },
        { t: "CLI" },
        { t: "Sandbox", title: "how this runner runs agents" },
        { t: "Heartbeat" },
        { t: "Running", n: true, title: "running tasks / concurrency" },
      ],
      d.runners.map(function (r) {
        return h(
          "tr",
          { "data-runner": r.id },
          td(
            h(
              "span",
              null,
              h("span", { cls: "mono", text: r.id }),
              h("span", { cls: "muted", text: r.hostname === r.id ? "" : "  " + r.hostname }),
            ),
            "clip",
            r.id + " on " + r.hostname,
          ),
          td((r.cliVersion || "–") + (r.canResume === false ? " (no resume)" : "")),
          td(
            h("span", {
              cls: r.sandbox && r.sandbox.indexOf("bwrap") === 0 ? "" : "warn",
              "data-sandbox": r.sandbox || "",
              text: r.sandbox || "–",
            }),
            "clip",
            r.sandbox || "not reported",
          ),
          td(
            h(
              "span",
              null,
              h("span", {
                cls: "dot" + (r.alive ? " alive" : ""),
                title: r.alive ? "alive" : "silent",
              }),
              ago(r.heartbeatAt),
            ),
            null,
            when(r.heartbeatAt),
          ),
          td(int(r.runningTasks) + " / " + int(r.concurrency), "n"),
        );
      }),
      "No runner has registered yet.",
    );
  }

  /** @param {Stats} d */
  function renderChanges(d) {
    var box = /** @type {HTMLElement} */ (document.getElementById("changes"));
    box.textContent = "";
    var c = d.changes;
    if (!c) return;
    /** @type {Array<[string, number, string]>} */ ([
      ["pull requests opened", c.pullRequestsOpened, "success"],
      ["commits pushed", c.commitsPushed, "success"],
      ["published", c.published, "success"],
      ["patches (forks)", c.patches, "running"],
    ]).forEach(function (x) {
      box.appendChild(
        h("span", { cls: "pill " + x[2], "data-changes": x[0], text: x[0] + " " + int(x[1]) }),
      );
    });
    /** @type {Array<[string, Record<string, number>]>} */ ([
      ["refused", c.refused],
      ["failed", c.failed],
    ]).forEach(function (x) {
      Object.keys(x[1])
        .sort()
        .forEach(function (why) {
          box.appendChild(
            h("span", {
              cls: "pill failed",
              "data-changes": x[0] + ":" + why,
              text: x[0] + ": " + why + " " + int(x[1][why]),
            }),
          );
        });
    });
  }

  /** @param {Stats} d */
  function renderTriggers(d) {
    var box = /** @type {HTMLElement} */ (document.getElementById("triggers"));
    box.textContent = "";
    var t = d.triggers || {};
    Object.keys(t).forEach(function (k) {
      box.appendChild(h("span", { cls: "pill", "data-trigger": k, text: k + " " + int(t[k]) }));
    });
  }

  /** @param {Stats} d */
  function renderCiLoops(d) {
    var box = /** @type {HTMLElement} */ (document.getElementById("ci-loops"));
    box.textContent = "";
    var c = d.ci || { loops: {}, turns: 0 };
    Object.keys(c.loops).forEach(function (k) {
      box.appendChild(h("span", { cls: "pill", "data-ci": k, text: k + " " + int(c.loops[k]) }));
    });
    box.appendChild(h("span", { cls: "pill", "data-ci": "turns", text: "turns " + int(c.turns) }));
  }

  /** @param {Stats} d */
  function renderReviews(d) {
    var box = /** @type {HTMLElement} */ (document.getElementById("reviews"));
    box.textContent = "";
    var r = d.reviews || { posted: 0, failed: 0, lineComments: 0 };
    [
      ["posted", r.posted],
      ["failed", r.failed],
      ["line comments", r.lineComments],
    ].forEach(function (x) {
      box.appendChild(
        h("span", {
          cls: "pill",
          "data-reviews": String(x[0]),
          text: x[0] + " " + int(Number(x[1])),
        }),
      );
    });
  }

  /** @param {Stats} d */
  function renderGithubRequests(d) {
    var box = /** @type {HTMLElement} */ (document.getElementById("github-requests"));
    box.textContent = "";
    var r = d.githubRequests || {};
    Object.keys(r).forEach(function (k) {
      var m = r[k].median;
      box.appendChild(
        h("span", {
          cls: "pill",
          "data-gh-requests": k,
          text: k + " " + (m === null ? "–" : int(m)),
        }),
      );
    });
    var left = d.githubHeadroom || {};
    Object.keys(left).forEach(function (k) {
      var e = left[k];
      var waiting = e.deferred || 0;
      // Tasks waiting for the window's reset (TETHER_RATE_LIMIT_RESERVE), and when it comes.
      var wait =
        waiting > 0 && e.resetAt
          ? " · " +
            int(waiting) +
            " waiting until " +
            new Date(e.resetAt * 1000).toISOString().slice(11, 16) +
            " UTC"
          : "";
      box.appendChild(
        h("span", {
          cls: "pill",
          "data-gh-headroom": k,
          text: "#" + k + " " + int(e.remaining) + " left" + wait,
        }),
      );
    });
  }

  /** @param {Stats} d */
  function renderMcpToolCalls(d) {
    var box = /** @type {HTMLElement} */ (document.getElementById("mcp-tool-calls"));
    box.textContent = "";
    var calls = d.mcpToolCalls || {};
    var servers = Object.keys(calls);
    if (!servers.length)
      box.appendChild(
        h("span", { cls: "muted", text: "No turn in this range was given an MCP server." }),
      );
    servers.forEach(function (k) {
      box.appendChild(
        h("span", { cls: "pill", "data-mcp-server": k, text: k + " " + int(calls[k]) }),
      );
    });
  }

  /** @param {Stats} d */
  function renderOutcomes(d) {
    var box = /** @type {HTMLElement} */ (document.getElementById("outcomes"));
    box.textContent = "";
    var codes = Object.keys(d.outcomes)
      .filter(function (k) {
        return d.outcomes[k] > 0;
      })
      .sort(function (a, b) {
        return d.outcomes[b] - d.outcomes[a];
      });
    if (!codes.length)
      box.appendChild(h("span", { cls: "muted", text: "No turns in this range." }));
    codes.forEach(function (k) {
      box.appendChild(
        h("span", {
          cls: "pill " + (k === "pending" ? "running" : k),
          "data-outcome": k,
          text: k + " " + int(d.outcomes[k]),
        }),
      );
    });
  }

  // ---- repositories
  /** @param {number | null} r */
  function rateCell(r) {
    var fill = h("span");
    fill.style.width = (r === null ? 0 : r * 100) + "%";
    return h(
      "span",
      { cls: "rate" },
      h("span", { text: pct(r) }),
      h("span", { cls: "mini" }, fill),
    );
  }
  /** @param {Stats} d */
  function renderRepos(d) {
    table(
      /** @type {HTMLElement} */ (document.getElementById("repos")),
      [
        { t: "Repository" },
        { t: "Agent" },
        { t: "Turns", n: true },
        { t: "Follow-ups", n: true },
        { t: "Resumed", n: true },
        { t: "Resume rate", n: true },
        { t: "Cost", n: true },
        { t: "Refused", n: true },
        { t: "Input tok", n: true },
        { t: "Cache read tok", n: true },
        { t: "Cache write tok", n: true },
        { t: "Output tok", n: true },
      ],
      d.repos.map(function (r) {
        return h(
          "tr",
          { "data-repo": r.repo + "/" + r.agent },
          td(r.repo, "clip", r.repo),
          td(r.agent),
          td(int(r.turns), "n"),
          td(int(r.followUps), "n"),
          td(int(r.resumed), "n"),
          td(rateCell(r.resumeRate), "n"),
          td(usdTotal(r.costUsd), "n", usd(r.costUsd)),
          td(int(r.refused), "n", "tasks a spend limit kept from running"),
          td(compact(r.inputTokens), "n", int(r.inputTokens)),
          td(compact(r.cacheReadTokens), "n", int(r.cacheReadTokens)),
          td(compact(r.cacheCreationTokens), "n", int(r.cacheCreationTokens)),
          td(compact(r.outputTokens), "n", int(r.outputTokens)),
        );
      }),
      "No turns in this range.",
    );
    /** @type {HTMLElement} */ (document.getElementById("repos-note")).textContent =
      d.reposTotal > d.repos.length
        ? "busiest " + d.repos.length + " of " + d.reposTotal
        : d.reposTotal + " repository/agent pair" + (d.reposTotal === 1 ? "" : "s");
  }

  // ---- per CLI
  /** @param {Stats} d */
  function renderClis(d) {
    var clis = Object.keys(d.byCli || {});
    table(
      /** @type {HTMLElement} */ (document.getElementById("clis")),
      [
        { t: "CLI" },
        { t: "Turns", n: true },
        { t: "Follow-ups", n: true },
        { t: "Resumed", n: true },
        { t: "Resume rate", n: true },
        { t: "Cost", n: true },
        { t: "Fresh follow-ups by reason" },
      ],
      clis.map(function (cli) {
        var c = d.byCli[cli];
        var reasons = Object.keys(c.reasons)
          .filter(function (k) {
            return k !== "resumed" && k !== "no_prior_session" && c.reasons[k] > 0;
          })
          .sort(function (a, b) {
            return c.reasons[b] - c.reasons[a];
          })
          .map(function (k) {
            return k + " " + int(c.reasons[k]);
          })
          .join(", ");
        return h(
          "tr",
          { "data-cli": cli },
          td(cli),
          td(int(c.turns), "n"),
          td(int(c.followUps), "n"),
          td(int(c.resumed), "n"),
          td(rateCell(c.resumeRate), "n"),
          td(
            (c.costEstimated ? "≈ " : "") + usdTotal(c.costUsd),
            "n",
            c.costEstimated ? "estimated: " + usd(c.costUsd) : usd(c.costUsd),
          ),
          td(reasons || "–", "clip", reasons),
        );
      }),
      "No turns in this range.",
    );
  }

  /**
   * The conversation page of a task's key (dashboard-routes.ts; core/conversation-path.ts).
   * @param {{ repo: string, issueNumber: number, agent: string }} t
   */
  function conversationPath(t) {
    var parts = t.repo.split("/").concat([String(t.issueNumber), t.agent]);
    return "/dashboard/conversations/" + parts.map(encodeURIComponent).join("/");
  }

  // ---- latest tasks
  /** @param {Stats} d */
  function renderLatest(d) {
    table(
      /** @type {HTMLElement} */ (document.getElementById("latest")),
      [
        { t: "#", n: true },
        { t: "Created" },
        { t: "Task" },
        { t: "Agent" },
        { t: "Status" },
        { t: "Outcome" },
        { t: "Decision" },
        { t: "Session" },
        { t: "Duration", n: true },
        { t: "Cost", n: true },
        { t: "Answer" },
        {
          t: "Conversation",
          title: "The conversation's chain: every turn of this issue and agent",
        },
      ],
      d.latest.map(function (t) {
        var decision = t.resumeDecision
          ? h("span", {
              cls: "pill " + (t.resumeDecision === "resume" ? "resumed" : "fresh"),
              // A null reason looks up "null", which is no code: no title.
              title: REASONS[/** @type {string} */ (t.resumeReason)] || "",
              text:
                t.resumeDecision +
                (t.resumeReason && t.resumeReason !== "resumed" ? " · " + t.resumeReason : ""),
            })
          : h("span", { cls: "muted", text: "–" });
        return h(
          "tr",
          { "data-task": String(t.id) },
          td(String(t.id), "n"),
          td(ago(t.createdAt), null, when(t.createdAt)),
          td(
            link(t.triggerUrl, t.repo + "#" + t.issueNumber),
            "clip",
            "asked by " + t.triggerAuthor,
          ),
          td(t.agent),
          td(h("span", { cls: "pill " + t.status, text: t.status })),
          td(
            t.outcome
              ? h("span", { cls: "pill " + t.outcome, text: t.outcome })
              : h("span", { cls: "muted", text: "–" }),
          ),
          td(decision),
          td(
            t.sessionId ? h("span", { cls: "mono", text: t.sessionId.slice(0, 8) + "…" }) : "–",
            null,
            t.sessionId || "",
          ),
          td(ms(t.durationMs), "n"),
          td(usd(t.costUsd), "n"),
          td(t.answerUrl ? link(t.answerUrl, "answer") : h("span", { cls: "muted", text: "–" })),
          td(h("a", { href: conversationPath(t), "data-conversation": "", text: "chain" })),
        );
      }),
      "No tasks yet.",
    );
  }

  // ---- schedules
  /** @param {string} iso */
  function until(iso) {
    var s = (Date.parse(iso) - Date.now()) / 1000;
    return s > 0 ? "in " + age(s) : "due";
  }
  /** @param {Stats} d */
  function renderSchedules(d) {
    var list = d.schedules || [];
    table(
      /** @type {HTMLElement} */ (document.getElementById("schedules")),
      [
        { t: "Repository" },
        { t: "Agent" },
        { t: "Issue" },
        { t: "Cron", title: "five-field cron, in its time zone" },
        { t: "Last run" },
        { t: "Next run" },
      ],
      list.map(function (x) {
        var issue =
          x.issueNumber === null
            ? h("span", {
                cls: "muted",
                title: "opened on the first run",
                text: "new: " + (x.title || ""),
              })
            : x.lastTask
              ? link(x.lastTask.url, "#" + x.issueNumber)
              : "#" + x.issueNumber;
        var last = x.lastRunAt
          ? h(
              "span",
              null,
              ago(x.lastRunAt) + " ",
              x.lastTask
                ? h("span", {
                    cls: "pill " + (x.lastTask.outcome || x.lastTask.status),
                    text: x.lastTask.outcome || x.lastTask.status,
                  })
                : null,
            )
          : h("span", { cls: "muted", text: "never" });
        return h(
          "tr",
          { "data-schedule": x.repo + "/" + x.agent + "#" + (x.issueNumber ?? x.title) },
          td(x.repo, "clip", x.repo),
          td(x.agent),
          td(issue, "clip", x.title || ""),
          td(h("span", { cls: "mono", text: x.cron }), null, x.timezone),
          td(last, null, x.lastRunAt ? when(x.lastRunAt) : ""),
          td(until(x.nextRunAt), null, when(x.nextRunAt)),
        );
      }),
      'No schedule: add one to .github/tether.yml (README, "Talking to Tether").',
    );
    /** @type {HTMLElement} */ (document.getElementById("schedules-note")).textContent =
      list.length + " schedule" + (list.length === 1 ? "" : "s") + ", next due first";
  }

  // ---- loading
  /** @param {string} text */
  function showError(text) {
    var el = /** @type {HTMLElement} */ (document.getElementById("error"));
    el.textContent = text || "";
    el.hidden = !text;
  }
  /** @param {Stats} d */
  function render(d) {
    state.data = d;
    renderKpis(d);
    drawChart(d);
    renderReasons(d);
    renderSavings(d);
    renderRunners(d);
    renderOutcomes(d);
    renderTriggers(d);
    renderCiLoops(d);
    renderReviews(d);
    renderGithubRequests(d);
    renderMcpToolCalls(d);
    renderClis(d);
    renderChanges(d);
    renderRepos(d);
    renderSchedules(d);
    renderLatest(d);
    /** @type {HTMLElement} */ (document.getElementById("main")).classList.remove("loading");
    document.body.setAttribute("data-loaded", d.range);
  }
  function load() {
    if (state.inflight) state.inflight.abort();
    var ctl = new AbortController();
    state.inflight = ctl;
    var range = state.range;
    return fetch("/api/stats?range=" + encodeURIComponent(range), {
      headers: { accept: "application/json" },
      credentials: "same-origin",
      signal: ctl.signal,
    })
      .then(function (res) {
        return res
          .json()
          .catch(function () {
            return { error: "HTTP " + res.status };
          })
          .then(function (body) {
            if (res.status === 401)
              throw new Error("Signed out: reload the page to sign in again.");
            if (!res.ok) throw new Error(body.error || "HTTP " + res.status);
            return body;
          });
      })
      .then(function (d) {
        if (range !== state.range) return;
        state.loadedAt = Date.now();
        showError("");
        render(d);
        /** @type {HTMLElement} */ (document.getElementById("updated")).textContent =
          "updated " + new Date().toLocaleTimeString();
      })
      .catch(function (err) {
        if (err.name === "AbortError") return;
        showError(
          "Could not load /api/stats: " +
            err.message +
            (state.data ? " (showing the last figures)" : ""),
        );
      })
      .finally(function () {
        if (state.inflight === ctl) state.inflight = null;
      });
  }
  function schedule() {
    // null clears nothing, as undefined does.
    clearInterval(/** @type {number | undefined} */ (state.timer));
    state.timer = null;
    if (state.auto)
      state.timer = setInterval(function () {
        if (!document.hidden) load();
      }, REFRESH_MS);
  }
  /** @param {string} r */
  function selectRange(r) {
    state.range = r;
    document.querySelectorAll("[data-range]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-range") === r));
    });
    var p = new URLSearchParams(location.search);
    p.set("range", r);
    history.replaceState(null, "", location.pathname + "?" + p.toString());
    /** @type {HTMLElement} */ (document.getElementById("main")).classList.add("loading");
    load();
  }

  document.querySelectorAll("[data-range]").forEach(function (b) {
    b.addEventListener("click", function () {
      selectRange(/** @type {string} */ (b.getAttribute("data-range")));
    });
  });
  var auto = /** @type {HTMLInputElement} */ (
    /** @type {HTMLElement} */ (document.getElementById("auto"))
  );
  auto.checked = state.auto;
  auto.addEventListener("change", function () {
    state.auto = auto.checked;
    localStorage.setItem("tether.autoRefresh", String(state.auto));
    schedule();
  });
  /** @type {HTMLElement} */ (document.getElementById("refresh")).addEventListener(
    "click",
    function () {
      load();
    },
  );
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && state.auto && Date.now() - state.loadedAt > REFRESH_MS) load();
  });
  /** @type {number | null} */
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(/** @type {number | undefined} */ (resizeTimer));
    resizeTimer = setTimeout(function () {
      if (state.data) drawChart(state.data);
    }, 100);
  });
  schedule();
  selectRange(state.range);
})();
