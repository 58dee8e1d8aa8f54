-- +goose Up
-- Connector installs: whether npm may run lifecycle scripts, which source
-- hash a global connector last installed, and a record of every install
-- run so its output can be read afterwards.

ALTER TABLE mcp_catalog ADD COLUMN install_scripts INTEGER NOT NULL DEFAULT 0 CHECK (install_scripts IN (0, 1));

ALTER TABLE mcp_global_servers ADD COLUMN installed_hash TEXT NOT NULL DEFAULT '';

-- One run of the dependency reconciler. user_id is NULL for a global
-- connector; connector is the global or activation name at the time.
CREATE TABLE install_runs (
    id          INTEGER PRIMARY KEY,
    scope       TEXT NOT NULL CHECK (scope IN ('global', 'user')),
    user_id     INTEGER REFERENCES users(id) ON DELETE CASCADE,
    connector   TEXT NOT NULL,
    reason      TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'unchanged', 'failed')),
    hash        TEXT NOT NULL DEFAULT '',
    log         TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    started_at  DATETIME NOT NULL,
    finished_at DATETIME
);
CREATE INDEX install_runs_connector ON install_runs(scope, user_id, connector, id);

-- +goose Down
DROP TABLE install_runs;
ALTER TABLE mcp_global_servers DROP COLUMN installed_hash;
ALTER TABLE mcp_catalog DROP COLUMN install_scripts;
