package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"patchbay"
)

// invitedIssuer marks a user row created by `patchbay user add` before the
// person first signs in. Such a row is claimed by the first sign-in whose
// verified email matches; from then on the row is keyed by (issuer, subject).
const invitedIssuer = ""

// SignIn describes a verified OIDC identity.
type SignIn struct {
	Issuer, Subject, Email, Name string
	EmailVerified                bool
}

// SignInUser finds or creates the user for a verified identity. A new user
// gets the admin role when their verified email is in adminEmails, else the
// user role. Email and name are refreshed from the claims on every sign-in.
func (d *DB) SignInUser(ctx context.Context, in SignIn, adminEmails []string) (patchbay.User, error) {
	var u patchbay.User
	if in.Issuer == "" || in.Subject == "" {
		return u, patchbay.Errorf(patchbay.EINVALID, "The identity provider sent no subject.")
	}
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if !in.EmailVerified {
		// An unverified email is whatever the person typed at their
		// provider. Stored, it would let AddUser and UserByEmail (which
		// match by email) hand someone else's grant to this account.
		email = ""
	}
	err := d.writeTx(ctx, func(tx *sqlx.Tx) error {
		now := d.now()
		err := tx.GetContext(ctx, &u, `SELECT * FROM users WHERE issuer = ? AND subject = ?`, in.Issuer, in.Subject)
		switch {
		case err == nil:
			_, err = tx.ExecContext(ctx, `UPDATE users SET email = ?, name = ?, last_seen_at = ? WHERE id = ?`, email, in.Name, now, u.ID)
			if err != nil {
				return fmt.Errorf("db: sign in: %w", err)
			}
		case errors.Is(err, sql.ErrNoRows):
			claimed, err := claimInvite(ctx, tx, in, email, now)
			if err != nil {
				return err
			}
			if !claimed {
				role := patchbay.RoleUser
				if in.EmailVerified && email != "" && containsFold(adminEmails, email) {
					role = patchbay.RoleAdmin
				}
				_, err = tx.ExecContext(ctx, `INSERT INTO users (issuer, subject, email, name, role, created_at, last_seen_at)
					VALUES (?, ?, ?, ?, ?, ?, ?)`, in.Issuer, in.Subject, email, in.Name, role, now, now)
				if err != nil {
					return fmt.Errorf("db: create user: %w", err)
				}
			}
		default:
			return fmt.Errorf("db: sign in: %w", err)
		}
		if err := tx.GetContext(ctx, &u, `SELECT * FROM users WHERE issuer = ? AND subject = ?`, in.Issuer, in.Subject); err != nil {
			return fmt.Errorf("db: sign in: %w", err)
		}
		return audit(ctx, tx, now, u.ID, "user.sign_in", userTarget(u.ID), "")
	})
	return u, err
}

// claimInvite binds a pre-added user row to this identity, but only for a
// verified email: an unverified claim could take over someone's role.
func claimInvite(ctx context.Context, tx *sqlx.Tx, in SignIn, email string, now any) (bool, error) {
	if !in.EmailVerified || email == "" {
		return false, nil
	}
	res, err := tx.ExecContext(ctx, `UPDATE users SET issuer = ?, subject = ?, name = ?, last_seen_at = ?
		WHERE issuer = ? AND subject = ?`, in.Issuer, in.Subject, in.Name, now, invitedIssuer, inviteSubject(email))
	if err != nil {
		return false, fmt.Errorf("db: claim invite: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func inviteSubject(email string) string { return "invite:" + email }

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(strings.TrimSpace(v), s) {
			return true
		}
	}
	return false
}

// AddUser pre-provisions a person by email with a role, before they first
// sign in. Adding an email that already exists changes that user's role.
func (d *DB) AddUser(ctx context.Context, email, role string) (patchbay.User, error) {
	var u patchbay.User
	email = strings.ToLower(strings.TrimSpace(email))
	if !strings.Contains(email, "@") {
		return u, patchbay.Errorf(patchbay.EINVALID, "%q is not an email address.", email)
	}
	err := d.writeTx(ctx, func(tx *sqlx.Tx) error {
		if err := roleExists(ctx, tx, role); err != nil {
			return err
		}
		now := d.now()
		err := tx.GetContext(ctx, &u, `SELECT * FROM users WHERE email = ? ORDER BY id LIMIT 1`, email)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = tx.ExecContext(ctx, `INSERT INTO users (issuer, subject, email, name, role, created_at)
				VALUES (?, ?, ?, '', ?, ?)`, invitedIssuer, inviteSubject(email), email, role, now)
		} else if err == nil {
			_, err = tx.ExecContext(ctx, `UPDATE users SET role = ? WHERE id = ?`, role, u.ID)
		}
		if err != nil {
			return fmt.Errorf("db: add user: %w", err)
		}
		if err := tx.GetContext(ctx, &u, `SELECT * FROM users WHERE email = ? ORDER BY id LIMIT 1`, email); err != nil {
			return fmt.Errorf("db: add user: %w", err)
		}
		return audit(ctx, tx, now, 0, "user.add", userTarget(u.ID), "role="+role)
	})
	return u, err
}

// UserByID returns one user.
func (d *DB) UserByID(ctx context.Context, id int64) (patchbay.User, error) {
	var u patchbay.User
	err := d.read.GetContext(ctx, &u, `SELECT * FROM users WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return u, patchbay.Errorf(patchbay.ENOTFOUND, "No such user.")
	} else if err != nil {
		return u, fmt.Errorf("db: user: %w", err)
	}
	return u, nil
}

// UserByEmail returns the first user with that email.
func (d *DB) UserByEmail(ctx context.Context, email string) (patchbay.User, error) {
	var u patchbay.User
	err := d.read.GetContext(ctx, &u, `SELECT * FROM users WHERE email = ? ORDER BY id LIMIT 1`, strings.ToLower(strings.TrimSpace(email)))
	if errors.Is(err, sql.ErrNoRows) {
		return u, patchbay.Errorf(patchbay.ENOTFOUND, "No user with email %q.", email)
	} else if err != nil {
		return u, fmt.Errorf("db: user by email: %w", err)
	}
	return u, nil
}

// UserSummary is a user with counts for the people pages.
type UserSummary struct {
	patchbay.User
	Sessions   int `db:"sessions"`
	Connectors int `db:"connectors"`
}

// ListUsers returns every user, newest sign-in first, with live session
// and connector counts.
func (d *DB) ListUsers(ctx context.Context) ([]UserSummary, error) {
	var us []UserSummary
	err := d.read.SelectContext(ctx, &us, `SELECT u.*,
		(SELECT count(*) FROM sessions s WHERE s.user_id = u.id AND s.expires_at > ?) AS sessions,
		(SELECT count(*) FROM mcp_user_servers m WHERE m.user_id = u.id) AS connectors
		FROM users u ORDER BY u.disabled, u.last_seen_at IS NULL, u.last_seen_at DESC, u.id`, d.now())
	if err != nil {
		return nil, fmt.Errorf("db: list users: %w", err)
	}
	return us, nil
}

// SetUserRole changes a user's role.
func (d *DB) SetUserRole(ctx context.Context, actorID, userID int64, role string) error {
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		if err := roleExists(ctx, tx, role); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE users SET role = ? WHERE id = ?`, role, userID)
		if err != nil {
			return fmt.Errorf("db: set role: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return patchbay.Errorf(patchbay.ENOTFOUND, "No such user.")
		}
		return audit(ctx, tx, d.now(), actorID, "user.set_role", userTarget(userID), "role="+role)
	})
}

// SetUserDisabled disables or re-enables a user. Disabling ends every one
// of their sessions in the same transaction and revokes nothing else, so
// re-enabling restores their tokens and connectors.
func (d *DB) SetUserDisabled(ctx context.Context, actorID, userID int64, disabled bool) error {
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET disabled = ? WHERE id = ?`, disabled, userID)
		if err != nil {
			return fmt.Errorf("db: disable user: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return patchbay.Errorf(patchbay.ENOTFOUND, "No such user.")
		}
		action := "user.enable"
		if disabled {
			action = "user.disable"
			if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = ?`, userID); err != nil {
				return fmt.Errorf("db: end sessions: %w", err)
			}
		}
		return audit(ctx, tx, d.now(), actorID, action, userTarget(userID), "")
	})
}

func userTarget(id int64) string { return fmt.Sprintf("user:%d", id) }
