package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"patchbay"
)

var globalSecretsColumn = SealedColumns[1]

// sealMap seals a map of secrets as one JSON object for one cell. Empty
// values are dropped, and an empty map is stored as "".
func (d *DB) sealMap(c SealedColumn, rowID int64, m map[string]string) (string, error) {
	clean := map[string]string{}
	for k, v := range m {
		if v != "" {
			clean[k] = v
		}
	}
	if len(clean) == 0 {
		return "", nil
	}
	b, err := json.Marshal(clean)
	if err != nil {
		return "", fmt.Errorf("db: seal %s.%s: %w", c.Table, c.Column, err)
	}
	return d.sealValue(c, rowID, string(b))
}

// openMap opens a cell sealed by sealMap. It returns an empty map, never
// nil, when nothing is stored.
func (d *DB) openMap(c SealedColumn, rowID int64, sealed string) (map[string]string, error) {
	plain, err := d.openValue(c, rowID, sealed)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	if plain == "" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(plain), &m); err != nil {
		// The parser's message may quote the plaintext; leave it out.
		return nil, fmt.Errorf("db: %s.%s row %d does not hold a JSON object of strings", c.Table, c.Column, rowID)
	}
	return m, nil
}

// checkSecretNames reports an EINVALID error if any key of m is empty.
func checkSecretNames(m map[string]string) error {
	for k := range m {
		if strings.TrimSpace(k) == "" {
			return patchbay.Errorf(patchbay.EINVALID, "Every secret needs a name.")
		}
	}
	return nil
}

// secretNames returns m's keys with a non-empty value, sorted.
func secretNames(m map[string]string) []string {
	var names []string
	for k, v := range m {
		if v != "" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// configColumn marshals a server's configuration.
func configColumn(cfg ServerConfig) (string, error) {
	return jsonColumn(cfg, "{}")
}

// configFromColumn unmarshals a server's configuration; empty inputs read
// back as nil.
func configFromColumn(s, column string, rowID int64) (ServerConfig, error) {
	var cfg ServerConfig
	if err := fromJSONColumn(s, column, rowID, &cfg); err != nil {
		return cfg, err
	}
	if len(cfg.Inputs) == 0 {
		cfg.Inputs = nil
	}
	return cfg, nil
}

// globalRow is one mcp_global_servers row as stored, without its secrets.
type globalRow struct {
	ID            int64         `db:"id"`
	CatalogID     sql.NullInt64 `db:"catalog_id"`
	Name          string        `db:"name"`
	Enabled       bool          `db:"enabled"`
	ConfigJSON    string        `db:"config_json"`
	HasSecrets    bool          `db:"has_secrets"`
	InstalledHash string        `db:"installed_hash"`
	LastError     string        `db:"last_error"`
	CreatedBy     sql.NullInt64 `db:"created_by"`
	CreatedAt     time.Time     `db:"created_at"`
	UpdatedAt     time.Time     `db:"updated_at"`
}

const globalColumns = `id, catalog_id, name, enabled, config_json, secrets_sealed <> '' AS has_secrets,
	installed_hash, last_error, created_by, created_at, updated_at`

func (r globalRow) server() (GlobalServer, error) {
	cfg, err := configFromColumn(r.ConfigJSON, "mcp_global_servers.config_json", r.ID)
	if err != nil {
		return GlobalServer{}, err
	}
	return GlobalServer{
		ID: r.ID, CatalogID: r.CatalogID.Int64, Name: r.Name, Enabled: r.Enabled, Config: cfg,
		HasSecrets: r.HasSecrets, InstalledHash: r.InstalledHash, LastError: r.LastError,
		CreatedBy: r.CreatedBy.Int64, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}, nil
}

// getGlobal loads one global server by a column that identifies it.
func getGlobal(ctx context.Context, q sqlx.QueryerContext, where string, arg any) (GlobalServer, error) {
	var row globalRow
	if err := sqlx.GetContext(ctx, q, &row, `SELECT `+globalColumns+` FROM mcp_global_servers WHERE `+where, arg); err != nil {
		return GlobalServer{}, err
	}
	return row.server()
}

// errNoGlobal is the not-found error for a global server id.
func errNoGlobal() error { return patchbay.Errorf(patchbay.ENOTFOUND, "No such global connector.") }

func globalTarget(name string) string { return "global:" + name }

// CreateGlobalServer adds a shared connector from a catalog entry whose
// scope is global or both. secrets are sealed as one cell bound to the
// new row; the audit entry names the secrets, never their values.
func (d *DB) CreateGlobalServer(ctx context.Context, actorID int64, g GlobalServer, secrets map[string]string) (GlobalServer, error) {
	g.Name = strings.TrimSpace(g.Name)
	if err := checkConnectorName(g.Name); err != nil {
		return g, err
	}
	if err := checkSecretNames(secrets); err != nil {
		return g, err
	}
	cfg, err := configColumn(g.Config)
	if err != nil {
		return g, err
	}
	var out GlobalServer
	err = d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var cat struct {
			Name  string `db:"name"`
			Scope string `db:"scope"`
		}
		err := tx.GetContext(ctx, &cat, `SELECT name, scope FROM mcp_catalog WHERE id = ?`, g.CatalogID)
		if errors.Is(err, sql.ErrNoRows) {
			return patchbay.Errorf(patchbay.EINVALID, "No such connector in the catalog.")
		} else if err != nil {
			return fmt.Errorf("db: create global: %w", err)
		}
		if cat.Scope != ScopeGlobal && cat.Scope != ScopeBoth {
			return patchbay.Errorf(patchbay.EINVALID, "The catalog connector %q is for users' own activations only, not for a global connector.", cat.Name)
		}
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM mcp_global_servers WHERE name = ?`, g.Name); err != nil {
			return fmt.Errorf("db: create global: %w", err)
		}
		if n > 0 {
			return patchbay.Errorf(patchbay.ECONFLICT, "A global connector named %q already exists.", g.Name)
		}
		now := d.now()
		res, err := tx.ExecContext(ctx, `INSERT INTO mcp_global_servers (catalog_id, name, enabled, config_json, created_by, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, g.CatalogID, g.Name, g.Enabled, cfg, nullID(actorID), now, now)
		if err != nil {
			return fmt.Errorf("db: create global: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("db: create global: %w", err)
		}
		sealed, err := d.sealMap(globalSecretsColumn, id, secrets)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE mcp_global_servers SET secrets_sealed = ? WHERE id = ?`, sealed, id); err != nil {
			return fmt.Errorf("db: create global: %w", err)
		}
		if out, err = getGlobal(ctx, tx, `id = ?`, id); err != nil {
			return fmt.Errorf("db: create global: %w", err)
		}
		detail := "catalog=" + cat.Name
		if names := secretNames(secrets); len(names) > 0 {
			detail += " secrets=" + strings.Join(names, ",")
		}
		return audit(ctx, tx, now, actorID, "global.create", globalTarget(g.Name), detail)
	})
	return out, err
}

// UpdateGlobalServer replaces a global connector's configuration. A nil
// secrets keeps the stored secrets; otherwise secrets is merged into
// them: a key with an empty value is deleted, any other replaces. The
// audit entry lists the names of the secrets that changed.
func (d *DB) UpdateGlobalServer(ctx context.Context, actorID, id int64, cfg ServerConfig, secrets map[string]string) (GlobalServer, error) {
	if err := checkSecretNames(secrets); err != nil {
		return GlobalServer{}, err
	}
	cfgJSON, err := configColumn(cfg)
	if err != nil {
		return GlobalServer{}, err
	}
	var out GlobalServer
	err = d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var row struct {
			Name   string `db:"name"`
			Sealed string `db:"secrets_sealed"`
		}
		err := tx.GetContext(ctx, &row, `SELECT name, secrets_sealed FROM mcp_global_servers WHERE id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoGlobal()
		} else if err != nil {
			return fmt.Errorf("db: update global: %w", err)
		}
		now := d.now()
		if _, err := tx.ExecContext(ctx, `UPDATE mcp_global_servers SET config_json = ?, updated_at = ? WHERE id = ?`, cfgJSON, now, id); err != nil {
			return fmt.Errorf("db: update global: %w", err)
		}
		var changed []string
		if secrets != nil {
			stored, err := d.openMap(globalSecretsColumn, id, row.Sealed)
			if err != nil {
				return err
			}
			for k, v := range secrets {
				old, had := stored[k]
				switch {
				case v == "" && had:
					delete(stored, k)
				case v != "" && (!had || old != v):
					stored[k] = v
				default:
					continue
				}
				changed = append(changed, k)
			}
			if len(changed) > 0 {
				sealed, err := d.sealMap(globalSecretsColumn, id, stored)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `UPDATE mcp_global_servers SET secrets_sealed = ? WHERE id = ?`, sealed, id); err != nil {
					return fmt.Errorf("db: update global: %w", err)
				}
			}
		}
		if out, err = getGlobal(ctx, tx, `id = ?`, id); err != nil {
			return fmt.Errorf("db: update global: %w", err)
		}
		detail := ""
		if len(changed) > 0 {
			slices.Sort(changed)
			detail = "secrets=" + strings.Join(changed, ",")
		}
		return audit(ctx, tx, now, actorID, "global.update", globalTarget(row.Name), detail)
	})
	return out, err
}

// SetGlobalEnabled turns a global connector on or off.
func (d *DB) SetGlobalEnabled(ctx context.Context, actorID, id int64, enabled bool) error {
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var name string
		err := tx.GetContext(ctx, &name, `SELECT name FROM mcp_global_servers WHERE id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoGlobal()
		} else if err != nil {
			return fmt.Errorf("db: enable global: %w", err)
		}
		now := d.now()
		if _, err := tx.ExecContext(ctx, `UPDATE mcp_global_servers SET enabled = ?, updated_at = ? WHERE id = ?`, enabled, now, id); err != nil {
			return fmt.Errorf("db: enable global: %w", err)
		}
		action := "global.disable"
		if enabled {
			action = "global.enable"
		}
		return audit(ctx, tx, now, actorID, action, globalTarget(name), "")
	})
}

// SetGlobalInstallResult records the outcome of installing a global
// connector. An empty hash keeps the stored one, so a failed install
// leaves the previous good hash in place; lastError "" clears the error.
func (d *DB) SetGlobalInstallResult(ctx context.Context, id int64, hash, lastError string) error {
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE mcp_global_servers
			SET installed_hash = CASE WHEN ? = '' THEN installed_hash ELSE ? END, last_error = ? WHERE id = ?`,
			hash, hash, lastError, id)
		if err != nil {
			return fmt.Errorf("db: global install result: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNoGlobal()
		}
		return nil
	})
}

// GlobalServers returns every global connector, sorted by name.
func (d *DB) GlobalServers(ctx context.Context) ([]GlobalServer, error) {
	var rows []globalRow
	if err := d.read.SelectContext(ctx, &rows, `SELECT `+globalColumns+` FROM mcp_global_servers ORDER BY name`); err != nil {
		return nil, fmt.Errorf("db: list globals: %w", err)
	}
	out := make([]GlobalServer, 0, len(rows))
	for _, r := range rows {
		g, err := r.server()
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// GlobalServerByID returns one global connector without its secrets.
func (d *DB) GlobalServerByID(ctx context.Context, id int64) (GlobalServer, error) {
	g, err := getGlobal(ctx, d.read, `id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return g, errNoGlobal()
	} else if err != nil {
		return g, fmt.Errorf("db: global: %w", err)
	}
	return g, nil
}

// GlobalServerByName returns one global connector without its secrets.
func (d *DB) GlobalServerByName(ctx context.Context, name string) (GlobalServer, error) {
	g, err := getGlobal(ctx, d.read, `name = ?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return g, patchbay.Errorf(patchbay.ENOTFOUND, "No global connector named %q.", name)
	} else if err != nil {
		return g, fmt.Errorf("db: global: %w", err)
	}
	return g, nil
}

// GlobalServerSecrets opens a global connector's secrets, for the one
// place that starts it. It returns an empty map when none are stored.
func (d *DB) GlobalServerSecrets(ctx context.Context, id int64) (map[string]string, error) {
	var sealed string
	err := d.read.GetContext(ctx, &sealed, `SELECT secrets_sealed FROM mcp_global_servers WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoGlobal()
	} else if err != nil {
		return nil, fmt.Errorf("db: global secrets: %w", err)
	}
	return d.openMap(globalSecretsColumn, id, sealed)
}

// DeleteGlobalServer removes a global connector and, by cascade, every
// grant of it.
func (d *DB) DeleteGlobalServer(ctx context.Context, actorID, id int64) error {
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var name string
		err := tx.GetContext(ctx, &name, `SELECT name FROM mcp_global_servers WHERE id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoGlobal()
		} else if err != nil {
			return fmt.Errorf("db: delete global: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_global_servers WHERE id = ?`, id); err != nil {
			return fmt.Errorf("db: delete global: %w", err)
		}
		return audit(ctx, tx, d.now(), actorID, "global.delete", globalTarget(name), "")
	})
}
