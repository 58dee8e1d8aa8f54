// Package db is Patchbay's SQLite store. It knows nothing of HTTP: it
// takes and returns domain types from package patchbay, and every exported
// method runs in its own transaction.
package db

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"patchbay/db/seal"
)

// DB is an open Patchbay database: one writer connection, so writers queue
// in Go instead of failing with "database is locked", and a pool of readers.
type DB struct {
	path  string
	write *sqlx.DB
	read  *sqlx.DB
	keys  *seal.Keyring

	// Now returns the current time; tests replace it to move the clock.
	Now func() time.Time
}

// readerPoolSize bounds concurrent readers; WAL lets them run beside the writer.
const readerPoolSize = 8

// busyTimeoutMS is how long a connection waits for a lock before giving up.
const busyTimeoutMS = 10000

// dsn returns the connection string. Pragmas go in the DSN so that every
// pooled connection gets them, not just the first one.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", fmt.Sprint(busyTimeoutMS))
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	if readOnly {
		q.Set("mode", "ro")
	} else {
		// BEGIN IMMEDIATE takes the write lock up front, so a transaction
		// never fails half-way when it upgrades from read to write.
		q.Set("_txlock", "immediate")
	}
	return "file:" + uriPath(path) + "?" + q.Encode()
}

// uriPathEscaper escapes the characters that SQLite's URI parser (and the
// driver, which splits the DSN at the first '?') would otherwise read as
// syntax, so a path like "/data/a#b/patchbay.db" opens that file and not
// "/data/a".
var uriPathEscaper = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// uriPath returns path escaped for use after "file:" in a SQLite URI.
func uriPath(path string) string { return uriPathEscaper.Replace(path) }

// Open opens (creating if needed, mode 0600) the database at path, checks
// that its pragmas took effect and applies pending migrations. keys seals
// and opens secret columns; it may be nil for tools that never touch them.
func Open(ctx context.Context, path string, keys *seal.Keyring) (*DB, error) {
	if path == "" || path == ":memory:" {
		// A pool of :memory: connections would each see its own empty database.
		return nil, errors.New("db: a file path is required")
	}
	// Create the file ourselves so it is 0600 from its first byte.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("db: create %s: %w", path, err)
	}
	f.Close()

	write, err := sqlx.Open("sqlite3", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("db: open writer: %w", err)
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxIdleTime(0)
	d := &DB{path: path, write: write, keys: keys, Now: func() time.Time { return time.Now().UTC() }}
	if err := d.checkPragmas(ctx, write); err != nil {
		write.Close()
		return nil, err
	}
	if err := d.Migrate(ctx); err != nil {
		write.Close()
		return nil, err
	}
	read, err := sqlx.Open("sqlite3", dsn(path, true))
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("db: open readers: %w", err)
	}
	read.SetMaxOpenConns(readerPoolSize)
	d.read = read
	if err := d.checkPragmas(ctx, read); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Close closes both pools. It is safe to call twice; afterwards every
// method returns an error (never panics), so /readyz reports not ready.
func (d *DB) Close() error {
	var errs []error
	if d.read != nil {
		errs = append(errs, d.read.Close())
	}
	if d.write != nil {
		errs = append(errs, d.write.Close())
	}
	return errors.Join(errs...)
}

// Path returns the database file's path.
func (d *DB) Path() string { return d.path }

// SetKeyring sets the keyring that seals secret columns. Call it before
// the database is shared: start-up needs the database open to decide which
// key to load.
func (d *DB) SetKeyring(k *seal.Keyring) { d.keys = k }

// Keys returns the keyring that seals secret columns.
func (d *DB) Keys() *seal.Keyring { return d.keys }

// Pragmas is what a connection reports for the settings Patchbay relies on.
type Pragmas struct {
	JournalMode string `db:"journal_mode"`
	ForeignKeys int    `db:"foreign_keys"`
	BusyTimeout int    `db:"busy_timeout"`
	Synchronous int    `db:"synchronous"`
}

// ReadPragmas reads the settings back from one connection of q.
func ReadPragmas(ctx context.Context, q sqlx.QueryerContext) (Pragmas, error) {
	var p Pragmas
	err := sqlx.GetContext(ctx, q, &p, `SELECT
		(SELECT journal_mode FROM pragma_journal_mode) AS journal_mode,
		(SELECT foreign_keys FROM pragma_foreign_keys) AS foreign_keys,
		(SELECT timeout FROM pragma_busy_timeout) AS busy_timeout,
		(SELECT synchronous FROM pragma_synchronous) AS synchronous`)
	if err != nil {
		return p, fmt.Errorf("db: read pragmas: %w", err)
	}
	return p, nil
}

// Verify reports an error unless p holds the settings Patchbay needs.
func (p Pragmas) Verify() error {
	switch {
	case p.JournalMode != "wal":
		return fmt.Errorf("db: journal_mode is %q; want wal", p.JournalMode)
	case p.ForeignKeys != 1:
		return fmt.Errorf("db: foreign_keys is off")
	case p.BusyTimeout < 1000:
		return fmt.Errorf("db: busy_timeout is %dms; want at least 1000", p.BusyTimeout)
	case p.Synchronous != 1:
		return fmt.Errorf("db: synchronous is %d; want 1 (NORMAL)", p.Synchronous)
	}
	return nil
}

func (d *DB) checkPragmas(ctx context.Context, pool *sqlx.DB) error {
	p, err := ReadPragmas(ctx, pool)
	if err != nil {
		return err
	}
	return p.Verify()
}

// Ping reports whether the database answers and has no pending migration.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.read.PingContext(ctx); err != nil {
		return fmt.Errorf("db: ping: %w", err)
	}
	pending, err := d.pendingMigrations(ctx)
	if err != nil {
		return err
	}
	if pending {
		return errors.New("db: migrations pending")
	}
	return nil
}

// Readers returns the read pool, for tests that inspect pooled connections.
func (d *DB) Readers() *sqlx.DB { return d.read }

// Writer returns the writer pool, for tests that inspect it.
func (d *DB) Writer() *sqlx.DB { return d.write }

// writeTx runs fn in one write transaction, committing when it returns nil.
func (d *DB) writeTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := d.write.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("db: begin: %w", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("db: commit: %w", err)
	}
	return nil
}

// now returns the current time truncated to the second in UTC, the
// precision every stored time has.
func (d *DB) now() time.Time { return d.Now().UTC().Truncate(time.Second) }
