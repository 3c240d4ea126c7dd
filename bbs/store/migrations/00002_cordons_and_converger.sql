-- Operator state for issue 4: cell cordons and the converger's maintenance flag and
-- last pass report. Timestamps are BIGINT Unix nanoseconds.

-- +goose Up
-- A cordoned cell takes no new work. Cordons are kept by cell id, independent of the
-- cell's presence, so they survive presence expiry and rep restarts.
CREATE TABLE cell_cordons (
    cell_id     TEXT PRIMARY KEY,
    reason      TEXT   NOT NULL DEFAULT '',
    cordoned_at BIGINT NOT NULL
);

-- One row: whether destructive convergence is paused, and the last pass summary
-- (protobuf drover.bbs.v1.ConvergencePass).
CREATE TABLE converger_state (
    id         BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
    paused     BOOLEAN NOT NULL DEFAULT false,
    reason     TEXT    NOT NULL DEFAULT '',
    changed_at BIGINT  NOT NULL DEFAULT 0,
    last_pass  BYTEA
);
INSERT INTO converger_state (id) VALUES (true);

-- +goose Down
DROP TABLE converger_state;
DROP TABLE cell_cordons;
