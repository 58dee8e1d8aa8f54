package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"patchbay"
)

var userCredentialColumn = SealedColumns[2]

// userServerRow is one mcp_user_servers row as stored, without its
// credential.
type userServerRow struct {
	ID            int64         `db:"id"`
	UserID        int64         `db:"user_id"`
	CatalogID     sql.NullInt64 `db:"catalog_id"`
	CatalogName   string        `db:"catalog_name"`
	Name          string        `db:"name"`
	Kind          string        `db:"kind"`
	Transport     string        `db:"transport"`
	ConfigJSON    string        `db:"config_json"`
	HasCredential bool          `db:"has_credential"`
	AuthState     string        `db:"auth_state"`
	OAuthProvider string        `db:"oauth_provider"`
	Deliver       string        `db:"deliver_json"`
	InstalledHash string        `db:"installed_hash"`
	LastError     string        `db:"last_error"`
	CreatedAt     time.Time     `db:"created_at"`
	UpdatedAt     time.Time     `db:"updated_at"`
}

const userServerColumns = `id, user_id, catalog_id, catalog_name, name, kind, transport, config_json,
	credential_sealed <> '' AS has_credential, auth_state, oauth_provider, deliver_json, installed_hash,
	last_error, created_at, updated_at`

func (r userServerRow) server() (UserServer, error) {
	cfg, err := configFromColumn(r.ConfigJSON, "mcp_user_servers.config_json", r.ID)
	if err != nil {
		return UserServer{}, err
	}
	return UserServer{
		ID: r.ID, UserID: r.UserID, CatalogID: r.CatalogID.Int64, CatalogName: r.CatalogName, Name: r.Name,
		Kind: r.Kind, Transport: r.Transport, Config: cfg, HasCredential: r.HasCredential, AuthState: r.AuthState,
		OAuthProvider: r.OAuthProvider, Deliver: r.Deliver, InstalledHash: r.InstalledHash, LastError: r.LastError,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}, nil
}

func userServers(rows []userServerRow) ([]UserServer, error) {
	out := make([]UserServer, 0, len(rows))
	for _, r := range rows {
		s, err := r.server()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// checkAuthState reports an EINVALID error unless s is an auth state.
func checkAuthState(s string) error {
	switch s {
	case AuthNone, AuthPending, AuthReady, AuthNeedsSignIn, AuthFailed:
		return nil
	}
	return patchbay.Errorf(patchbay.EINVALID, "%q is not a connector sign-in state.", s)
}

// errNoUserServer is the not-found error for one user's activation.
func errNoUserServer() error { return patchbay.Errorf(patchbay.ENOTFOUND, "No such connector.") }

func userServerTarget(id int64) string { return fmt.Sprintf("connector:%d", id) }

// CreateUserServer activates a connector for u.UserID. The credential is
// sealed as one cell bound to the new row, in the same transaction: if
// anything fails, no row and no audit entry remain.
func (d *DB) CreateUserServer(ctx context.Context, u UserServer, credential map[string]string) (UserServer, error) {
	u.Name = strings.TrimSpace(u.Name)
	if err := checkConnectorName(u.Name); err != nil {
		return u, err
	}
	if err := checkKindTransport(u.Kind, u.Transport); err != nil {
		return u, err
	}
	if u.AuthState == "" {
		u.AuthState = AuthNone
	}
	if err := checkAuthState(u.AuthState); err != nil {
		return u, err
	}
	if u.Deliver == "" {
		u.Deliver = "{}"
	}
	if err := checkJSONObject("The delivery settings", u.Deliver); err != nil {
		return u, err
	}
	if err := checkSecretNames(credential); err != nil {
		return u, err
	}
	cfg, err := configColumn(u.Config)
	if err != nil {
		return u, err
	}
	var out UserServer
	err = d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM users WHERE id = ?`, u.UserID); err != nil {
			return fmt.Errorf("db: activate connector: %w", err)
		}
		if n == 0 {
			return patchbay.Errorf(patchbay.EINVALID, "No such user.")
		}
		if u.CatalogID != 0 {
			var cat struct {
				Name  string `db:"name"`
				Scope string `db:"scope"`
			}
			err := tx.GetContext(ctx, &cat, `SELECT name, scope FROM mcp_catalog WHERE id = ?`, u.CatalogID)
			if errors.Is(err, sql.ErrNoRows) {
				return patchbay.Errorf(patchbay.EINVALID, "No such connector in the catalog.")
			} else if err != nil {
				return fmt.Errorf("db: activate connector: %w", err)
			}
			if cat.Scope == ScopeGlobal {
				return patchbay.Errorf(patchbay.EINVALID, "The catalog connector %q is only available as a global connector.", cat.Name)
			}
		}
		if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM mcp_user_servers WHERE user_id = ? AND name = ?`, u.UserID, u.Name); err != nil {
			return fmt.Errorf("db: activate connector: %w", err)
		}
		if n > 0 {
			return patchbay.Errorf(patchbay.ECONFLICT, "You already have a connector named %q.", u.Name)
		}
		now := d.now()
		res, err := tx.ExecContext(ctx, `INSERT INTO mcp_user_servers
			(user_id, catalog_id, catalog_name, name, kind, transport, config_json, auth_state, oauth_provider,
			 deliver_json, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			u.UserID, nullID(u.CatalogID), u.CatalogName, u.Name, u.Kind, u.Transport, cfg, u.AuthState, u.OAuthProvider,
			u.Deliver, now, now)
		if err != nil {
			return fmt.Errorf("db: activate connector: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("db: activate connector: %w", err)
		}
		sealed, err := d.sealMap(userCredentialColumn, id, credential)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE mcp_user_servers SET credential_sealed = ? WHERE id = ?`, sealed, id); err != nil {
			return fmt.Errorf("db: activate connector: %w", err)
		}
		var row userServerRow
		if err := tx.GetContext(ctx, &row, `SELECT `+userServerColumns+` FROM mcp_user_servers WHERE id = ?`, id); err != nil {
			return fmt.Errorf("db: activate connector: %w", err)
		}
		if out, err = row.server(); err != nil {
			return err
		}
		detail := "name=" + u.Name
		if u.CatalogName != "" {
			detail += " catalog=" + u.CatalogName
		}
		return audit(ctx, tx, now, u.UserID, "connector.activate", userServerTarget(id), detail)
	})
	return out, err
}

// UserServers returns one user's activations, sorted by name.
func (d *DB) UserServers(ctx context.Context, userID int64) ([]UserServer, error) {
	var rows []userServerRow
	if err := d.read.SelectContext(ctx, &rows, `SELECT `+userServerColumns+` FROM mcp_user_servers
		WHERE user_id = ? ORDER BY name`, userID); err != nil {
		return nil, fmt.Errorf("db: user connectors: %w", err)
	}
	return userServers(rows)
}

// UserServerByName returns one of the user's own activations.
func (d *DB) UserServerByName(ctx context.Context, userID int64, name string) (UserServer, error) {
	var row userServerRow
	err := d.read.GetContext(ctx, &row, `SELECT `+userServerColumns+` FROM mcp_user_servers
		WHERE user_id = ? AND name = ?`, userID, name)
	if errors.Is(err, sql.ErrNoRows) {
		return UserServer{}, patchbay.Errorf(patchbay.ENOTFOUND, "You have no connector named %q.", name)
	} else if err != nil {
		return UserServer{}, fmt.Errorf("db: user connector: %w", err)
	}
	return row.server()
}

// UserServerByID returns one of the user's own activations. Another
// user's id is reported as not found, so ids cannot be probed.
func (d *DB) UserServerByID(ctx context.Context, userID, id int64) (UserServer, error) {
	var row userServerRow
	err := d.read.GetContext(ctx, &row, `SELECT `+userServerColumns+` FROM mcp_user_servers
		WHERE id = ? AND user_id = ?`, id, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return UserServer{}, errNoUserServer()
	} else if err != nil {
		return UserServer{}, fmt.Errorf("db: user connector: %w", err)
	}
	return row.server()
}

// UserServerCredential opens one of the user's own activation's
// credential. It returns an empty map when none is stored.
func (d *DB) UserServerCredential(ctx context.Context, userID, id int64) (map[string]string, error) {
	var sealed string
	err := d.read.GetContext(ctx, &sealed, `SELECT credential_sealed FROM mcp_user_servers WHERE id = ? AND user_id = ?`, id, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoUserServer()
	} else if err != nil {
		return nil, fmt.Errorf("db: user credential: %w", err)
	}
	return d.openMap(userCredentialColumn, id, sealed)
}

// UpdateUserServerCredential replaces the credential of one of the
// user's own activations and sets its sign-in state. An empty credential
// removes it.
func (d *DB) UpdateUserServerCredential(ctx context.Context, userID, id int64, credential map[string]string, authState string) error {
	if err := checkAuthState(authState); err != nil {
		return err
	}
	if err := checkSecretNames(credential); err != nil {
		return err
	}
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM mcp_user_servers WHERE id = ? AND user_id = ?`, id, userID); err != nil {
			return fmt.Errorf("db: update credential: %w", err)
		}
		if n == 0 {
			return errNoUserServer()
		}
		sealed, err := d.sealMap(userCredentialColumn, id, credential)
		if err != nil {
			return err
		}
		now := d.now()
		if _, err := tx.ExecContext(ctx, `UPDATE mcp_user_servers SET credential_sealed = ?, auth_state = ?, updated_at = ?
			WHERE id = ?`, sealed, authState, now, id); err != nil {
			return fmt.Errorf("db: update credential: %w", err)
		}
		return audit(ctx, tx, now, userID, "connector.credential", userServerTarget(id), "auth_state="+authState)
	})
}

// SetUserServerInstallResult records the outcome of installing an
// activation. An empty hash keeps the stored one, so a failed install
// leaves the previous good hash in place; lastError "" clears the error.
func (d *DB) SetUserServerInstallResult(ctx context.Context, id int64, hash, lastError string) error {
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE mcp_user_servers
			SET installed_hash = CASE WHEN ? = '' THEN installed_hash ELSE ? END, last_error = ? WHERE id = ?`,
			hash, hash, lastError, id)
		if err != nil {
			return fmt.Errorf("db: user install result: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNoUserServer()
		}
		return nil
	})
}

// DeleteUserServer deactivates one of the user's own connectors. Another
// user's id is reported as not found.
func (d *DB) DeleteUserServer(ctx context.Context, userID, id int64) error {
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var name string
		err := tx.GetContext(ctx, &name, `SELECT name FROM mcp_user_servers WHERE id = ? AND user_id = ?`, id, userID)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoUserServer()
		} else if err != nil {
			return fmt.Errorf("db: deactivate connector: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_user_servers WHERE id = ?`, id); err != nil {
			return fmt.Errorf("db: deactivate connector: %w", err)
		}
		return audit(ctx, tx, d.now(), userID, "connector.deactivate", userServerTarget(id), "name="+name)
	})
}

// AllUserServers returns every user's activations, for support to
// inspect, sorted by user then name. Credentials are never opened; only
// HasCredential says whether one is stored.
func (d *DB) AllUserServers(ctx context.Context) ([]UserServer, error) {
	var rows []userServerRow
	if err := d.read.SelectContext(ctx, &rows, `SELECT `+userServerColumns+` FROM mcp_user_servers ORDER BY user_id, name`); err != nil {
		return nil, fmt.Errorf("db: all user connectors: %w", err)
	}
	return userServers(rows)
}

// UserIDsWithServers returns the ids of users with at least one
// activation, in order.
func (d *DB) UserIDsWithServers(ctx context.Context) ([]int64, error) {
	ids := []int64{}
	if err := d.read.SelectContext(ctx, &ids, `SELECT DISTINCT user_id FROM mcp_user_servers ORDER BY user_id`); err != nil {
		return nil, fmt.Errorf("db: users with connectors: %w", err)
	}
	return ids, nil
}
