package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Meta keys.
const (
	// MetaSealKeyID records the id of the key that seals secrets, so a
	// start-up without that key fails loudly instead of minting a new one.
	MetaSealKeyID = "seal_key_id"
)

// Meta returns a stored setting, or "" when it is unset.
func (d *DB) Meta(ctx context.Context, key string) (string, error) {
	var v string
	err := d.write.GetContext(ctx, &v, `SELECT value FROM meta WHERE key = ?`, key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("db: meta: %w", err)
	}
	return v, nil
}

// SetMeta stores a setting.
func (d *DB) SetMeta(ctx context.Context, key, value string) error {
	_, err := d.write.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	if err != nil {
		return fmt.Errorf("db: set meta: %w", err)
	}
	return nil
}
