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

// SessionPolicy bounds a session's life: it ends after Idle without a
// request or MaxAge after sign-in, whichever comes first.
type SessionPolicy struct {
	Idle   time.Duration
	MaxAge time.Duration
}

// touchEvery limits last-seen writes to one a minute per session, so that
// reading pages does not turn every request into a write.
const touchEvery = time.Minute

// CreateSession starts a new session for a user and returns the cookie
// token. Only the token's hash is stored.
func (d *DB) CreateSession(ctx context.Context, userID int64, p SessionPolicy) (string, error) {
	token, err := randomToken(32)
	if err != nil {
		return "", err
	}
	csrf, err := randomToken(32)
	if err != nil {
		return "", err
	}
	now := d.now()
	err = d.writeTx(ctx, func(tx *sqlx.Tx) error {
		// Sweep this user's dead sessions while we hold the write lock anyway.
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = ? AND (expires_at <= ? OR last_seen_at <= ?)`,
			userID, now, now.Add(-p.Idle)); err != nil {
			return fmt.Errorf("db: sweep sessions: %w", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions (id_hash, user_id, csrf_token, created_at, last_seen_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?)`, hashToken(token), userID, csrf, now, now, now.Add(p.MaxAge))
		if err != nil {
			return fmt.Errorf("db: create session: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// Session resolves a session cookie to its principal. A missing, expired,
// idle or disabled-user session is EUNAUTHORIZED.
func (d *DB) Session(ctx context.Context, token string, p SessionPolicy) (*patchbay.Principal, error) {
	var row struct {
		IDHash   string    `db:"id_hash"`
		UserID   int64     `db:"user_id"`
		CSRF     string    `db:"csrf_token"`
		LastSeen time.Time `db:"last_seen_at"`
		Expires  time.Time `db:"expires_at"`
	}
	err := d.read.GetContext(ctx, &row, `SELECT id_hash, user_id, csrf_token, last_seen_at, expires_at FROM sessions WHERE id_hash = ?`, hashToken(token))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, patchbay.Errorf(patchbay.EUNAUTHORIZED, "Please sign in.")
	} else if err != nil {
		return nil, fmt.Errorf("db: session: %w", err)
	}
	now := d.now()
	if !now.Before(row.Expires) || !now.Before(row.LastSeen.Add(p.Idle)) {
		_ = d.DeleteSession(ctx, token)
		return nil, patchbay.Errorf(patchbay.EUNAUTHORIZED, "Your session has ended. Please sign in again.")
	}
	pr, err := d.principal(ctx, row.UserID)
	if err != nil {
		return nil, err
	}
	pr.SessionID = row.IDHash
	pr.CSRFToken = row.CSRF
	if now.Sub(row.LastSeen) >= touchEvery {
		if _, err := d.write.ExecContext(ctx, `UPDATE sessions SET last_seen_at = ? WHERE id_hash = ?`, now, row.IDHash); err != nil {
			return nil, fmt.Errorf("db: touch session: %w", err)
		}
		if _, err := d.write.ExecContext(ctx, `UPDATE users SET last_seen_at = ? WHERE id = ?`, now, row.UserID); err != nil {
			return nil, fmt.Errorf("db: touch user: %w", err)
		}
	}
	return pr, nil
}

// principal loads a user and their role; a disabled user is unauthorized.
func (d *DB) principal(ctx context.Context, userID int64) (*patchbay.Principal, error) {
	u, err := d.UserByID(ctx, userID)
	if err != nil {
		return nil, err
	}
	if u.Disabled {
		return nil, patchbay.Errorf(patchbay.EUNAUTHORIZED, "This account is disabled.")
	}
	r, err := d.Role(ctx, u.Role)
	if err != nil {
		return nil, err
	}
	return &patchbay.Principal{User: u, Role: r}, nil
}

// DeleteSession ends one session (sign-out).
func (d *DB) DeleteSession(ctx context.Context, token string) error {
	if _, err := d.write.ExecContext(ctx, `DELETE FROM sessions WHERE id_hash = ?`, hashToken(token)); err != nil {
		return fmt.Errorf("db: delete session: %w", err)
	}
	return nil
}

// SessionExists reports whether a session token is still stored, whatever
// its age; tests use it to prove sessions end server-side.
func (d *DB) SessionExists(ctx context.Context, token string) (bool, error) {
	var n int
	if err := d.read.GetContext(ctx, &n, `SELECT count(*) FROM sessions WHERE id_hash = ?`, hashToken(token)); err != nil {
		return false, fmt.Errorf("db: session exists: %w", err)
	}
	return n == 1, nil
}
