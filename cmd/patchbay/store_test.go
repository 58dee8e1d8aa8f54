package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"patchbay/db"
	"patchbay/db/seal"
)

// canarySecret is a client secret that must never show up in the clear.
const canarySecret = "canary-client-secret-5f1d0c2e"

// sealCanary stores canarySecret as a sealed OAuth client secret in the
// database of dataDir, under the key in the key file, as Patchbay would.
func sealCanary(t *testing.T, dataDir string) {
	t.Helper()
	ctx := context.Background()
	ring, err := seal.ReadKeyFile(filepath.Join(dataDir, "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(ctx, filepath.Join(dataDir, "patchbay.db"), ring)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.SaveOAuthProvider(ctx, 0, db.OAuthProvider{
		Name: "canary", AuthURL: "https://auth.example.test/authorize", TokenURL: "https://auth.example.test/token", ClientID: "patchbay",
	}, canarySecret)
	if err != nil {
		t.Fatalf("sealing the canary: %v", err)
	}
}

// openCanary opens the canary with the keys of ring.
func openCanary(t *testing.T, dataDir string, ring *seal.Keyring) (string, error) {
	t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(dataDir, "patchbay.db"), ring)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return d.OAuthProviderSecret(ctx, "canary")
}

func TestDataDirDatabaseAndKeyAreOwnerOnly(t *testing.T) {
	pb := startPatchbay(t, nil)
	for _, tc := range []struct {
		path     string
		want     fs.FileMode
		optional bool // SQLite's side files come and go
	}{
		{path: pb.DataDir, want: 0o700 | fs.ModeDir},
		{path: pb.dbPath(), want: 0o600},
		{path: filepath.Join(pb.DataDir, "secret.key"), want: 0o600},
		{path: pb.dbPath() + "-wal", want: 0o600, optional: true},
		{path: pb.dbPath() + "-shm", want: 0o600, optional: true},
	} {
		fi, err := os.Stat(tc.path)
		if tc.optional && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Errorf("stat %s: %v", tc.path, err)
			continue
		}
		if got := fi.Mode() & (fs.ModePerm | fs.ModeDir); got != tc.want {
			t.Errorf("%s: got mode %v; want %v", filepath.Base(tc.path), got, tc.want)
		}
	}
}

// TestBackupWritesAnIntactCopyAndRefusesToOverwrite: `patchbay backup`
// writes a copy that passes integrity_check and holds the data, and never
// replaces an existing file.
func TestBackupWritesAnIntactCopyAndRefusesToOverwrite(t *testing.T) {
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "data")
	mustRunPatchbay(t, nil, "user", "add", "--data-dir", dataDir, "--email", "kept@example.test", "--role", "support")
	backup := filepath.Join(t.TempDir(), "patchbay-backup.db")

	out := mustRunPatchbay(t, nil, "backup", "--data-dir", dataDir, "--to", backup)
	if !strings.Contains(out, backup) || !strings.Contains(out, "integrity check ok") {
		t.Errorf("backup printed %q; want the file name and \"integrity check ok\"", out)
	}
	if err := db.CheckIntegrity(ctx, backup); err != nil {
		t.Fatalf("integrity check of the backup: %v", err)
	}
	if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup file: mode %v, err %v; want 0600", fi.Mode().Perm(), err)
	}
	restored, err := db.Open(ctx, backup, nil)
	if err != nil {
		t.Fatalf("opening the backup: %v", err)
	}
	u, err := restored.UserByEmail(ctx, "kept@example.test")
	restored.Close()
	if err != nil || u.Role != "support" {
		t.Errorf("user in the backup: got role %q, err %v; want support", u.Role, err)
	}

	t.Run("an existing file is not overwritten", func(t *testing.T) {
		before, err := os.ReadFile(backup)
		if err != nil {
			t.Fatal(err)
		}
		_, err = runPatchbay(t, nil, "backup", "--data-dir", dataDir, "--to", backup)
		if err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("second backup to %s: got %v; want an error saying it already exists", backup, err)
		}
		after, _ := os.ReadFile(backup)
		if !bytes.Equal(before, after) {
			t.Errorf("the existing file changed")
		}
	})
}

// TestRotateKeyResealsEverySecretUnderANewKey: after rotate-key the key file
// holds exactly one, new key; the secret opens with it; the old key alone
// no longer opens it; and serve starts with the new key file only.
func TestRotateKeyResealsEverySecretUnderANewKey(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	keyFile := filepath.Join(dataDir, "secret.key")
	mustRunPatchbay(t, nil, "migrate", "--data-dir", dataDir) // creates the key
	sealCanary(t, dataDir)
	oldRing, err := seal.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	oldID := oldRing.Primary().ID

	out := mustRunPatchbay(t, nil, "rotate-key", "--data-dir", dataDir)

	newRing, err := seal.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatalf("reading the key file after rotation: %v", err)
	}
	keys := newRing.Keys()
	if len(keys) != 1 {
		t.Fatalf("key file holds %d keys after rotation; want exactly 1", len(keys))
	}
	newID := keys[0].ID
	if newID == oldID {
		t.Fatalf("key id after rotation is %s, the old one; want a new key", newID)
	}
	if want := "re-sealed 1 secrets under key " + newID; !strings.Contains(out, want) {
		t.Errorf("rotate-key printed %q; want it to contain %q", out, want)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file after rotation: mode %v, err %v; want 0600", fi.Mode().Perm(), err)
	}
	if got, err := openCanary(t, dataDir, newRing); err != nil || got != canarySecret {
		t.Errorf("opening the secret with the new key: got %q, %v; want the canary", got, err)
	}
	if got, err := openCanary(t, dataDir, seal.NewKeyring(oldRing.Primary())); err == nil {
		t.Errorf("opening the secret with the old key alone: got %q, nil; want an error", got)
	}

	t.Run("the database file never holds the secret in the clear", func(t *testing.T) {
		for _, f := range []string{"patchbay.db", "patchbay.db-wal"} {
			b, err := os.ReadFile(filepath.Join(dataDir, f))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(canarySecret)) {
				t.Errorf("%s contains the canary secret", f)
			}
		}
	})
	t.Run("serve starts with the new key", func(t *testing.T) {
		pb := startPatchbay(t, nil, "--data-dir", dataDir)
		if resp, _ := get(t, pb.URL+"/readyz"); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /readyz: got %d; want 200", resp.StatusCode)
		}
		pb.stop(t)
	})
	t.Run("serve refuses the old key", func(t *testing.T) {
		if err := seal.WriteKeyFile(keyFile, oldRing.Keys()); err != nil {
			t.Fatal(err)
		}
		_, err := tryStartPatchbay(t, nil, "--data-dir", dataDir)
		if err == nil || !strings.Contains(err.Error(), "does not match") || !strings.Contains(err.Error(), newID) {
			t.Errorf("serve with the old key file: got %v; want an error that the key does not match %s", err, newID)
		}
	})
}

// TestServeWithoutItsKeyStopsWithAClearMessage: once secrets are sealed, a
// missing key file stops start-up, naming the file and the key, instead of
// minting a new key that would orphan every secret.
func TestServeWithoutItsKeyStopsWithAClearMessage(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	keyFile := filepath.Join(dataDir, "secret.key")
	mustRunPatchbay(t, nil, "migrate", "--data-dir", dataDir)
	sealCanary(t, dataDir)
	ring, err := seal.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}

	_, err = tryStartPatchbay(t, nil, "--data-dir", dataDir)
	if err == nil {
		t.Fatal("serve started without its key; want it to refuse")
	}
	for _, w := range []string{"secret key file", keyFile, "missing", ring.Primary().ID} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q does not contain %q", err, w)
		}
	}
	var ue usageError
	if errors.As(err, &ue) {
		t.Errorf("got a usageError (exit 2); want an ordinary error (exit 1): the invocation was fine")
	}
	if _, err := os.Stat(keyFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("key file after the refusal: got stat error %v; want none created", err)
	}

	t.Run("the key in PATCHBAY_SECRET_KEY works instead", func(t *testing.T) {
		pb := startPatchbay(t, map[string]string{"PATCHBAY_SECRET_KEY": ring.Primary().Base64()}, "--data-dir", dataDir)
		if resp, _ := get(t, pb.URL+"/readyz"); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /readyz: got %d; want 200", resp.StatusCode)
		}
		pb.stop(t)
		if _, err := os.Stat(keyFile); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("key file with PATCHBAY_SECRET_KEY set: got stat error %v; want none created", err)
		}
		if strings.Contains(pb.logs.String(), ring.Primary().Base64()) {
			t.Errorf("the logs contain the secret key")
		}
	})
}

func TestLostKeyWithNothingSealedStartsWithANewKey(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	keyFile := filepath.Join(dataDir, "secret.key")
	mustRunPatchbay(t, nil, "migrate", "--data-dir", dataDir)
	old, err := seal.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	// No secret was ever sealed, so a new key orphans nothing.
	mustRunPatchbay(t, nil, "migrate", "--data-dir", dataDir)
	fresh, err := seal.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatalf("key file after restart: %v", err)
	}
	if fresh.Primary().ID == old.Primary().ID {
		t.Errorf("new key id: got %s again; want a new key", fresh.Primary().ID)
	}
	// And the database now remembers the new key: losing it after a secret
	// is sealed must stop start-up.
	sealCanary(t, dataDir)
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	if _, err := runPatchbay(t, nil, "migrate", "--data-dir", dataDir); err == nil || !strings.Contains(err.Error(), fresh.Primary().ID) {
		t.Errorf("start without the new key: got %v; want a refusal naming key %s", err, fresh.Primary().ID)
	}
}
