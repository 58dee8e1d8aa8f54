package db_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"patchbay/db"
	"patchbay/migrations"
)

// domainTables is every table the domain needs from the first migration on.
var domainTables = []string{
	"users", "roles", "role_capabilities", "sessions", "api_tokens",
	"mcp_catalog", "mcp_global_servers", "mcp_global_access", "mcp_user_servers",
	"oauth_providers", "audit_log", "meta",
}

// highestMigration returns the largest NNNNN prefix of the embedded
// migration files, read from the files themselves rather than hard-coded.
func highestMigration(t *testing.T) int64 {
	t.Helper()
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatalf("read migrations: %v", err)
	}
	var highest int64
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			t.Fatalf("migration %s is not named NNNNN_description.sql", e.Name())
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			t.Fatalf("migration %s: %v", e.Name(), err)
		}
		highest = max(highest, v)
	}
	if highest == 0 {
		t.Fatal("found no migrations in migrations.FS")
	}
	return highest
}

func tableNames(t *testing.T, d *db.DB) []string {
	t.Helper()
	var names []string
	if err := d.Readers().SelectContext(context.Background(), &names,
		`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`); err != nil {
		t.Fatalf("list tables: %v", err)
	}
	return names
}

func TestOpenFromEmpty(t *testing.T) {
	ctx := context.Background()
	path := testDBPath(t)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("stat before Open: got %v; want not-exist", err)
	}
	d := openTestDBAt(t, path, nil)

	t.Run("creates the file with mode 0600", func(t *testing.T) {
		if got := fileMode(t, path); got != 0o600 {
			t.Errorf("mode of %s: got %v; want 0600", filepath.Base(path), got)
		}
	})

	t.Run("WAL and shared-memory files are 0600 too", func(t *testing.T) {
		if err := d.SetMeta(ctx, "probe", "x"); err != nil {
			t.Fatalf("SetMeta: %v", err)
		}
		for _, p := range dbFiles(path)[1:] {
			if got := fileMode(t, p); got != 0o600 {
				t.Errorf("mode of %s: got %v; want 0600", filepath.Base(p), got)
			}
		}
	})

	t.Run("applies every migration", func(t *testing.T) {
		got, err := d.SchemaVersion(ctx)
		if err != nil {
			t.Fatalf("SchemaVersion: %v", err)
		}
		if want := highestMigration(t); got != want {
			t.Errorf("SchemaVersion: got %d; want %d", got, want)
		}
	})

	t.Run("every domain table exists", func(t *testing.T) {
		have := tableNames(t, d)
		for _, want := range domainTables {
			if !slices.Contains(have, want) {
				t.Errorf("table %s: missing; tables are %v", want, have)
			}
		}
	})

	t.Run("built-in roles are seeded", func(t *testing.T) {
		for _, name := range []string{"admin", "user", "support"} {
			r, err := d.Role(ctx, name)
			if err != nil {
				t.Fatalf("Role(%s): %v", name, err)
			}
			if !r.BuiltIn {
				t.Errorf("Role(%s).BuiltIn: got false; want true", name)
			}
		}
	})

	t.Run("Ping succeeds", func(t *testing.T) {
		if err := d.Ping(ctx); err != nil {
			t.Errorf("Ping: got %v; want nil", err)
		}
	})
}

func TestReopenIsNoOp(t *testing.T) {
	ctx := context.Background()
	path := testDBPath(t)
	d := openTestDBAt(t, path, nil)
	u := signIn(t, d, "ada", "ada@example.test")
	var applied int
	if err := d.Readers().GetContext(ctx, &applied, `SELECT count(*) FROM goose_db_version`); err != nil {
		t.Fatalf("count goose_db_version: %v", err)
	}
	var rolesCreated string
	if err := d.Readers().GetContext(ctx, &rolesCreated, `SELECT group_concat(created_at) FROM roles`); err != nil {
		t.Fatalf("read roles: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	for i := range 2 {
		d2 := openTestDBAt(t, path, nil)
		v, err := d2.SchemaVersion(ctx)
		if err != nil {
			t.Fatalf("reopen %d: SchemaVersion: %v", i, err)
		}
		if want := highestMigration(t); v != want {
			t.Errorf("reopen %d: SchemaVersion: got %d; want %d", i, v, want)
		}
		var n int
		if err := d2.Readers().GetContext(ctx, &n, `SELECT count(*) FROM goose_db_version`); err != nil {
			t.Fatalf("reopen %d: count goose_db_version: %v", i, err)
		}
		if n != applied {
			t.Errorf("reopen %d: goose_db_version rows: got %d; want %d (nothing re-applied)", i, n, applied)
		}
		var created string
		if err := d2.Readers().GetContext(ctx, &created, `SELECT group_concat(created_at) FROM roles`); err != nil {
			t.Fatalf("reopen %d: read roles: %v", i, err)
		}
		if created != rolesCreated {
			t.Errorf("reopen %d: roles.created_at: got %q; want %q (seed not re-run)", i, created, rolesCreated)
		}
		got, err := d2.UserByID(ctx, u.ID)
		if err != nil || got.Subject != "ada" {
			t.Errorf("reopen %d: UserByID(%d): got %+v, %v; want subject ada", i, u.ID, got, err)
		}
		if err := d2.Migrate(ctx); err != nil {
			t.Errorf("reopen %d: Migrate again: got %v; want nil", i, err)
		}
		if err := d2.Ping(ctx); err != nil {
			t.Errorf("reopen %d: Ping: %v", i, err)
		}
		if err := d2.Close(); err != nil {
			t.Fatalf("reopen %d: Close: %v", i, err)
		}
	}
}

func TestOpenRefusesPathsWithoutAFile(t *testing.T) {
	for _, path := range []string{"", ":memory:"} {
		t.Run("path "+strconv.Quote(path), func(t *testing.T) {
			d, err := db.Open(context.Background(), path, nil)
			if err == nil {
				d.Close()
				t.Fatalf("Open(%q): got nil error; want an error", path)
			}
		})
	}
}

// A data directory may legitimately contain characters that mean
// something in a SQLite URI; the database must still live at the path
// given, not at a truncated or decoded one.
func TestOpenPathWithURICharacters(t *testing.T) {
	for _, dir := range []string{"a#b", "what?x=1", "50%25off", "100%", "with space"} {
		t.Run("directory "+strconv.Quote(dir), func(t *testing.T) {
			ctx := context.Background()
			parent := t.TempDir()
			full := filepath.Join(parent, dir)
			if err := os.Mkdir(full, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(full, "patchbay.db")
			d := openTestDBAt(t, path, nil)
			if err := d.SetMeta(ctx, "where", "here"); err != nil {
				t.Fatalf("SetMeta: %v", err)
			}
			checkpoint(t, d)
			if !fileContains(t, path, "goose_db_version") {
				t.Errorf("%s does not hold the schema; the database went elsewhere", path)
			}
			entries, err := os.ReadDir(parent)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("entries beside %q: got %v; want only %q", dir, names, dir)
			}
			if got := fileMode(t, path); got != 0o600 {
				t.Errorf("mode: got %v; want 0600", got)
			}
			if err := db.CheckIntegrity(ctx, path); err != nil {
				t.Errorf("CheckIntegrity: %v", err)
			}
			if err := d.Backup(ctx, filepath.Join(full, "backup#1.db")); err != nil {
				t.Errorf("Backup into the same directory: %v", err)
			}
		})
	}
}

func TestCloseTwice(t *testing.T) {
	d, err := db.Open(context.Background(), testDBPath(t), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: got %v; want nil", err)
	}
}

func TestMeta(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	t.Run("unset key reads as empty", func(t *testing.T) {
		v, err := d.Meta(ctx, "never-set")
		if err != nil || v != "" {
			t.Errorf("Meta(never-set): got %q, %v; want \"\", nil", v, err)
		}
	})
	t.Run("set then overwrite", func(t *testing.T) {
		for _, want := range []string{"first", "second"} {
			if err := d.SetMeta(ctx, db.MetaSealKeyID, want); err != nil {
				t.Fatalf("SetMeta: %v", err)
			}
			got, err := d.Meta(ctx, db.MetaSealKeyID)
			if err != nil || got != want {
				t.Errorf("Meta: got %q, %v; want %q, nil", got, err, want)
			}
		}
	})
}
