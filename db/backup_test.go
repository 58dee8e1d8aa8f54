package db_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"patchbay/db"
	"patchbay/db/seal"
)

func TestBackup(t *testing.T) {
	ctx := context.Background()
	keys := seal.NewKeyring(newTestKey(t))
	d := openTestDBAt(t, testDBPath(t), keys)
	for _, s := range []string{"quinn", "rosa", "sam"} {
		signIn(t, d, s, s+"@example.test")
	}
	secret := canary(t, "backup")
	if _, err := d.SaveOAuthProvider(ctx, 0, testProvider("gitlab"), secret); err != nil {
		t.Fatal(err)
	}
	want, err := d.ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "patchbay-backup.db")
	if err := d.Backup(ctx, dest); err != nil {
		t.Fatalf("Backup: %v", err)
	}

	t.Run("file mode is 0600", func(t *testing.T) {
		if got := fileMode(t, dest); got != 0o600 {
			t.Errorf("backup mode: got %v; want 0600", got)
		}
	})
	t.Run("passes the integrity check", func(t *testing.T) {
		if err := db.CheckIntegrity(ctx, dest); err != nil {
			t.Errorf("CheckIntegrity: %v", err)
		}
	})
	t.Run("restores with the same users and secrets", func(t *testing.T) {
		restored := openTestDBAt(t, dest, keys)
		if err := restored.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		got, err := restored.ListUsers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(a, b db.UserSummary) bool {
			return a.ID == b.ID && a.Issuer == b.Issuer && a.Subject == b.Subject && a.Email == b.Email && a.Role == b.Role
		}) {
			t.Errorf("restored users: got %+v; want %+v", got, want)
		}
		// Row ids survive VACUUM INTO, so sealed values still open.
		if s, err := restored.OAuthProviderSecret(ctx, "gitlab"); err != nil || s != secret {
			t.Errorf("restored OAuthProviderSecret: got %q, %v; want the canary", s, err)
		}
	})
}

func TestBackupRefusesExistingDestination(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	signIn(t, d, "tom", "tom@example.test")
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
	}{
		{"a file with data", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"an empty file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "exists.db")
			tt.prepare(t, path)
			before, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Backup(ctx, path); err == nil {
				t.Fatal("Backup onto an existing path: got nil; want an error")
			}
			after, err := os.Stat(path)
			if err != nil {
				t.Fatalf("existing path after refused backup: %v; want it left in place", err)
			}
			if after.Size() != before.Size() || after.Mode() != before.Mode() {
				t.Errorf("existing path: got size %d mode %v; want size %d mode %v (untouched)",
					after.Size(), after.Mode(), before.Size(), before.Mode())
			}
		})
	}
}

func TestBackupIntoMissingDirectoryFails(t *testing.T) {
	d := openTestDB(t)
	dest := filepath.Join(t.TempDir(), "no", "such", "dir", "b.db")
	if err := d.Backup(context.Background(), dest); err == nil {
		t.Fatal("Backup into a missing directory: got nil; want an error")
	}
}

func TestCheckIntegrity(t *testing.T) {
	ctx := context.Background()
	t.Run("missing file fails", func(t *testing.T) {
		if err := db.CheckIntegrity(ctx, filepath.Join(t.TempDir(), "missing.db")); err == nil {
			t.Error("CheckIntegrity(missing): got nil; want an error")
		}
	})
	t.Run("corrupt file fails", func(t *testing.T) {
		d := openTestDB(t)
		for i := range 50 {
			signIn(t, d, fmt.Sprintf("user-%02d", i), fmt.Sprintf("user-%02d@example.test", i))
		}
		checkpoint(t, d)
		path := d.Path()
		d.Close()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 3*4096 {
			t.Fatalf("database is %d bytes; want several pages to corrupt one", len(b))
		}
		// Scribble over the second page (not the header, so it still opens).
		for i := 4096; i < 2*4096; i++ {
			b[i] = 0xA5
		}
		corrupt := filepath.Join(t.TempDir(), "corrupt.db")
		if err := os.WriteFile(corrupt, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := db.CheckIntegrity(ctx, corrupt); err == nil {
			t.Error("CheckIntegrity(corrupt): got nil; want an error")
		}
	})
}
