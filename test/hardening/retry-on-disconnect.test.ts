import { describe, expect, it } from "vitest";
import { isConnectionError, retryOnDisconnect } from "../../src/db/retry-on-disconnect.js";

const err = (message: string, code?: string) => Object.assign(new Error(message), { code });

describe("isConnectionError", () => {
  it.each([
    { e: err("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED"), is: true },
    { e: err("read ECONNRESET", "ECONNRESET"), is: true },
    { e: err("terminating connection due to administrator command", "57P01"), is: true },
    { e: err("the database system is starting up", "57P03"), is: true },
    { e: err("the database system is shutting down", "57P03"), is: true },
    { e: err("connection failure", "08006"), is: true },
    { e: err("Connection terminated unexpectedly"), is: true },
    { e: err("timeout exceeded when trying to connect"), is: true },
    { e: err("Client has encountered a connection error and is not queryable"), is: true },
    { e: err('duplicate key value violates unique constraint "x"', "23505"), is: false },
    { e: err("canceling statement due to statement timeout", "57014"), is: false },
    { e: err('relation "nope" does not exist', "42P01"), is: false },
    { e: "a string", is: false },
    { e: null, is: false },
  ])("$e → $is", ({ e, is }) => {
    expect(isConnectionError(e)).toBe(is);
  });
});

describe("retryOnDisconnect", () => {
  it("tries again while the database is unreachable, then returns the answer", async () => {
    let calls = 0;
    const retries: number[] = [];
    const out = await retryOnDisconnect(
      async () => {
        if (++calls < 3) throw err("connect ECONNREFUSED", "ECONNREFUSED");
        return "ok";
      },
      { firstDelayMs: 5, onRetry: (_e, attempt) => retries.push(attempt) },
    );
    expect(out).toBe("ok");
    expect(calls).toBe(3);
    expect(retries).toEqual([1, 2]);
  });

  it("throws any other error at once", async () => {
    let calls = 0;
    await expect(
      retryOnDisconnect(async () => {
        calls++;
        throw err("duplicate key", "23505");
      }),
    ).rejects.toThrow("duplicate key");
    expect(calls).toBe(1);
  });

  it("gives up with the last error once its time is spent", async () => {
    let calls = 0;
    const started = Date.now();
    await expect(
      retryOnDisconnect(
        async () => {
          calls++;
          throw err("connect ECONNREFUSED", "ECONNREFUSED");
        },
        { maxWaitMs: 200, firstDelayMs: 20, maxDelayMs: 40 },
      ),
    ).rejects.toThrow("ECONNREFUSED");
    expect(Date.now() - started).toBeLessThan(1000);
    expect(calls).toBeGreaterThan(2);
  });
});
