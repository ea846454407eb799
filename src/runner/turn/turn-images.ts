/**
 * Fetches a turn's images (issue #39) into a directory of the turn's own, outside the checkout:
 * attachments from GitHub's host with the installation token (the redirect to storage followed
 * without it), repository files from the mirror at the turn's commit. Each is bounded (bytes,
 * time) and sniffed by its magic bytes; whatever is not passed on is named with why, for the
 * footer. Which links qualify is render/image-refs.ts's (pure).
 */
import fs from "node:fs/promises";
import path from "node:path";
import {
  imageExtension,
  MAX_IMAGE_BYTES,
  sniffImage,
  type SkippedImage,
  type TurnImage,
} from "../../core/images.js";
import { findCli } from "../../cli-registry.js";
import type { Logger } from "../../log.js";
import type { ResumeDecision } from "../../core/resume-decision.js";
import type { CliKind } from "../ports.js";
import { imageRefs, type ImageRef } from "../render/image-refs.js";
import type { PromptComment } from "../render/prompts.js";
import type { ThreadRead } from "./turn-prompt.js";
import type { RunTaskDeps } from "./turn.js";

export interface CollectedImages {
  images: TurnImage[];
  skipped: SkippedImage[];
}

export interface ImageSources {
  /** The installation token: sent on the first request to GitHub's host only. */
  token: string | undefined;
  /** A file of the repository at the turn's commit; null when there is none (or it is no file). */
  readRepoFile?: (path: string, maxBytes: number) => Promise<Buffer | "too_big" | null>;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
  /** Per image. Default 30 s. */
  timeoutMs?: number;
  maxBytes?: number;
  signal?: AbortSignal;
}

/** Most redirects followed for one attachment (GitHub sends one, to its storage). */
const MAX_REDIRECTS = 3;

/** Fetches `refs` into `dir` (made here), in order; never throws for one image's failure. */
export async function collectImages(
  refs: readonly ImageRef[],
  dir: string,
  src: ImageSources,
): Promise<CollectedImages> {
  const images: TurnImage[] = [];
  const skipped: SkippedImage[] = [];
  if (refs.length === 0) return { images, skipped };
  await fs.mkdir(dir, { recursive: true, mode: 0o755 });
  const maxBytes = src.maxBytes ?? MAX_IMAGE_BYTES;
  for (const ref of refs) {
    if (src.signal?.aborted) break;
    let got: Buffer | string;
    try {
      got =
        ref.kind === "attachment"
          ? await download(ref.url, src, maxBytes)
          : await fromRepo(ref.path, src, maxBytes);
    } catch (err) {
      got = `could not be fetched: ${(err as Error).message}`;
    }
    if (typeof got === "string") {
      skipped.push({ source: ref.source, why: got });
      continue;
    }
    const mediaType = sniffImage(got);
    if (!mediaType) {
      skipped.push({ source: ref.source, why: "not a PNG, JPEG, GIF or WebP image" });
      continue;
    }
    const file = path.join(dir, `image-${images.length + 1}.${imageExtension(mediaType)}`);
    await fs.writeFile(file, got, { mode: 0o644 });
    images.push({ path: file, mediaType, source: ref.source });
  }
  return { images, skipped };
}

async function fromRepo(
  file: string,
  src: ImageSources,
  maxBytes: number,
): Promise<Buffer | string> {
  if (!src.readRepoFile) return "repository files cannot be read here";
  const got = await src.readRepoFile(file, maxBytes);
  if (got === null) return "no such file in the repository at this turn's commit";
  if (got === "too_big") return `larger than ${mb(maxBytes)}`;
  return got;
}

/**
 * GETs an attachment: the token on the first request only (to GitHub's host, which
 * image-refs.ts made sure of); a redirect (to storage) is followed without any credential.
 */
async function download(
  url: string,
  src: ImageSources,
  maxBytes: number,
): Promise<Buffer | string> {
  const doFetch = src.fetch ?? fetch;
  const timeout = AbortSignal.timeout(src.timeoutMs ?? 30_000);
  const signal = src.signal ? AbortSignal.any([src.signal, timeout]) : timeout;
  let next = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const headers: Record<string, string> = { accept: "image/*" };
    if (hop === 0 && src.token) headers.authorization = `token ${src.token}`;
    let res: Response;
    try {
      res = await doFetch(next, { headers, redirect: "manual", signal });
    } catch (err) {
      return timeout.aborted ? "took too long to download" : `could not be fetched (${cause(err)})`;
    }
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      const location = res.headers.get("location");
      if (!location) return `GitHub answered ${res.status} without a location`;
      const to = new URL(location, next);
      if (to.protocol !== "https:" && to.protocol !== "http:")
        return `redirected to a ${to.protocol} link`;
      next = to.toString();
      continue;
    }
    if (!res.ok) {
      await res.body?.cancel();
      return hop === 0
        ? `GitHub answered ${res.status}`
        : `${new URL(next).host} answered ${res.status} after a redirect`;
    }
    const declared = Number(res.headers.get("content-length") ?? NaN);
    if (declared > maxBytes) {
      await res.body?.cancel();
      return `larger than ${mb(maxBytes)}`;
    }
    try {
      return (await readCapped(res, maxBytes)) ?? `larger than ${mb(maxBytes)}`;
    } catch {
      return timeout.aborted ? "took too long to download" : "the download broke off";
    }
  }
  return `more than ${MAX_REDIRECTS} redirects`;
}

/** The body, or null once it passes `max` bytes (the rest is never read). */
async function readCapped(res: Response, max: number): Promise<Buffer | null> {
  if (!res.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let total = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel();
      return null;
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

function cause(err: unknown): string {
  const c = (err as { cause?: { code?: string; message?: string } }).cause;
  return c?.code ?? c?.message ?? (err as Error).message;
}

function mb(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${Math.round((bytes / 1024 / 1024) * 10) / 10} MB`
    : `${Math.round(bytes / 1024)} KB`;
}

/**
 * The images of a turn's runs: under a fresh decision, those of the triggering comments, the
 * issue or pull request body and the thread the prompt carries; resumed, the triggering
 * comments' only (the session has seen the rest). Kept under `root/<task id>` until `dispose`.
 */
export function turnImages(p: {
  config: NonNullable<RunTaskDeps["images"]>;
  cli: CliKind;
  taskId: number;
  requests: readonly PromptComment[];
  issueBody: string | null;
  thread: () => Promise<ThreadRead>;
  token: string | undefined;
  readRepoFile?: ImageSources["readRepoFile"];
  signal: AbortSignal;
  log: Logger;
}): { collect: (d: ResumeDecision) => Promise<CollectedImages>; dispose: () => Promise<void> } {
  const dir = path.join(p.config.root, String(p.taskId));
  let attempt = 0;
  return {
    collect: async (d) => {
      const texts = p.requests.map((r) => r.body);
      if (d.kind === "fresh") {
        const thread = await p.thread().catch(() => null);
        texts.push(p.issueBody ?? "", ...(thread?.comments.map((c) => c.body) ?? []));
      }
      const refs = imageRefs(texts, p.config.githubOrigin);
      const cli = findCli(p.cli)?.images ?? { why: "this CLI takes no images" };
      if (cli !== true)
        return {
          images: [],
          skipped: [...refs.take, ...refs.skipped].map((r) => ({ source: r.source, why: cli.why })),
        };
      const got = await collectImages(refs.take, path.join(dir, String(++attempt)), {
        token: p.token,
        ...(p.readRepoFile ? { readRepoFile: p.readRepoFile } : {}),
        ...(p.config.fetch ? { fetch: p.config.fetch } : {}),
        ...(p.config.timeoutMs ? { timeoutMs: p.config.timeoutMs } : {}),
        signal: p.signal,
      });
      if (got.images.length || refs.skipped.length || got.skipped.length)
        p.log.info(
          { shown: got.images.length, skipped: [...got.skipped, ...refs.skipped] },
          "images from the thread",
        );
      return { images: got.images, skipped: [...got.skipped, ...refs.skipped] };
    },
    dispose: () => fs.rm(dir, { recursive: true, force: true }),
  };
}
