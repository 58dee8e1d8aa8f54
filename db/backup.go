package db

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/jmoiron/sqlx"
)

// Backup writes a consistent copy of the database to dest with VACUUM INTO
// and checks the copy with PRAGMA integrity_check. dest must not exist.
// The secret key is not in the database, so it is not in the backup either:
// keep the key file safe separately.
func (d *DB) Backup(ctx context.Context, dest string) error {
	// Create dest ourselves, exclusively and 0600, so the copy is never
	// readable by others (not even between VACUUM and a chmod) and an
	// existing file is never overwritten. VACUUM INTO accepts an empty file.
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("db: backup: %s already exists", dest)
	} else if err != nil {
		return fmt.Errorf("db: backup: %w", err)
	}
	f.Close()
	if _, err := d.write.ExecContext(ctx, `VACUUM INTO ?`, dest); err != nil {
		os.Remove(dest)
		return fmt.Errorf("db: backup: %w", err)
	}
	if err := os.Chmod(dest, 0o600); err != nil {
		return fmt.Errorf("db: backup: %w", err)
	}
	if err := CheckIntegrity(ctx, dest); err != nil {
		return err
	}
	return nil
}

// CheckIntegrity opens the database file at path read-only and runs
// PRAGMA integrity_check on it.
func CheckIntegrity(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("db: integrity check: %w", err)
	}
	c, err := sqlx.Open("sqlite3", "file:"+uriPath(path)+"?mode=ro")
	if err != nil {
		return fmt.Errorf("db: integrity check: %w", err)
	}
	defer c.Close()
	var res []string
	if err := c.SelectContext(ctx, &res, `PRAGMA integrity_check`); err != nil {
		return fmt.Errorf("db: integrity check: %w", err)
	}
	if len(res) != 1 || res[0] != "ok" {
		return fmt.Errorf("db: integrity check of %s failed: %v", path, res)
	}
	return nil
}
