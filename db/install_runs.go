package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"patchbay"
)

// InstallLogLimit is the most of an install run's output that is kept:
// the last 256 KiB, cut at a line boundary.
const InstallLogLimit = 256 << 10

// installLogTruncated heads a log whose beginning was dropped.
const installLogTruncated = "[earlier output truncated]\n"

// interruptedInstall is the error of a run that Patchbay stopped during.
const interruptedInstall = "interrupted: Patchbay stopped during the install"

// truncateInstallLog keeps the end of log within InstallLogLimit bytes,
// starting at a line boundary where it can and at a character boundary
// when the last line alone is too long.
func truncateInstallLog(log string) string {
	if len(log) <= InstallLogLimit {
		return log
	}
	keep := InstallLogLimit - len(installLogTruncated)
	start := len(log) - keep
	tail := log[start:]
	if log[start-1] != '\n' {
		if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
			tail = tail[i+1:]
		} else {
			for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
				tail = tail[1:]
			}
		}
	}
	return installLogTruncated + tail
}

// installRunRow is one install_runs row as stored.
type installRunRow struct {
	ID         int64         `db:"id"`
	Scope      string        `db:"scope"`
	UserID     sql.NullInt64 `db:"user_id"`
	Connector  string        `db:"connector"`
	Reason     string        `db:"reason"`
	Status     string        `db:"status"`
	Hash       string        `db:"hash"`
	Log        string        `db:"log"`
	Error      string        `db:"error"`
	StartedAt  time.Time     `db:"started_at"`
	FinishedAt sql.NullTime  `db:"finished_at"`
}

const installRunColumns = `id, scope, user_id, connector, reason, status, hash, log, error, started_at, finished_at`

func (r installRunRow) run() InstallRun {
	return InstallRun{ID: r.ID, Scope: r.Scope, UserID: r.UserID.Int64, Connector: r.Connector, Reason: r.Reason,
		Status: r.Status, Hash: r.Hash, Log: r.Log, Error: r.Error, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt.Time}
}

func errNoInstallRun() error { return patchbay.Errorf(patchbay.ENOTFOUND, "No such install run.") }

// StartInstallRun records that an install of r.Connector has begun. Its
// status is running and its start time now; a global run has no user.
func (d *DB) StartInstallRun(ctx context.Context, r InstallRun) (InstallRun, error) {
	switch {
	case r.Scope != InstallScopeGlobal && r.Scope != InstallScopeUser:
		return r, patchbay.Errorf(patchbay.EINVALID, "An install run is global or user, not %q.", r.Scope)
	case r.Scope == InstallScopeGlobal && r.UserID != 0:
		return r, patchbay.Errorf(patchbay.EINVALID, "A global install run has no user.")
	case r.Scope == InstallScopeUser && r.UserID == 0:
		return r, patchbay.Errorf(patchbay.EINVALID, "A user's install run needs the user.")
	case r.Connector == "":
		return r, patchbay.Errorf(patchbay.EINVALID, "An install run needs the connector's name.")
	}
	var out InstallRun
	err := d.writeTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO install_runs (scope, user_id, connector, reason, status, hash, started_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, r.Scope, nullID(r.UserID), r.Connector, r.Reason, InstallRunning, r.Hash, d.now())
		if err != nil {
			return fmt.Errorf("db: start install run: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("db: start install run: %w", err)
		}
		var row installRunRow
		if err := tx.GetContext(ctx, &row, `SELECT `+installRunColumns+` FROM install_runs WHERE id = ?`, id); err != nil {
			return fmt.Errorf("db: start install run: %w", err)
		}
		out = row.run()
		return nil
	})
	return out, err
}

// FinishInstallRun records how a running install ended, with its output
// cut to the last InstallLogLimit bytes. A run that already finished is
// a conflict.
func (d *DB) FinishInstallRun(ctx context.Context, id int64, status, hash, log, errMsg string) error {
	switch status {
	case InstallSucceeded, InstallUnchanged, InstallFailed:
	default:
		return patchbay.Errorf(patchbay.EINVALID, "An install run finishes as succeeded, unchanged or failed, not %q.", status)
	}
	log = truncateInstallLog(log)
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var cur string
		err := tx.GetContext(ctx, &cur, `SELECT status FROM install_runs WHERE id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoInstallRun()
		} else if err != nil {
			return fmt.Errorf("db: finish install run: %w", err)
		}
		if cur != InstallRunning {
			return patchbay.Errorf(patchbay.ECONFLICT, "That install run has already finished.")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE install_runs SET status = ?, hash = ?, log = ?, error = ?, finished_at = ?
			WHERE id = ?`, status, hash, log, errMsg, d.now(), id); err != nil {
			return fmt.Errorf("db: finish install run: %w", err)
		}
		return nil
	})
}

// InstallRunByID returns one install run.
func (d *DB) InstallRunByID(ctx context.Context, id int64) (InstallRun, error) {
	var row installRunRow
	err := d.read.GetContext(ctx, &row, `SELECT `+installRunColumns+` FROM install_runs WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return InstallRun{}, errNoInstallRun()
	} else if err != nil {
		return InstallRun{}, fmt.Errorf("db: install run: %w", err)
	}
	return row.run(), nil
}

// LatestInstallRun returns the newest run for one connector: a global
// one (userID 0) or one user's.
func (d *DB) LatestInstallRun(ctx context.Context, scope string, userID int64, connector string) (InstallRun, error) {
	var row installRunRow
	err := d.read.GetContext(ctx, &row, `SELECT `+installRunColumns+` FROM install_runs
		WHERE scope = ? AND user_id IS ? AND connector = ? ORDER BY id DESC LIMIT 1`, scope, nullID(userID), connector)
	if errors.Is(err, sql.ErrNoRows) {
		return InstallRun{}, patchbay.Errorf(patchbay.ENOTFOUND, "%q has not been installed yet.", connector)
	} else if err != nil {
		return InstallRun{}, fmt.Errorf("db: latest install run: %w", err)
	}
	return row.run(), nil
}

// InstallRuns returns up to limit runs for one connector, newest first;
// limit 0 or less means all of them.
func (d *DB) InstallRuns(ctx context.Context, scope string, userID int64, connector string, limit int) ([]InstallRun, error) {
	if limit <= 0 {
		limit = -1
	}
	var rows []installRunRow
	if err := d.read.SelectContext(ctx, &rows, `SELECT `+installRunColumns+` FROM install_runs
		WHERE scope = ? AND user_id IS ? AND connector = ? ORDER BY id DESC LIMIT ?`, scope, nullID(userID), connector, limit); err != nil {
		return nil, fmt.Errorf("db: install runs: %w", err)
	}
	out := make([]InstallRun, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.run())
	}
	return out, nil
}

// MarkInterruptedInstallRuns fails every run still marked running. It is
// called at start-up, when no install can be in progress, and returns how
// many runs it marked.
func (d *DB) MarkInterruptedInstallRuns(ctx context.Context) (int, error) {
	var n int64
	err := d.writeTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE install_runs SET status = ?, error = ?, finished_at = ? WHERE status = ?`,
			InstallFailed, interruptedInstall, d.now(), InstallRunning)
		if err != nil {
			return fmt.Errorf("db: mark interrupted installs: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

// PruneInstallRuns keeps the newest keep finished runs of each connector
// (per scope and user) and deletes older ones, so the history of a
// connector reinstalled daily does not grow without bound. Running runs
// are never deleted. It returns how many runs it deleted.
func (d *DB) PruneInstallRuns(ctx context.Context, keep int) (int, error) {
	if keep < 1 {
		return 0, patchbay.Errorf(patchbay.EINVALID, "Keep at least one install run per connector.")
	}
	var n int64
	err := d.writeTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM install_runs WHERE status <> ? AND id IN (
			SELECT id FROM (
				SELECT id, row_number() OVER (
					PARTITION BY scope, coalesce(user_id, 0), connector ORDER BY id DESC) AS newer
				FROM install_runs)
			WHERE newer > ?)`, InstallRunning, keep)
		if err != nil {
			return fmt.Errorf("db: prune install runs: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}
