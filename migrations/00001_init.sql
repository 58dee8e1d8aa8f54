-- +goose Up
-- The whole connector domain in one go, so later work adds behaviour
-- rather than redesigning tables. Times are UTC DATETIME values.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE roles (
    name       TEXT PRIMARY KEY CHECK (name <> '' AND length(name) <= 64),
    built_in   INTEGER NOT NULL DEFAULT 0 CHECK (built_in IN (0, 1)),
    created_at DATETIME NOT NULL
);

CREATE TABLE role_capabilities (
    role       TEXT NOT NULL REFERENCES roles(name) ON DELETE CASCADE ON UPDATE CASCADE,
    capability TEXT NOT NULL,
    PRIMARY KEY (role, capability)
);

CREATE TABLE users (
    id           INTEGER PRIMARY KEY,
    issuer       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    email        TEXT NOT NULL DEFAULT '',
    name         TEXT NOT NULL DEFAULT '',
    role         TEXT NOT NULL REFERENCES roles(name) ON UPDATE CASCADE,
    disabled     INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    created_at   DATETIME NOT NULL,
    last_seen_at DATETIME,
    UNIQUE (issuer, subject)
);
CREATE INDEX users_email ON users(email);

-- Server-side sessions. The cookie carries a random token; only its
-- SHA-256 is stored, so a copy of the database cannot be replayed.
CREATE TABLE sessions (
    id_hash      TEXT PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_token   TEXT NOT NULL,
    created_at   DATETIME NOT NULL,
    last_seen_at DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL
);
CREATE INDEX sessions_user ON sessions(user_id);

-- Personal access tokens, stored hashed; prefix lets people tell them apart.
CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT NOT NULL CHECK (name <> '' AND length(name) <= 100),
    prefix       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   DATETIME NOT NULL,
    last_used_at DATETIME
);
CREATE INDEX api_tokens_user ON api_tokens(user_id);

-- OAuth sign-in providers for connectors. The client secret is sealed;
-- the feed never carries it.
CREATE TABLE oauth_providers (
    id                   INTEGER PRIMARY KEY,
    name                 TEXT NOT NULL UNIQUE,
    display_name         TEXT NOT NULL DEFAULT '',
    auth_url             TEXT NOT NULL,
    token_url            TEXT NOT NULL,
    revocation_url       TEXT NOT NULL DEFAULT '',
    issuer               TEXT NOT NULL DEFAULT '',
    client_id            TEXT NOT NULL,
    client_secret_sealed TEXT NOT NULL DEFAULT '',
    redirect_uri         TEXT NOT NULL DEFAULT '',
    extra_params_json    TEXT NOT NULL DEFAULT '{}',
    created_at           DATETIME NOT NULL,
    updated_at           DATETIME NOT NULL
);

-- Admin-vetted connector templates. They hold only the schema of what an
-- activation must supply, never live credentials.
CREATE TABLE mcp_catalog (
    id                   INTEGER PRIMARY KEY,
    name                 TEXT NOT NULL UNIQUE,
    title                TEXT NOT NULL DEFAULT '',
    description          TEXT NOT NULL DEFAULT '',
    kind                 TEXT NOT NULL CHECK (kind IN ('local', 'remote')),
    scope                TEXT NOT NULL DEFAULT 'user' CHECK (scope IN ('user', 'global', 'both')),
    transport            TEXT NOT NULL CHECK (transport IN ('stdio', 'streamable-http', 'sse')),
    command              TEXT NOT NULL DEFAULT '',
    args_json            TEXT NOT NULL DEFAULT '[]',
    env_json             TEXT NOT NULL DEFAULT '{}',
    url                  TEXT NOT NULL DEFAULT '',
    inputs_json          TEXT NOT NULL DEFAULT '[]',
    auth_type            TEXT NOT NULL DEFAULT 'none' CHECK (auth_type IN ('none', 'api_key', 'oauth', 'qr')),
    oauth_provider       TEXT NOT NULL DEFAULT '',
    oauth_scopes_json    TEXT NOT NULL DEFAULT '[]',
    deliver_json         TEXT NOT NULL DEFAULT '{}',
    verify_json          TEXT NOT NULL DEFAULT '',
    version              INTEGER NOT NULL DEFAULT 0,
    version_string       TEXT NOT NULL DEFAULT '',
    version_release_date TEXT NOT NULL DEFAULT '',
    source               TEXT NOT NULL DEFAULT '',
    source_ref           TEXT NOT NULL DEFAULT '',
    content_hash         TEXT NOT NULL DEFAULT '',
    tool_digest          TEXT NOT NULL DEFAULT '',
    created_at           DATETIME NOT NULL,
    updated_at           DATETIME NOT NULL
);

-- Shared connectors that run on the host for everyone granted them.
CREATE TABLE mcp_global_servers (
    id             INTEGER PRIMARY KEY,
    catalog_id     INTEGER REFERENCES mcp_catalog(id) ON DELETE RESTRICT,
    name           TEXT NOT NULL UNIQUE,
    enabled        INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    config_json    TEXT NOT NULL DEFAULT '{}',
    secrets_sealed TEXT NOT NULL DEFAULT '',
    last_error     TEXT NOT NULL DEFAULT '',
    created_by     INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at     DATETIME NOT NULL,
    updated_at     DATETIME NOT NULL
);

-- Who may use a global connector: everyone, a role, or one user.
CREATE TABLE mcp_global_access (
    id         INTEGER PRIMARY KEY,
    global_id  INTEGER NOT NULL REFERENCES mcp_global_servers(id) ON DELETE CASCADE,
    grantee    TEXT NOT NULL CHECK (grantee IN ('everyone', 'role', 'user')),
    role       TEXT REFERENCES roles(name) ON DELETE CASCADE ON UPDATE CASCADE,
    user_id    INTEGER REFERENCES users(id) ON DELETE CASCADE,
    created_at DATETIME NOT NULL,
    CHECK ((grantee = 'everyone' AND role IS NULL AND user_id IS NULL)
        OR (grantee = 'role' AND role IS NOT NULL AND user_id IS NULL)
        OR (grantee = 'user' AND user_id IS NOT NULL AND role IS NULL))
);
CREATE UNIQUE INDEX mcp_global_access_unique
    ON mcp_global_access(global_id, grantee, coalesce(role, ''), coalesce(user_id, 0));

-- A user's own activations. catalog_name, oauth_provider and deliver_json
-- are snapshots so a catalog edit never silently changes a live activation.
CREATE TABLE mcp_user_servers (
    id                INTEGER PRIMARY KEY,
    user_id           INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    catalog_id        INTEGER REFERENCES mcp_catalog(id) ON DELETE SET NULL,
    catalog_name      TEXT NOT NULL,
    name              TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('local', 'remote')),
    transport         TEXT NOT NULL CHECK (transport IN ('stdio', 'streamable-http', 'sse')),
    config_json       TEXT NOT NULL DEFAULT '{}',
    credential_sealed TEXT NOT NULL DEFAULT '',
    auth_state        TEXT NOT NULL DEFAULT 'none'
        CHECK (auth_state IN ('none', 'pending', 'ready', 'needs_signin', 'failed')),
    oauth_provider    TEXT NOT NULL DEFAULT '',
    deliver_json      TEXT NOT NULL DEFAULT '{}',
    installed_hash    TEXT NOT NULL DEFAULT '',
    last_error        TEXT NOT NULL DEFAULT '',
    created_at        DATETIME NOT NULL,
    updated_at        DATETIME NOT NULL,
    UNIQUE (user_id, name)
);

CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY,
    at         DATETIME NOT NULL,
    actor_id   INTEGER REFERENCES users(id) ON DELETE SET NULL,
    action     TEXT NOT NULL,
    target     TEXT NOT NULL DEFAULT '',
    detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at ON audit_log(at);

-- Built-in roles. Admin holds every capability by construction, so it
-- needs no rows here.
INSERT INTO roles (name, built_in, created_at) VALUES
    ('admin', 1, strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    ('user', 1, strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    ('support', 1, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'));
INSERT INTO role_capabilities (role, capability) VALUES
    ('user', 'mcp.register_local_from_catalog'),
    ('user', 'mcp.register_remote'),
    ('user', 'api.tokens'),
    ('support', 'mcp.register_local_from_catalog'),
    ('support', 'mcp.register_remote'),
    ('support', 'api.tokens'),
    ('support', 'mcp.inspect_logins');

-- +goose Down
DROP TABLE audit_log;
DROP TABLE mcp_user_servers;
DROP TABLE mcp_global_access;
DROP TABLE mcp_global_servers;
DROP TABLE mcp_catalog;
DROP TABLE oauth_providers;
DROP TABLE api_tokens;
DROP TABLE sessions;
DROP TABLE users;
DROP TABLE role_capabilities;
DROP TABLE roles;
DROP TABLE meta;
