package db_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"patchbay"
	"patchbay/db"
	"patchbay/db/seal"
)

// testIssuer is the OIDC issuer most test identities come from.
const testIssuer = "https://idp.example.test"

// testPolicy is the session policy tests use unless they need another.
var testPolicy = db.SessionPolicy{Idle: 30 * time.Minute, MaxAge: 8 * time.Hour}

// testClock is a settable clock for DB.Now, safe for concurrent use.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's current time.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// useTestClock makes d read time from a new clock set to a fixed,
// whole-second instant, and returns that clock.
func useTestClock(t *testing.T, d *db.DB) *testClock {
	t.Helper()
	c := &testClock{now: time.Date(2030, time.March, 4, 5, 6, 7, 0, time.UTC)}
	d.Now = c.Now
	return c
}

// newTestKey returns a fresh random sealing key.
func newTestKey(t *testing.T) seal.Key {
	t.Helper()
	k, err := seal.GenerateKey(nil)
	if err != nil {
		t.Fatalf("seal.GenerateKey: %v", err)
	}
	return k
}

// testDBPath returns a path for a database file in a fresh temp dir.
func testDBPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "patchbay.db")
}

// openTestDB opens a new database file in a temp dir with a fresh seal
// keyring, and closes it when the test ends.
func openTestDB(t *testing.T) *db.DB {
	t.Helper()
	return openTestDBAt(t, testDBPath(t), seal.NewKeyring(newTestKey(t)))
}

// openTestDBAt opens the database at path with keys, and closes it when
// the test ends.
func openTestDBAt(t *testing.T, path string, keys *seal.Keyring) *db.DB {
	t.Helper()
	d, err := db.Open(context.Background(), path, keys)
	if err != nil {
		t.Fatalf("db.Open(%s): %v", path, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// signIn signs in a verified identity from testIssuer with no admin list.
func signIn(t *testing.T, d *db.DB, subject, email string) patchbay.User {
	t.Helper()
	u, err := d.SignInUser(context.Background(), db.SignIn{
		Issuer: testIssuer, Subject: subject, Email: email, Name: "Name of " + subject, EmailVerified: true,
	}, nil)
	if err != nil {
		t.Fatalf("SignInUser(%s): %v", subject, err)
	}
	return u
}

// wantCode fails the test unless err carries the patchbay error code want.
func wantCode(t *testing.T, what string, err error, want string) {
	t.Helper()
	if got := patchbay.ErrorCode(err); got != want {
		t.Fatalf("%s: got error %v (code %q); want code %q", what, err, got, want)
	}
}

// countRows returns the number of rows in table that match where ("" for all).
func countRows(t *testing.T, d *db.DB, table, where string, args ...any) int {
	t.Helper()
	q := "SELECT count(*) FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	var n int
	if err := d.Readers().GetContext(context.Background(), &n, q, args...); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// dumpTable returns every cell of table as text, one row a line, so a
// test can look for a value wherever it might have been stored.
func dumpTable(t *testing.T, d *db.DB, table string) string {
	t.Helper()
	rows, err := d.Readers().QueryxContext(context.Background(), "SELECT * FROM "+table)
	if err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		cells, err := rows.SliceScan()
		if err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		for _, c := range cells {
			if bs, ok := c.([]byte); ok {
				c = string(bs)
			}
			fmt.Fprintf(&b, "%v\t", c)
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	return b.String()
}

// checkpoint moves everything in the WAL into the main file and empties
// the WAL, so the main file's bytes hold the current data.
func checkpoint(t *testing.T, d *db.DB) {
	t.Helper()
	var busy, logFrames, checkpointed int
	err := d.Writer().QueryRowxContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &checkpointed)
	if err != nil {
		t.Fatalf("wal_checkpoint: %v", err)
	}
	if busy != 0 {
		t.Fatalf("wal_checkpoint: got busy %d; want 0", busy)
	}
}

// dbFiles returns the database file and its -wal and -shm companions.
func dbFiles(path string) []string {
	return []string{path, path + "-wal", path + "-shm"}
}

// fileContains reports whether the file at path holds needle. A missing
// file holds nothing.
func fileContains(t *testing.T, path, needle string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false
	} else if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return bytes.Contains(b, []byte(needle))
}

// assertNotInFiles fails the test if any of paths holds secret. The main
// file (paths[0]) must exist, so a wrong path cannot pass vacuously.
func assertNotInFiles(t *testing.T, secret string, paths ...string) {
	t.Helper()
	if _, err := os.Stat(paths[0]); err != nil {
		t.Fatalf("stat %s: %v", paths[0], err)
	}
	for _, p := range paths {
		if fileContains(t, p, secret) {
			t.Errorf("%s holds the secret in plain text; want it absent", filepath.Base(p))
		}
	}
}

// fileMode returns the permission bits of path.
func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return fi.Mode().Perm()
}

// auditCount returns the number of audit_log rows.
func auditCount(t *testing.T, d *db.DB) int {
	t.Helper()
	return countRows(t, d, "audit_log", "")
}
