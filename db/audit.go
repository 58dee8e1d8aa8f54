package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// AuditEntry is one line of the audit log.
type AuditEntry struct {
	ID      int64     `db:"id"`
	At      time.Time `db:"at"`
	ActorID *int64    `db:"actor_id"`
	Action  string    `db:"action"`
	Target  string    `db:"target"`
	Detail  string    `db:"detail"`
}

// audit records an action inside the transaction that performed it, so the
// log never claims something that was rolled back. actorID 0 means the
// command line or the system.
func audit(ctx context.Context, tx *sqlx.Tx, at time.Time, actorID int64, action, target, detail string) error {
	var actor any
	if actorID != 0 {
		actor = actorID
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO audit_log (at, actor_id, action, target, detail) VALUES (?, ?, ?, ?, ?)`,
		at, actor, action, target, detail)
	if err != nil {
		return fmt.Errorf("db: audit: %w", err)
	}
	return nil
}

// AuditLog returns the newest entries first.
func (d *DB) AuditLog(ctx context.Context, limit int) ([]AuditEntry, error) {
	var es []AuditEntry
	if err := d.read.SelectContext(ctx, &es, `SELECT * FROM audit_log ORDER BY id DESC LIMIT ?`, limit); err != nil {
		return nil, fmt.Errorf("db: audit log: %w", err)
	}
	return es, nil
}
