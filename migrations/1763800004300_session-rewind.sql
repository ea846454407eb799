-- Up Migration

-- Rewinding a session instead of discarding it when a comment it read is edited or deleted (#30;
-- src/core/resume-decision.ts planRewind, docs/how-a-turn-runs.md "Rewind").
--
-- tasks.session_entry: the message of the session this turn's prompt hung from (the parentUuid of
-- the first line the run appended to the transcript): `--resume-session-at` there gives the
-- session as it stood just before this turn. NULL: a fresh turn (nothing before it), a fork's
-- first turn, a CLI that cannot rewind, or a turn from before this migration; no rewind goes to
-- before such a turn.
-- tasks.rewound_from: a turn that rewound its session (reason `rewound`): the first turn of the
-- session it rewound past. Those turns are off the session's branch; their comments were re-sent
-- in this one.
ALTER TABLE tasks
  ADD COLUMN session_entry text,
  ADD COLUMN rewound_from bigint;

-- One row per bump of a key's history epoch (sql/history.ts): what changed. source NULL: the
-- issue body (every turn read it). body: the comment's text after an edit (NULL when deleted).
-- A bump with no row here (one from before this migration) cannot be rewound past.
CREATE TABLE history_edits (
  repo          text NOT NULL,
  issue_number  integer NOT NULL,
  agent         text NOT NULL,
  epoch         integer NOT NULL,
  source        text,
  deleted       boolean NOT NULL,
  body          text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repo, issue_number, agent, epoch)
);

-- Down Migration
DROP TABLE history_edits;
ALTER TABLE tasks DROP COLUMN session_entry, DROP COLUMN rewound_from;
