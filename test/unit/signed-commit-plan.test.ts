/** Which tree entries and blobs a commit made through the Git Data API needs (planTree). */
import { describe, expect, it } from "vitest";
import { planTree, type TreeChange } from "../../src/publish/signed-commit.js";

const A = "a".repeat(40);
const B = "b".repeat(40);
const C = "c".repeat(40);
const ZERO = "0".repeat(40);

const rows: Array<{
  name: string;
  changes: TreeChange[];
  known: string[];
  blobs: string[];
  entries: unknown[];
}> = [
  {
    name: "a new file: its blob, then a blob entry",
    changes: [{ path: "a.txt", mode: "100644", sha: A, deleted: false }],
    known: [],
    blobs: [A],
    entries: [{ path: "a.txt", mode: "100644", type: "blob", sha: A }],
  },
  {
    name: "content GitHub already has (a copy, a mode change): no blob",
    changes: [
      { path: "copy.txt", mode: "100644", sha: B, deleted: false },
      { path: "run.sh", mode: "100755", sha: C, deleted: false },
    ],
    known: [B, C],
    blobs: [],
    entries: [
      { path: "copy.txt", mode: "100644", type: "blob", sha: B },
      { path: "run.sh", mode: "100755", type: "blob", sha: C },
    ],
  },
  {
    name: "the same new content twice: one blob",
    changes: [
      { path: "x", mode: "100644", sha: A, deleted: false },
      { path: "y", mode: "100644", sha: A, deleted: false },
    ],
    known: [],
    blobs: [A],
    entries: [
      { path: "x", mode: "100644", type: "blob", sha: A },
      { path: "y", mode: "100644", type: "blob", sha: A },
    ],
  },
  {
    name: "a deletion: a null sha on the base tree, no blob",
    changes: [{ path: "old.txt", mode: "000000", sha: ZERO, deleted: true }],
    known: [],
    blobs: [],
    entries: [{ path: "old.txt", mode: "100644", type: "blob", sha: null }],
  },
  {
    name: "a symbolic link: a blob of its target, mode 120000",
    changes: [{ path: "link", mode: "120000", sha: A, deleted: false }],
    known: [],
    blobs: [A],
    entries: [{ path: "link", mode: "120000", type: "blob", sha: A }],
  },
  {
    name: "a submodule: a commit entry, nothing uploaded",
    changes: [{ path: "vendor/lib", mode: "160000", sha: B, deleted: false }],
    known: [],
    blobs: [],
    entries: [{ path: "vendor/lib", mode: "160000", type: "commit", sha: B }],
  },
];

describe("planTree", () => {
  it.each(rows)("$name", ({ changes, known, blobs, entries }) => {
    expect(planTree(changes, new Set(known))).toEqual({ blobs, entries });
  });

  it("refuses a mode the API has no entry for", () => {
    expect(() =>
      planTree([{ path: "d", mode: "040000", sha: A, deleted: false }], new Set()),
    ).toThrow(/mode 040000/);
  });
});
