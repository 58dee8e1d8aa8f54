package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"

	"github.com/jmoiron/sqlx"

	"patchbay"
)

var roleNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{1,31}$`)

// RoleSummary is a role with the number of users holding it.
type RoleSummary struct {
	patchbay.Role
	Members int
}

// Role returns one role with its capabilities.
func (d *DB) Role(ctx context.Context, name string) (patchbay.Role, error) {
	return loadRole(ctx, d.read, name)
}

func loadRole(ctx context.Context, q sqlx.QueryerContext, name string) (patchbay.Role, error) {
	r := patchbay.Role{Name: name}
	err := sqlx.GetContext(ctx, q, &r.BuiltIn, `SELECT built_in FROM roles WHERE name = ?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return r, patchbay.Errorf(patchbay.ENOTFOUND, "No role named %q.", name)
	} else if err != nil {
		return r, fmt.Errorf("db: role: %w", err)
	}
	if err := sqlx.SelectContext(ctx, q, &r.Capabilities, `SELECT capability FROM role_capabilities WHERE role = ? ORDER BY capability`, name); err != nil {
		return r, fmt.Errorf("db: role capabilities: %w", err)
	}
	return r, nil
}

func roleExists(ctx context.Context, tx *sqlx.Tx, name string) error {
	var n int
	if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM roles WHERE name = ?`, name); err != nil {
		return fmt.Errorf("db: role: %w", err)
	}
	if n == 0 {
		return patchbay.Errorf(patchbay.EINVALID, "No role named %q.", name)
	}
	return nil
}

// ListRoles returns every role with its capabilities and member count,
// built-in roles first.
func (d *DB) ListRoles(ctx context.Context) ([]RoleSummary, error) {
	var rows []struct {
		Name    string `db:"name"`
		Members int    `db:"members"`
	}
	if err := d.read.SelectContext(ctx, &rows, `SELECT r.name, (SELECT count(*) FROM users u WHERE u.role = r.name) AS members
		FROM roles r ORDER BY r.built_in DESC, r.name`); err != nil {
		return nil, fmt.Errorf("db: list roles: %w", err)
	}
	out := make([]RoleSummary, 0, len(rows))
	for _, row := range rows {
		r, err := loadRole(ctx, d.read, row.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, RoleSummary{Role: r, Members: row.Members})
	}
	return out, nil
}

// CreateRole creates a role holding caps plus the self-service
// capabilities, which every role is seeded with.
func (d *DB) CreateRole(ctx context.Context, actorID int64, name string, caps []patchbay.Capability) (patchbay.Role, error) {
	if !roleNameRE.MatchString(name) {
		return patchbay.Role{}, patchbay.Errorf(patchbay.EINVALID, "A role name is 2-32 lower-case letters, digits, '-' or '_', starting with a letter.")
	}
	set := map[patchbay.Capability]bool{}
	for _, c := range append(append([]patchbay.Capability{}, patchbay.SelfServiceCapabilities...), caps...) {
		if !c.Valid() {
			return patchbay.Role{}, patchbay.Errorf(patchbay.EINVALID, "Unknown capability %q.", c)
		}
		set[c] = true
	}
	var role patchbay.Role
	err := d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM roles WHERE name = ?`, name); err != nil {
			return fmt.Errorf("db: create role: %w", err)
		}
		if n > 0 {
			return patchbay.Errorf(patchbay.ECONFLICT, "A role named %q already exists.", name)
		}
		now := d.now()
		if _, err := tx.ExecContext(ctx, `INSERT INTO roles (name, built_in, created_at) VALUES (?, 0, ?)`, name, now); err != nil {
			return fmt.Errorf("db: create role: %w", err)
		}
		for _, c := range patchbay.AllCapabilities {
			if !set[c] {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO role_capabilities (role, capability) VALUES (?, ?)`, name, c); err != nil {
				return fmt.Errorf("db: create role: %w", err)
			}
		}
		var err error
		role, err = loadRole(ctx, tx, name)
		if err != nil {
			return err
		}
		return audit(ctx, tx, now, actorID, "role.create", "role:"+name, fmt.Sprint(role.Capabilities))
	})
	return role, err
}
