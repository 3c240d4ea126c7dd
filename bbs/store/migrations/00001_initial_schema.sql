-- The BBS schema. Timestamps are BIGINT Unix nanoseconds; enums are the protobuf
-- enum numbers. The encrypted columns (desired_lrps.run_info, tasks.task_definition,
-- events.payload) hold crypt blobs: [label length][label][nonce][ciphertext].

-- +goose Up
CREATE TABLE configurations (
    id    TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE domains (
    domain      TEXT PRIMARY KEY,
    -- 9223372036854775807 means fresh forever.
    expire_time BIGINT NOT NULL
);
CREATE INDEX domains_expire_time_idx ON domains (expire_time);

CREATE TABLE desired_lrps (
    process_guid           TEXT PRIMARY KEY,
    domain                 TEXT    NOT NULL,
    log_guid               TEXT    NOT NULL DEFAULT '',
    annotation             TEXT    NOT NULL DEFAULT '',
    instances              INTEGER NOT NULL CHECK (instances >= 0),
    rootfs                 TEXT    NOT NULL,
    memory_mb              INTEGER NOT NULL DEFAULT 0,
    disk_mb                INTEGER NOT NULL DEFAULT 0,
    max_pids               INTEGER NOT NULL DEFAULT 0,
    -- Router name to opaque JSON.
    routes                 JSONB   NOT NULL DEFAULT '{}',
    placement_tags         TEXT[]  NOT NULL DEFAULT '{}',
    volume_drivers         TEXT[]  NOT NULL DEFAULT '{}',
    update_strategy        SMALLINT NOT NULL DEFAULT 0,
    -- Metric tag name to {"static": ..} or {"dynamic": ..}; a copy of run_info's, for routing info.
    metric_tags            JSONB   NOT NULL DEFAULT '{}',
    modification_tag_epoch TEXT    NOT NULL,
    modification_tag_index BIGINT  NOT NULL DEFAULT 0,
    -- Encrypted protobuf DesiredLRPRunInfo.
    run_info               BYTEA   NOT NULL
);
CREATE INDEX desired_lrps_domain_idx ON desired_lrps (domain);

CREATE TABLE actual_lrps (
    process_guid           TEXT     NOT NULL,
    instance_index         INTEGER  NOT NULL CHECK (instance_index >= 0),
    presence               SMALLINT NOT NULL,
    domain                 TEXT     NOT NULL,
    state                  SMALLINT NOT NULL,
    instance_guid          TEXT     NOT NULL DEFAULT '',
    cell_id                TEXT     NOT NULL DEFAULT '',
    -- Protobuf ActualLRPNetInfo (not encrypted); NULL when the row has none.
    net_info               BYTEA,
    crash_count            INTEGER  NOT NULL DEFAULT 0,
    crash_reason           TEXT     NOT NULL DEFAULT '',
    placement_error        TEXT     NOT NULL DEFAULT '',
    since                  BIGINT   NOT NULL,
    modification_tag_epoch TEXT     NOT NULL,
    modification_tag_index BIGINT   NOT NULL DEFAULT 0,
    routable               BOOLEAN  NOT NULL DEFAULT false,
    availability_zone      TEXT     NOT NULL DEFAULT '',
    internal_routes        TEXT[]   NOT NULL DEFAULT '{}',
    -- Resolved metric tags: protobuf of an ActualLRP holding only metric_tags (cheaper to
    -- decode than JSON when listing 100k rows); NULL when none.
    metric_tags            BYTEA,
    PRIMARY KEY (process_guid, instance_index, presence)
);
CREATE INDEX actual_lrps_domain_idx ON actual_lrps (domain);
CREATE INDEX actual_lrps_cell_id_idx ON actual_lrps (cell_id);
CREATE INDEX actual_lrps_state_idx ON actual_lrps (state);
CREATE INDEX actual_lrps_since_idx ON actual_lrps (since);

CREATE TABLE tasks (
    guid               TEXT PRIMARY KEY,
    domain             TEXT     NOT NULL,
    state              SMALLINT NOT NULL,
    cell_id            TEXT     NOT NULL DEFAULT '',
    result             TEXT     NOT NULL DEFAULT '',
    failed             BOOLEAN  NOT NULL DEFAULT false,
    failure_reason     TEXT     NOT NULL DEFAULT '',
    rejection_count    INTEGER  NOT NULL DEFAULT 0,
    rejection_reason   TEXT     NOT NULL DEFAULT '',
    created_at         BIGINT   NOT NULL,
    updated_at         BIGINT   NOT NULL,
    first_completed_at BIGINT   NOT NULL DEFAULT 0,
    -- Encrypted protobuf TaskDefinition.
    task_definition    BYTEA    NOT NULL
);
CREATE INDEX tasks_domain_idx ON tasks (domain);
CREATE INDEX tasks_state_idx ON tasks (state);
CREATE INDEX tasks_cell_id_idx ON tasks (cell_id);
CREATE INDEX tasks_created_at_idx ON tasks (created_at);
CREATE INDEX tasks_updated_at_idx ON tasks (updated_at);
CREATE INDEX tasks_first_completed_at_idx ON tasks (first_completed_at);

CREATE TABLE cells (
    cell_id    TEXT PRIMARY KEY,
    -- Protobuf CellPresence.
    presence   BYTEA  NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX cells_expires_at_idx ON cells (expires_at);

CREATE TABLE locks (
    key            TEXT PRIMARY KEY,
    owner          TEXT   NOT NULL,
    value          TEXT   NOT NULL DEFAULT '',
    expires_at     BIGINT NOT NULL,
    modified_index BIGINT NOT NULL
);

-- The event log. Sequences are assigned from event_counter while its row is locked
-- until commit, so they are gap-free and increase in commit order.
CREATE TABLE events (
    sequence     BIGINT PRIMARY KEY,
    created_at   BIGINT NOT NULL,
    event_type   TEXT   NOT NULL,
    -- The process guid or task guid the event is about.
    subject      TEXT   NOT NULL DEFAULT '',
    -- Cells an instance event concerns (empty for desired and task events).
    cell_ids     TEXT[] NOT NULL DEFAULT '{}',
    -- Encrypted protobuf Event without sequence and created_at (they are the columns).
    payload      BYTEA  NOT NULL
);
CREATE INDEX events_created_at_idx ON events (created_at);

CREATE TABLE event_counter (
    id            BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
    last_sequence BIGINT NOT NULL
);
INSERT INTO event_counter (id, last_sequence) VALUES (true, 0);

-- Events with sequence <= pruned_through are gone; older cursors must resync.
CREATE TABLE events_pruned (
    id             BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
    pruned_through BIGINT NOT NULL
);
INSERT INTO events_pruned (id, pruned_through) VALUES (true, 0);

-- +goose Down
DROP TABLE events_pruned;
DROP TABLE event_counter;
DROP TABLE events;
DROP TABLE locks;
DROP TABLE cells;
DROP TABLE tasks;
DROP TABLE actual_lrps;
DROP TABLE desired_lrps;
DROP TABLE domains;
DROP TABLE configurations;
