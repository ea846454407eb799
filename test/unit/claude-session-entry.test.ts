import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readEntry } from "../../src/claude/session-entry.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-entry-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A transcript as 2.1.332 writes it (the fields that matter), one JSON object a line. */
const line = (o: Record<string, unknown>) => JSON.stringify(o) + "\n";
const FIRST_TURN =
  line({ type: "queue-operation", operation: "enqueue" }) +
  line({ type: "user", uuid: "u-1", parentUuid: null }) +
  line({ type: "assistant", uuid: "a-1", parentUuid: "u-1" }) +
  line({ type: "attachment", uuid: "t-1", parentUuid: "a-1" }) +
  line({ type: "last-prompt", leafUuid: "t-1" }) +
  line({ type: "cost-state", totalCostUSD: 0.01 });
const SECOND_TURN =
  line({ type: "queue-operation", operation: "enqueue" }) +
  line({ type: "user", uuid: "u-2", parentUuid: "t-1" }) +
  line({ type: "assistant", uuid: "a-2", parentUuid: "u-2" });

function file(name: string, text: string): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, text);
  return f;
}

describe("readEntry: where a resumed run's turn entered its session", () => {
  it("the parentUuid of the first line with a uuid after the offset", async () => {
    const f = file("two.jsonl", FIRST_TURN + SECOND_TURN);
    expect(await readEntry(f, Buffer.byteLength(FIRST_TURN))).toBe("t-1");
  });
  it("nothing appended, or a chain that starts there: none", async () => {
    expect(await readEntry(file("one.jsonl", FIRST_TURN), Buffer.byteLength(FIRST_TURN))).toBe(
      undefined,
    );
    expect(await readEntry(file("fresh.jsonl", FIRST_TURN), 0)).toBe(undefined);
  });
  it("a link in the file's place is not followed", async () => {
    const real = file("real.jsonl", FIRST_TURN + SECOND_TURN);
    const link = path.join(dir, "link.jsonl");
    fs.symlinkSync(real, link);
    await expect(readEntry(link, Buffer.byteLength(FIRST_TURN))).rejects.toThrow(/ELOOP/);
  });

  it("an unreadable line or a parent that is no uuid: none, never thrown", async () => {
    const broken = file("broken.jsonl", FIRST_TURN + '{"uuid": "x", trailing\n' + SECOND_TURN);
    expect(await readEntry(broken, Buffer.byteLength(FIRST_TURN))).toBe(undefined);
    const odd = file(
      "odd.jsonl",
      FIRST_TURN + line({ type: "user", uuid: "u-2", parentUuid: "--fork-session" }),
    );
    expect(await readEntry(odd, Buffer.byteLength(FIRST_TURN))).toBe(undefined);
  });
});
