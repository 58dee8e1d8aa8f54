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

// apiTokenPrefix makes Patchbay tokens recognisable to people and to
// secret scanners.
const apiTokenPrefix = "pbt_"

// CreateAPIToken mints a personal access token. The secret is returned
// once and only its hash is stored.
func (d *DB) CreateAPIToken(ctx context.Context, userID int64, name string) (string, patchbay.APIToken, error) {
	var tok patchbay.APIToken
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return "", tok, patchbay.Errorf(patchbay.EINVALID, "Give the token a name of 1 to 100 characters.")
	}
	r, err := randomToken(32)
	if err != nil {
		return "", tok, err
	}
	secret := apiTokenPrefix + r
	err = d.writeTx(ctx, func(tx *sqlx.Tx) error {
		now := d.now()
		res, err := tx.ExecContext(ctx, `INSERT INTO api_tokens (user_id, name, prefix, token_hash, created_at) VALUES (?, ?, ?, ?, ?)`,
			userID, name, secret[:len(apiTokenPrefix)+6], hashToken(secret), now)
		if err != nil {
			return fmt.Errorf("db: create token: %w", err)
		}
		id, _ := res.LastInsertId()
		if err := tx.GetContext(ctx, &tok, `SELECT id, user_id, name, prefix, created_at, last_used_at FROM api_tokens WHERE id = ?`, id); err != nil {
			return fmt.Errorf("db: create token: %w", err)
		}
		return audit(ctx, tx, now, userID, "token.create", fmt.Sprintf("token:%d", id), name)
	})
	if err != nil {
		return "", tok, err
	}
	return secret, tok, nil
}

// ListAPITokens returns a user's tokens, newest first.
func (d *DB) ListAPITokens(ctx context.Context, userID int64) ([]patchbay.APIToken, error) {
	var ts []patchbay.APIToken
	if err := d.read.SelectContext(ctx, &ts, `SELECT id, user_id, name, prefix, created_at, last_used_at FROM api_tokens
		WHERE user_id = ? ORDER BY id DESC`, userID); err != nil {
		return nil, fmt.Errorf("db: list tokens: %w", err)
	}
	return ts, nil
}

// RevokeAPIToken deletes one of the user's own tokens. Another user's
// token id is reported as not found, so ids cannot be probed.
func (d *DB) RevokeAPIToken(ctx context.Context, userID, tokenID int64) error {
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM api_tokens WHERE id = ? AND user_id = ?`, tokenID, userID)
		if err != nil {
			return fmt.Errorf("db: revoke token: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return patchbay.Errorf(patchbay.ENOTFOUND, "No such token.")
		}
		return audit(ctx, tx, d.now(), userID, "token.revoke", fmt.Sprintf("token:%d", tokenID), "")
	})
}

// APITokenPrincipal resolves a bearer token to its principal. Unknown
// tokens and tokens of disabled users are EUNAUTHORIZED.
func (d *DB) APITokenPrincipal(ctx context.Context, secret string) (*patchbay.Principal, error) {
	if !strings.HasPrefix(secret, apiTokenPrefix) {
		return nil, patchbay.Errorf(patchbay.EUNAUTHORIZED, "Invalid token.")
	}
	var row struct {
		ID       int64      `db:"id"`
		UserID   int64      `db:"user_id"`
		LastUsed *time.Time `db:"last_used_at"`
	}
	err := d.read.GetContext(ctx, &row, `SELECT id, user_id, last_used_at FROM api_tokens WHERE token_hash = ?`, hashToken(secret))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, patchbay.Errorf(patchbay.EUNAUTHORIZED, "Invalid token.")
	} else if err != nil {
		return nil, fmt.Errorf("db: token: %w", err)
	}
	pr, err := d.principal(ctx, row.UserID)
	if err != nil {
		return nil, err
	}
	now := d.now()
	if row.LastUsed == nil || now.Sub(*row.LastUsed) >= touchEvery {
		if _, err := d.write.ExecContext(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ?`, now, row.ID); err != nil {
			return nil, fmt.Errorf("db: touch token: %w", err)
		}
	}
	pr.ViaToken = true
	return pr, nil
}
