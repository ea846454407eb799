import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkOriginConfig,
  parseConfigListing,
  refusal,
  type ConfigEntry,
  type OriginCheck,
} from "../../src/runner/origin-config.js";

const CLONE = "https://github.com/octo/widgets.git";
const origin: ConfigEntry = { scope: "local", key: "remote.origin.url", value: CLONE };
const global = (key: string, value: string | null): ConfigEntry => ({
  scope: "global",
  key,
  value,
});
const local = (key: string, value: string | null): ConfigEntry => ({ scope: "local", key, value });

describe("parseConfigListing", () => {
  it("splits scope, key and value, keeping newlines inside values", () => {
    const out =
      "local\0remote.origin.url\nhttps://x/y.git\0" +
      "global\0url.https://mirror/.insteadof\nhttps://github.com/\0" +
      "worktree\0http.extraheader\nA: 1\nB: 2\0" +
      "local\0url.x.insteadof\0";
    expect(parseConfigListing(out)).toEqual([
      { scope: "local", key: "remote.origin.url", value: "https://x/y.git" },
      { scope: "global", key: "url.https://mirror/.insteadof", value: "https://github.com/" },
      { scope: "worktree", key: "http.extraheader", value: "A: 1\nB: 2" },
      { scope: "local", key: "url.x.insteadof", value: null },
    ]);
    expect(parseConfigListing("")).toEqual([]);
  });
});

describe("checkOriginConfig", () => {
  const rows: Array<{ name: string; entries: ConfigEntry[]; check: OriginCheck }> = [
    {
      name: "origin is the clone URL, nothing else set",
      entries: [origin],
      check: { unsafeKeys: [], repoint: false, askGit: false },
    },
    {
      name: "a proxy in the checkout's own config",
      entries: [origin, local("http.proxy", "http://evil:1")],
      check: { unsafeKeys: ["http.proxy"], repoint: false, askGit: false },
    },
    {
      name: "the operator's own proxy (global) is theirs to set",
      entries: [global("http.proxy", "http://corp:3128"), origin],
      check: { unsafeKeys: [], repoint: false, askGit: false },
    },
    {
      name: "worktree config is the checkout's own too",
      entries: [origin, { scope: "worktree", key: "credential.helper", value: "store" }],
      check: { unsafeKeys: ["credential.helper"], repoint: false, askGit: false },
    },
    {
      name: "a key set twice is named once",
      entries: [origin, local("include.path", "/a"), local("include.path", "/b")],
      check: { unsafeKeys: ["include.path"], repoint: false, askGit: false },
    },
    {
      name: "a global insteadOf that matches the clone URL: git must say where it goes",
      entries: [global("url.https://mirror.example/.insteadof", "https://github.com/"), origin],
      check: { unsafeKeys: [], repoint: false, askGit: true },
    },
    {
      name: "a global insteadOf for another host changes nothing",
      entries: [global("url.https://mirror.example/.insteadof", "https://gitlab.com/"), origin],
      check: { unsafeKeys: [], repoint: false, askGit: false },
    },
    {
      name: "a prefix differing only in case: asked (never fewer matches than git)",
      entries: [global("url.https://mirror.example/.insteadof", "HTTPS://GitHub.com/"), origin],
      check: { unsafeKeys: [], repoint: false, askGit: true },
    },
    {
      name: "an empty insteadOf matches everything",
      entries: [global("url.https://mirror.example/.insteadof", ""), origin],
      check: { unsafeKeys: [], repoint: false, askGit: true },
    },
    {
      name: "a valueless insteadOf: git decides (it refuses it)",
      entries: [global("url.https://mirror.example/.insteadof", null), origin],
      check: { unsafeKeys: [], repoint: false, askGit: true },
    },
    {
      name: "pushInsteadOf does not touch a fetch",
      entries: [global("url.https://mirror.example/.pushinsteadof", "https://github.com/"), origin],
      check: { unsafeKeys: [], repoint: false, askGit: false },
    },
    {
      name: "origin repointed by the agent",
      entries: [{ ...origin, value: "https://evil.example/x.git" }],
      check: { unsafeKeys: [], repoint: true, askGit: true },
    },
    {
      name: "origin with two URLs",
      entries: [origin, origin],
      check: { unsafeKeys: [], repoint: true, askGit: true },
    },
    {
      name: "origin's URL set only outside the checkout",
      entries: [{ ...origin, scope: "global" }],
      check: { unsafeKeys: [], repoint: true, askGit: true },
    },
    {
      name: "no origin URL at all",
      entries: [],
      check: { unsafeKeys: [], repoint: true, askGit: true },
    },
    {
      name: "a remote whose name differs in case is another remote",
      entries: [origin, local("remote.Origin.proxy", "http://x")],
      check: { unsafeKeys: [], repoint: false, askGit: false },
    },
  ];

  it.each(rows)("$name", ({ entries, check }) => {
    expect(checkOriginConfig(entries, CLONE)).toEqual(check);
  });

  /** git's rule (remote.c alias_url): the longest insteadOf value that prefixes the URL wins. */
  function gitRewrite(url: string, rules: Array<{ base: string; insteadOf: string }>): string {
    let best: { base: string; insteadOf: string } | undefined;
    for (const r of rules) {
      if (url.startsWith(r.insteadOf) && (!best || r.insteadOf.length > best.insteadOf.length)) {
        best = r;
      }
    }
    return best ? best.base + url.slice(best.insteadOf.length) : url;
  }

  it("never skips git when git's own rule would rewrite the clone URL", () => {
    const prefix = fc.constantFrom(
      "",
      "h",
      "https://",
      "https://github.com",
      "https://github.com/",
      "https://GitHub.com/",
      "https://github.com/octo/",
      CLONE,
      `${CLONE}x`,
      "https://gitlab.com/",
      "git@github.com:",
    );
    const rule = fc.record({
      base: fc.constantFrom("https://mirror.example/", "https://github.com/", ""),
      insteadOf: prefix,
      scope: fc.constantFrom("system", "global", "command"),
    });
    fc.assert(
      fc.property(fc.array(rule, { maxLength: 4 }), (rules) => {
        const entries = [
          ...rules.map((r) => ({
            scope: r.scope,
            key: `url.${r.base}.insteadof`,
            value: r.insteadOf,
          })),
          origin,
        ];
        const check = checkOriginConfig(entries, CLONE);
        if (!check.askGit) expect(gitRewrite(CLONE, rules)).toBe(CLONE);
      }),
    );
  });
});

describe("refusal", () => {
  const clean: OriginCheck = { unsafeKeys: [], repoint: false, askGit: false };
  it("names the unsafe keys first, then a rewritten URL, else lets the fetch go", () => {
    expect(refusal({ ...clean, unsafeKeys: ["http.proxy", "core.askpass"] }, CLONE, CLONE)).toBe(
      "the checkout's git config sets http.proxy, core.askpass; remove it so Tether can fetch",
    );
    expect(refusal(clean, "https://mirror.example/octo/widgets.git", CLONE)).toBe(
      "the checkout's git config rewrites the clone URL; remove the url.* setting so Tether can fetch",
    );
    expect(refusal(clean, CLONE, CLONE)).toBeUndefined();
  });
});
