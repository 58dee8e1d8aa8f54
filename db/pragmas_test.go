package db_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"patchbay/db"
)

// checkConnPragmas reads the pragmas on one held connection and checks
// them, field by field for a clear message and then with Verify.
func checkConnPragmas(t *testing.T, name string, c *sqlx.Conn) {
	t.Helper()
	p, err := db.ReadPragmas(context.Background(), c)
	if err != nil {
		t.Fatalf("%s: ReadPragmas: %v", name, err)
	}
	if p.JournalMode != "wal" {
		t.Errorf("%s: journal_mode: got %q; want wal", name, p.JournalMode)
	}
	if p.ForeignKeys != 1 {
		t.Errorf("%s: foreign_keys: got %d; want 1", name, p.ForeignKeys)
	}
	if p.BusyTimeout < 1000 {
		t.Errorf("%s: busy_timeout: got %dms; want at least 1000", name, p.BusyTimeout)
	}
	if p.Synchronous != 1 {
		t.Errorf("%s: synchronous: got %d; want 1 (NORMAL)", name, p.Synchronous)
	}
	if err := p.Verify(); err != nil {
		t.Errorf("%s: Verify: got %v; want nil", name, err)
	}
}

// holdConns takes n connections from pool at once and keeps them until
// the test ends, so each one is a distinct pooled connection.
func holdConns(t *testing.T, pool *sqlx.DB, n int) []*sqlx.Conn {
	t.Helper()
	conns := make([]*sqlx.Conn, 0, n)
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := pool.Connx(ctx)
		cancel()
		if err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, n, err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	if got := pool.Stats().InUse; got != n {
		t.Fatalf("connections in use: got %d; want %d", got, n)
	}
	return conns
}

func TestPragmasOnEveryPooledConnection(t *testing.T) {
	d := openTestDB(t)

	t.Run("every reader connection", func(t *testing.T) {
		n := d.Readers().Stats().MaxOpenConnections
		if n < 2 {
			t.Fatalf("reader pool size: got %d; want a bounded pool of at least 2", n)
		}
		conns := holdConns(t, d.Readers(), n)
		for i, c := range conns {
			checkConnPragmas(t, fmt.Sprintf("reader %d of %d", i+1, n), c)
		}

		// The pool is bounded: with every connection held, another waits.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if c, err := d.Readers().Connx(ctx); !errors.Is(err, context.DeadlineExceeded) {
			if c != nil {
				c.Close()
			}
			t.Errorf("connection %d of a pool of %d: got %v; want context.DeadlineExceeded", n+1, n, err)
		}
	})

	t.Run("the writer connection", func(t *testing.T) {
		if got := d.Writer().Stats().MaxOpenConnections; got != 1 {
			t.Fatalf("writer pool size: got %d; want 1", got)
		}
		conns := holdConns(t, d.Writer(), 1)
		checkConnPragmas(t, "writer", conns[0])
	})

	t.Run("connections opened after the first ones", func(t *testing.T) {
		// Closing a held connection after use returns it to the pool, where
		// at most a couple stay idle: the rest are closed and re-opened later.
		n := d.Readers().Stats().MaxOpenConnections
		for round := range 3 {
			for _, c := range holdConns(t, d.Readers(), n) {
				checkConnPragmas(t, "reader", c)
				c.Close()
			}
			if t.Failed() {
				t.Fatalf("round %d failed", round)
			}
		}
	})

	t.Run("readers cannot write", func(t *testing.T) {
		c := holdConns(t, d.Readers(), 1)[0]
		_, err := c.ExecContext(context.Background(), `INSERT INTO meta (key, value) VALUES ('r', 'w')`)
		if err == nil || !strings.Contains(err.Error(), "readonly") {
			t.Errorf("write on a reader: got %v; want a read-only error", err)
		}
	})
}

func TestPragmasVerify(t *testing.T) {
	good := db.Pragmas{JournalMode: "wal", ForeignKeys: 1, BusyTimeout: 10000, Synchronous: 1}
	if err := good.Verify(); err != nil {
		t.Fatalf("Verify(%+v): got %v; want nil", good, err)
	}
	tests := []struct {
		name   string
		change func(*db.Pragmas)
	}{
		{"rollback journal is rejected", func(p *db.Pragmas) { p.JournalMode = "delete" }},
		{"foreign keys off is rejected", func(p *db.Pragmas) { p.ForeignKeys = 0 }},
		{"no busy timeout is rejected", func(p *db.Pragmas) { p.BusyTimeout = 0 }},
		{"synchronous FULL is rejected", func(p *db.Pragmas) { p.Synchronous = 2 }},
		{"synchronous OFF is rejected", func(p *db.Pragmas) { p.Synchronous = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			tt.change(&p)
			if err := p.Verify(); err == nil {
				t.Errorf("Verify(%+v): got nil; want an error", p)
			}
		})
	}
}

func TestForeignKeysEnforced(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)

	t.Run("API token for a missing user fails", func(t *testing.T) {
		_, _, err := d.CreateAPIToken(ctx, 424242, "orphan")
		if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
			t.Errorf("CreateAPIToken for missing user: got %v; want a FOREIGN KEY error", err)
		}
		if n := countRows(t, d, "api_tokens", ""); n != 0 {
			t.Errorf("api_tokens rows: got %d; want 0", n)
		}
	})

	t.Run("raw insert through the writer fails too", func(t *testing.T) {
		_, err := d.Writer().ExecContext(ctx, `INSERT INTO sessions (id_hash, user_id, csrf_token, created_at, last_seen_at, expires_at)
			VALUES ('h', 424242, 'c', '2030-01-01', '2030-01-01', '2030-01-02')`)
		if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
			t.Errorf("insert session for missing user: got %v; want a FOREIGN KEY error", err)
		}
	})

	t.Run("deleting a user cascades to their tokens", func(t *testing.T) {
		u := signIn(t, d, "cascade", "cascade@example.test")
		if _, _, err := d.CreateAPIToken(ctx, u.ID, "t"); err != nil {
			t.Fatalf("CreateAPIToken: %v", err)
		}
		if _, err := d.Writer().ExecContext(ctx, `DELETE FROM users WHERE id = ?`, u.ID); err != nil {
			t.Fatalf("delete user: %v", err)
		}
		if n := countRows(t, d, "api_tokens", "user_id = ?", u.ID); n != 0 {
			t.Errorf("tokens of deleted user: got %d; want 0", n)
		}
	})
}
