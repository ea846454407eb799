/**
 * Images a turn shows the model (issue #39): the kinds every CLI that takes images accepts, what
 * a byte string is (sniffed from its first bytes, never from a Content-Type), and the bounds.
 */

/** The image types Tether passes on: what the Claude, OpenAI and Gemini APIs all accept. */
export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;
export type ImageType = (typeof IMAGE_TYPES)[number];

/** At most this many images a turn; the rest are named in the footer. */
export const MAX_IMAGES = 10;
/** At most this many bytes an image; a larger one is not downloaded past it. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** One image of a turn, in a file of the turn's image directory. */
export interface TurnImage {
  /** Host path of the file (outside the checkout). */
  path: string;
  mediaType: ImageType;
  /** Where it came from, as the comment wrote it (a URL or a repository path). */
  source: string;
}

/** An image reference a turn did not pass on, and why (the footer says both). */
export interface SkippedImage {
  source: string;
  why: string;
}

/** The type of an image from its magic bytes; null: not one of IMAGE_TYPES. */
export function sniffImage(bytes: Uint8Array): ImageType | null {
  const at = (i: number, ...want: number[]) => want.every((b, k) => bytes[i + k] === b);
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (at(0, 0xff, 0xd8, 0xff)) return "image/jpeg";
  // "GIF87a" or "GIF89a"
  if (at(0, 0x47, 0x49, 0x46, 0x38) && (at(4, 0x37, 0x61) || at(4, 0x39, 0x61))) return "image/gif";
  // "RIFF" <size> "WEBP"
  if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return "image/webp";
  return null;
}

/** The file name extension of a type, for the file a CLI is given. */
export function imageExtension(t: ImageType): string {
  return { "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp" }[t];
}
