/**
 * The images a turn's text refers to (issue #39): markdown images (`![alt](url)`) and HTML
 * `<img src=…>` outside code, quotes and HTML comments, each sorted into what Tether may fetch
 * and what it refuses. Pure: the fetching is turn/turn-images.ts's.
 *
 * What is fetched (docs/security.md, "Images from the thread"):
 * - an attachment on the GitHub host itself (github.com, or GHE_HOST), in one of the forms
 *   GitHub gives uploads: `/user-attachments/assets/<id>`, `/<owner>/<repo>/assets/<n>/<id>`,
 *   GitHub Enterprise's `/storage/user/<n>/files/<id>`. Only these get the installation token;
 * - a relative link (`docs/shot.png`, `./a.png`, `/a.png`): a file of the repository, read from
 *   its mirror at the turn's commit, the path confined to the tree (no `..`).
 * Everything else (another host, another path on GitHub's host, a data: URL) is refused, and the
 * footer says so: an image URL on another host could point the runner anywhere its network
 * reaches, so it is not fetched at all.
 */
import { hiddenMask } from "../../intake/parse-comment.js";
import { MAX_IMAGES, type SkippedImage } from "../../core/images.js";

export type ImageRef =
  | { kind: "attachment"; source: string; url: string }
  | { kind: "repo"; source: string; path: string };

export interface ImageRefs {
  /** What may be fetched, in order, at most MAX_IMAGES. */
  take: ImageRef[];
  /** What is refused without fetching, with why. */
  skipped: SkippedImage[];
}

const MARKDOWN_IMAGE = /!\[[^\]\n]*\]\(\s*(<[^>\n]*>|[^\s)]+)(?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\)/g;
const IMG_TAG = /<img\b[^>]*?\ssrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))[^>]*>/gi;

/** The image links of one text, in the order they appear, outside code, quotes and comments. */
export function imageLinksIn(body: string): string[] {
  const hidden = hiddenMask(body);
  const found: Array<{ at: number; link: string }> = [];
  for (const m of body.matchAll(MARKDOWN_IMAGE)) {
    if (hidden[m.index] === 1) continue;
    let link = m[1]!;
    if (link.startsWith("<") && link.endsWith(">")) link = link.slice(1, -1);
    found.push({ at: m.index, link: link.trim() });
  }
  for (const m of body.matchAll(IMG_TAG)) {
    if (hidden[m.index] === 1) continue;
    found.push({ at: m.index, link: decodeEntities((m[1] ?? m[2] ?? m[3] ?? "").trim()) });
  }
  return found
    .sort((a, b) => a.at - b.at)
    .map((f) => f.link)
    .filter(Boolean);
}

/**
 * The image references of a turn's texts (the triggering comments first), deduplicated, sorted
 * into what may be fetched and what is refused; past MAX_IMAGES, the rest are refused too.
 * `githubOrigin`: `https://github.com`, or `GHE_PROTOCOL://GHE_HOST`.
 */
export function imageRefs(texts: readonly string[], githubOrigin: string): ImageRefs {
  const seen = new Set<string>();
  const take: ImageRef[] = [];
  const skipped: SkippedImage[] = [];
  for (const text of texts) {
    for (const link of imageLinksIn(text)) {
      if (seen.has(link)) continue;
      seen.add(link);
      const ref = classifyImageLink(link, githubOrigin);
      if ("why" in ref) skipped.push(ref);
      else if (take.length >= MAX_IMAGES)
        skipped.push({ source: link, why: `over the limit of ${MAX_IMAGES} images a turn` });
      else take.push(ref);
    }
  }
  return { take, skipped };
}

/** What one link is: an attachment on GitHub's host, a file of the repository, or refused. */
export function classifyImageLink(link: string, githubOrigin: string): ImageRef | SkippedImage {
  const source = link;
  const refuse = (why: string): SkippedImage => ({ source, why });
  if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith("//")) {
    let url: URL;
    try {
      url = new URL(link.startsWith("//") ? `https:${link}` : link);
    } catch {
      return refuse("not a valid URL");
    }
    if (url.protocol !== "https:" && url.protocol !== "http:")
      return refuse(`a ${url.protocol} link, not one Tether fetches`);
    const github = new URL(githubOrigin);
    if (url.host !== github.host)
      return refuse(
        `on another host (${url.host}): Tether fetches images only from ${github.host}`,
      );
    if (url.protocol !== github.protocol)
      return refuse(`not ${github.protocol}// like ${github.host}`);
    if (url.username || url.password) return refuse("a URL with credentials in it");
    if (!isAttachmentPath(url.pathname))
      return refuse(`not an uploaded attachment on ${github.host}`);
    url.hash = "";
    return { kind: "attachment", source, url: url.toString() };
  }
  const path = repoPath(link);
  if (path === null) return refuse("not a path inside the repository");
  return { kind: "repo", source, path };
}

/** The path forms GitHub (and GitHub Enterprise Server) gives uploaded files. */
export function isAttachmentPath(pathname: string): boolean {
  const id = "[A-Za-z0-9][A-Za-z0-9._-]*";
  return [
    new RegExp(`^/user-attachments/assets/${id}$`),
    new RegExp(`^/${id}/${id}/assets/\\d+/${id}$`),
    new RegExp(`^/storage/user/\\d+/files/${id}$`),
  ].some((re) => re.test(pathname));
}

/**
 * A relative link as a path in the repository's tree, or null when it would leave the tree or is
 * no plain path. `./a.png` and `/a.png` (GitHub renders a leading slash from the root) are `a.png`.
 */
export function repoPath(link: string): string | null {
  let raw = link.replace(/[?#].*$/, "");
  try {
    raw = decodeURIComponent(raw);
  } catch {
    return null;
  }
  if (/[\0\\\n\r]/.test(raw)) return null;
  const parts: string[] = [];
  for (const part of raw.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") return null;
    parts.push(part);
  }
  if (parts.length === 0 || parts[0] === ".git") return null;
  return parts.join("/");
}

function decodeEntities(s: string): string {
  return s
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}
