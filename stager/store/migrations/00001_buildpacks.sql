-- +goose Up
CREATE TABLE stager.buildpacks (
    name       text        NOT NULL,
    stack      text        NOT NULL,
    position   integer     NOT NULL CHECK (position >= 1),
    sha256     text        NOT NULL,
    size       bigint      NOT NULL,
    blob_key   text        NOT NULL,
    filename   text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stack, name),
    CONSTRAINT buildpacks_position_unique UNIQUE (stack, position) DEFERRABLE INITIALLY DEFERRED
);

-- +goose Down
DROP TABLE stager.buildpacks;
