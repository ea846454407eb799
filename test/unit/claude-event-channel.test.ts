import { describe, expect, it } from "vitest";
import { EventChannel } from "../../src/agent-cli/event-channel.js";

async function drain<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of it) out.push(v);
  return out;
}

describe("EventChannel", () => {
  it("keeps events pushed before anyone reads", async () => {
    const ch = new EventChannel<number>();
    ch.push(1);
    ch.push(2);
    ch.close();
    expect(await drain(ch)).toEqual([1, 2]);
  });

  it("hands events to a waiting reader as they come, then ends", async () => {
    const ch = new EventChannel<number>();
    const reading = drain(ch);
    for (let i = 0; i < 3; i++) {
      await Promise.resolve();
      ch.push(i);
    }
    ch.close();
    expect(await reading).toEqual([0, 1, 2]);
  });

  it("drops past the limit when nobody reads, and counts", async () => {
    const ch = new EventChannel<number>(3);
    for (let i = 0; i < 5; i++) ch.push(i);
    ch.close();
    expect(await drain(ch)).toEqual([0, 1, 2]);
    expect(ch.dropped).toBe(2);
  });

  it("ignores pushes after close", async () => {
    const ch = new EventChannel<number>();
    ch.close();
    ch.push(1);
    expect(await drain(ch)).toEqual([]);
  });

  it("stays in order across a long stream read as it goes", async () => {
    const ch = new EventChannel<number>(10_000);
    for (let i = 0; i < 5000; i++) ch.push(i);
    const reader = ch[Symbol.asyncIterator]();
    const first = await reader.next();
    for (let i = 5000; i < 9000; i++) ch.push(i);
    ch.close();
    const rest: number[] = [];
    for (let r = await reader.next(); !r.done; r = await reader.next()) rest.push(r.value);
    expect([first.value, ...rest]).toEqual(Array.from({ length: 9000 }, (_, i) => i));
  });
});
