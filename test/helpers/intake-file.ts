import { beforeEach } from "vitest";
import { createTestDatabase, type TestDatabase } from "./db.js";
import { useNock } from "./intake-github.js";
import { createTestApp, type TestApp } from "./probot.js";

/** What an intake test file works with; `app`, `issue` and `commentId` are new for each test. */
export interface IntakeFile {
  db: TestDatabase;
  /** The app over the file's database, made before each test. */
  app: TestApp;
  /** The issue of the current test: one more than the last test's. */
  issue: number;
  /** The comment of the current test: one more than the last test's. */
  commentId: number;
}

/**
 * The set-up every intake test file shares: its database, GitHub through nock, and before each
 * test a new app and the next issue and comment numbers (counted from `issue` and `commentId`,
 * each file its own range, so no test sees another's rows).
 */
export async function intakeFile(start: { issue: number; commentId: number }): Promise<IntakeFile> {
  const t: IntakeFile = {
    db: await createTestDatabase(),
    app: undefined as unknown as TestApp,
    ...start,
  };
  useNock();
  beforeEach(async () => {
    t.app = await createTestApp(t.db);
    t.issue++;
    t.commentId++;
  });
  return t;
}
