import { describe, expect, it } from "vitest";
import { MAX_IMAGES, sniffImage } from "../../src/core/images.js";
import {
  classifyImageLink,
  imageLinksIn,
  imageRefs,
  repoPath,
} from "../../src/runner/render/image-refs.js";
import { renderFooter } from "../../src/runner/render/thread-comments.js";

const GH = "https://github.com";
const ASSET = "https://github.com/user-attachments/assets/0c5a1e3e-1f0b-4c8e-9b5e-3b2d7a1e9f00";

describe("imageLinksIn: the image links of a text, outside code, quotes and comments", () => {
  it.each([
    ["markdown", `see ![shot](${ASSET})`, [ASSET]],
    ["markdown with a title", `![a](${ASSET} "title")`, [ASSET]],
    ["markdown in angle brackets", `![a](<docs/my shot.png>)`, ["docs/my shot.png"]],
    ["img, double quotes", `<img width="300" alt="x" src="${ASSET}">`, [ASSET]],
    ["img, single quotes", `<img src='${ASSET}' />`, [ASSET]],
    ["img, unquoted", `<IMG SRC=${ASSET}>`, [ASSET]],
    ["img, entities", `<img src="docs/a.png?x=1&amp;y=2">`, ["docs/a.png?x=1&y=2"]],
    ["in order of appearance", `<img src="b.png"> then ![a](a.png)`, ["b.png", "a.png"]],
    ["a plain link is no image", `[shot](${ASSET})`, []],
    ["inside a code span", "`![a](a.png)`", []],
    ["inside a fenced block", "```\n![a](a.png)\n```", []],
    ["inside a quote", "> ![a](a.png)", []],
    ["inside an HTML comment", "<!-- ![a](a.png) -->", []],
    ["empty src", `<img src="">`, []],
  ])("%s", (_, text, want) => {
    expect(imageLinksIn(text)).toEqual(want);
  });
});

describe("classifyImageLink: what is fetched, with or without the token, and what is refused", () => {
  it.each([
    ["a github.com attachment", ASSET, GH, { kind: "attachment", url: ASSET }],
    [
      "an older repository asset",
      "https://github.com/octo/widgets/assets/123/0c5a1e3e-1f0b",
      GH,
      { kind: "attachment" },
    ],
    [
      "GHE's storage form",
      "https://ghe.example.com/storage/user/7/files/0c5a1e3e",
      "https://ghe.example.com",
      { kind: "attachment" },
    ],
    [
      "GHE's user-attachments",
      "http://127.0.0.1:8080/user-attachments/assets/abc",
      "http://127.0.0.1:8080",
      { kind: "attachment" },
    ],
    ["a fragment is dropped", `${ASSET}#x`, GH, { kind: "attachment", url: ASSET }],
    ["a repository file", "docs/shot.png", GH, { kind: "repo", path: "docs/shot.png" }],
    [
      "./ and a leading / mean the root",
      "/./docs//a.png",
      GH,
      { kind: "repo", path: "docs/a.png" },
    ],
    [
      "percent-encoding decoded",
      "docs/my%20shot.png",
      GH,
      { kind: "repo", path: "docs/my shot.png" },
    ],
    ["query dropped", "a.png?raw=true", GH, { kind: "repo", path: "a.png" }],
  ])("%s", (_, link, origin, want) => {
    expect(classifyImageLink(link, origin)).toMatchObject(want);
  });

  it.each([
    ["another host", "https://evil.example/a.png", GH, /on another host \(evil\.example\)/],
    [
      "a look-alike host",
      "https://github.com.evil.example/user-attachments/assets/x",
      GH,
      /another host/,
    ],
    [
      "github.com on another port",
      "https://github.com:444/user-attachments/assets/x",
      GH,
      /another host/,
    ],
    ["the old CDN", "https://user-images.githubusercontent.com/1/a.png", GH, /another host/],
    [
      "another path on GitHub",
      "https://github.com/octo/widgets/raw/main/a.png",
      GH,
      /not an uploaded attachment/,
    ],
    ["an API path on GitHub", "https://github.com/api/v3/user", GH, /not an uploaded attachment/],
    ["http to an https GitHub", "http://github.com/user-attachments/assets/x", GH, /not https:/],
    [
      "credentials in the URL",
      "https://u:p@github.com/user-attachments/assets/x",
      GH,
      /credentials/,
    ],
    ["a data: URL", "data:image/png;base64,AAAA", GH, /data: link/],
    ["a file: URL", "file:///etc/passwd", GH, /file: link/],
    ["protocol-relative elsewhere", "//evil.example/a.png", GH, /another host/],
    ["up and out of the repository", "../../etc/passwd", GH, /not a path inside the repository/],
    ["hidden .. in the middle", "docs/../../x.png", GH, /not a path inside/],
    ["encoded ..", "docs/%2e%2e/%2e%2e/x.png", GH, /not a path inside/],
    ["into .git", ".git/config", GH, /not a path inside/],
    ["a backslash", "docs\\..\\x.png", GH, /not a path inside/],
  ])("refused: %s", (_, link, origin, why) => {
    const got = classifyImageLink(link, origin);
    expect(got).toMatchObject({ source: link });
    expect("why" in got && got.why).toMatch(why);
  });
});

describe("imageRefs: the turn's texts in order, deduplicated, bounded", () => {
  it("takes the first texts' images first and each link once", () => {
    const r = imageRefs([`![a](a.png) ![b](${ASSET})`, `![a again](a.png) ![c](c.png)`], GH);
    expect(r.take.map((t) => t.source)).toEqual(["a.png", ASSET, "c.png"]);
    expect(r.skipped).toEqual([]);
  });

  it(`takes at most ${MAX_IMAGES}; the rest are named as over the limit`, () => {
    const links = Array.from({ length: MAX_IMAGES + 2 }, (_, i) => `![i](img-${i}.png)`);
    const r = imageRefs([links.join("\n")], GH);
    expect(r.take).toHaveLength(MAX_IMAGES);
    expect(r.skipped).toEqual([
      { source: `img-${MAX_IMAGES}.png`, why: `over the limit of ${MAX_IMAGES} images a turn` },
      { source: `img-${MAX_IMAGES + 1}.png`, why: `over the limit of ${MAX_IMAGES} images a turn` },
    ]);
  });

  it("a refused link does not take a place", () => {
    const r = imageRefs(["![x](https://evil.example/x.png) ![a](a.png)"], GH);
    expect(r.take.map((t) => t.source)).toEqual(["a.png"]);
    expect(r.skipped.map((s) => s.source)).toEqual(["https://evil.example/x.png"]);
  });
});

describe("repoPath", () => {
  it.each([
    ["a.png", "a.png"],
    ["./a/b.png", "a/b.png"],
    ["", null],
    ["/", null],
    ["a/../b.png", null],
    ["%zz", null],
  ])("%j → %j", (link, want) => {
    expect(repoPath(link)).toBe(want);
  });
});

describe("sniffImage: the type from the first bytes, whatever a server says", () => {
  const b = (...x: Array<number | string>) =>
    Buffer.concat(
      x.map((v) => (typeof v === "string" ? Buffer.from(v, "latin1") : Buffer.from([v]))),
    );
  it.each([
    ["png", b(0x89, "PNG\r\n\x1a\n", "rest"), "image/png"],
    ["jpeg", b(0xff, 0xd8, 0xff, 0xe0, "JFIF"), "image/jpeg"],
    ["gif87a", b("GIF87a", 1, 0), "image/gif"],
    ["gif89a", b("GIF89a", 1, 0), "image/gif"],
    ["webp", b("RIFF", 0, 0, 0, 0, "WEBPVP8 "), "image/webp"],
    ["a RIFF that is not webp (wav)", b("RIFF", 0, 0, 0, 0, "WAVEfmt "), null],
    ["svg (script can hide in it)", b("<svg xmlns='http://www.w3.org/2000/svg'/>"), null],
    ["html", b("<!doctype html>"), null],
    ["a truncated png", b(0x89, "PNG"), null],
    ["empty", b(), null],
  ])("%s", (_, bytes, want) => {
    expect(sniffImage(bytes)).toBe(want);
  });
});

describe("the footer's images", () => {
  const base = {
    resumed: false,
    reason: "no_prior_session" as const,
    sessionId: null,
    usage: null,
  };
  it("counts what was shown and names what was left out, links as code", () => {
    const f = renderFooter({
      ...base,
      images: {
        shown: 1,
        skipped: [
          { source: "https://evil.example/`@everyone`.png", why: "on another host (evil.example)" },
        ],
      },
    });
    expect(f).toContain("🖼️ 1 image shown");
    expect(f).toContain(
      "<sub>🖼️ left out: `https://evil.example/@everyone.png` (on another host (evil.example))</sub>",
    );
  });

  it("names five and counts the rest", () => {
    const skipped = Array.from({ length: 7 }, (_, i) => ({
      source: `${i}.png`,
      why: "no such file",
    }));
    const f = renderFooter({ ...base, images: { shown: 0, skipped } });
    expect(f).not.toContain("shown");
    expect(f).toContain("`4.png` (no such file); and 2 more");
  });

  it("says nothing without images", () => {
    expect(renderFooter(base)).not.toContain("🖼️");
  });
});
