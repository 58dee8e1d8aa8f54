package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"patchbay"
)

// grantRow is one mcp_global_access row with the grantee's email.
type grantRow struct {
	ID        int64     `db:"id"`
	GlobalID  int64     `db:"global_id"`
	Grantee   string    `db:"grantee"`
	Role      string    `db:"role"`
	UserID    int64     `db:"user_id"`
	UserEmail string    `db:"user_email"`
	CreatedAt time.Time `db:"created_at"`
}

func (r grantRow) grant() GlobalGrant {
	return GlobalGrant{ID: r.ID, GlobalID: r.GlobalID, Grantee: r.Grantee, Role: r.Role,
		UserID: r.UserID, UserEmail: r.UserEmail, CreatedAt: r.CreatedAt}
}

const grantSelect = `SELECT a.id, a.global_id, a.grantee, coalesce(a.role, '') AS role, coalesce(a.user_id, 0) AS user_id,
	coalesce(u.email, '') AS user_email, a.created_at
	FROM mcp_global_access a LEFT JOIN users u ON u.id = a.user_id`

// grantDetail describes a grantee for the audit log.
func grantDetail(grantee, role string, userID int64) string {
	switch grantee {
	case GranteeRole:
		return "role=" + role
	case GranteeUser:
		return fmt.Sprintf("user=%d", userID)
	}
	return grantee
}

// GrantGlobal lets everyone, a role or one user use a global connector.
// Only the field that matches grantee is used: role for GranteeRole,
// userID for GranteeUser. Granting what is already granted returns the
// existing grant and changes nothing.
func (d *DB) GrantGlobal(ctx context.Context, actorID, globalID int64, grantee, role string, userID int64) (GlobalGrant, error) {
	switch grantee {
	case GranteeEveryone:
		role, userID = "", 0
	case GranteeRole:
		userID = 0
		if role == "" {
			return GlobalGrant{}, patchbay.Errorf(patchbay.EINVALID, "Choose a role to grant the connector to.")
		}
	case GranteeUser:
		role = ""
		if userID == 0 {
			return GlobalGrant{}, patchbay.Errorf(patchbay.EINVALID, "Choose a user to grant the connector to.")
		}
	default:
		return GlobalGrant{}, patchbay.Errorf(patchbay.EINVALID, "A connector is granted to everyone, a role or a user, not %q.", grantee)
	}
	var out GlobalGrant
	err := d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var name string
		err := tx.GetContext(ctx, &name, `SELECT name FROM mcp_global_servers WHERE id = ?`, globalID)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoGlobal()
		} else if err != nil {
			return fmt.Errorf("db: grant global: %w", err)
		}
		switch grantee {
		case GranteeRole:
			if err := roleExists(ctx, tx, role); err != nil {
				return err
			}
		case GranteeUser:
			var n int
			if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM users WHERE id = ?`, userID); err != nil {
				return fmt.Errorf("db: grant global: %w", err)
			}
			if n == 0 {
				return patchbay.Errorf(patchbay.EINVALID, "No such user.")
			}
		}
		var row grantRow
		err = tx.GetContext(ctx, &row, grantSelect+` WHERE a.global_id = ? AND a.grantee = ?
			AND coalesce(a.role, '') = ? AND coalesce(a.user_id, 0) = ?`, globalID, grantee, role, userID)
		if err == nil {
			out = row.grant()
			return nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("db: grant global: %w", err)
		}
		var roleArg any
		if role != "" {
			roleArg = role
		}
		now := d.now()
		res, err := tx.ExecContext(ctx, `INSERT INTO mcp_global_access (global_id, grantee, role, user_id, created_at)
			VALUES (?, ?, ?, ?, ?)`, globalID, grantee, roleArg, nullID(userID), now)
		if err != nil {
			return fmt.Errorf("db: grant global: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("db: grant global: %w", err)
		}
		if err := tx.GetContext(ctx, &row, grantSelect+` WHERE a.id = ?`, id); err != nil {
			return fmt.Errorf("db: grant global: %w", err)
		}
		out = row.grant()
		return audit(ctx, tx, now, actorID, "global.grant", globalTarget(name), grantDetail(grantee, role, userID))
	})
	return out, err
}

// RevokeGlobalGrant removes one grant of a global connector. A grant of
// another connector is reported as not found.
func (d *DB) RevokeGlobalGrant(ctx context.Context, actorID, globalID, grantID int64) error {
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var row struct {
			Name    string `db:"name"`
			Grantee string `db:"grantee"`
			Role    string `db:"role"`
			UserID  int64  `db:"user_id"`
		}
		err := tx.GetContext(ctx, &row, `SELECT g.name, a.grantee, coalesce(a.role, '') AS role, coalesce(a.user_id, 0) AS user_id
			FROM mcp_global_access a JOIN mcp_global_servers g ON g.id = a.global_id
			WHERE a.id = ? AND a.global_id = ?`, grantID, globalID)
		if errors.Is(err, sql.ErrNoRows) {
			return patchbay.Errorf(patchbay.ENOTFOUND, "No such grant.")
		} else if err != nil {
			return fmt.Errorf("db: revoke grant: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_global_access WHERE id = ?`, grantID); err != nil {
			return fmt.Errorf("db: revoke grant: %w", err)
		}
		return audit(ctx, tx, d.now(), actorID, "global.revoke", globalTarget(row.Name), grantDetail(row.Grantee, row.Role, row.UserID))
	})
}

// GlobalGrants returns a global connector's grants, oldest first.
func (d *DB) GlobalGrants(ctx context.Context, globalID int64) ([]GlobalGrant, error) {
	var rows []grantRow
	if err := d.read.SelectContext(ctx, &rows, grantSelect+` WHERE a.global_id = ? ORDER BY a.id`, globalID); err != nil {
		return nil, fmt.Errorf("db: global grants: %w", err)
	}
	out := make([]GlobalGrant, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.grant())
	}
	return out, nil
}

// GrantedGlobalNames returns the names of the enabled global connectors
// that a user with role may use: those granted to everyone, to role or to
// userID. Whether the user may sign in at all is the caller's question.
func (d *DB) GrantedGlobalNames(ctx context.Context, userID int64, role string) ([]string, error) {
	names := []string{}
	err := d.read.SelectContext(ctx, &names, `SELECT DISTINCT g.name FROM mcp_global_servers g
		JOIN mcp_global_access a ON a.global_id = g.id
		WHERE g.enabled = 1 AND (a.grantee = 'everyone'
			OR (a.grantee = 'role' AND a.role = ?)
			OR (a.grantee = 'user' AND a.user_id = ?))
		ORDER BY g.name`, role, userID)
	if err != nil {
		return nil, fmt.Errorf("db: granted globals: %w", err)
	}
	return names, nil
}
