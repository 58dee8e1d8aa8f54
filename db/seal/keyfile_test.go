package seal

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestKeyFileRoundTrip(t *testing.T) {
	keys := []Key{testKey(t, 3), testKey(t, 1), testKey(t, 2)}
	path := filepath.Join(t.TempDir(), "seal.keys")
	if err := WriteKeyFile(path, keys); err != nil {
		t.Fatalf("WriteKeyFile: %v", err)
	}

	t.Run("reads back the same keys, first one primary", func(t *testing.T) {
		r, err := ReadKeyFile(path)
		if err != nil {
			t.Fatalf("ReadKeyFile: %v", err)
		}
		got := r.Keys()
		if len(got) != len(keys) {
			t.Fatalf("read %d keys; want %d", len(got), len(keys))
		}
		for i := range keys {
			if got[i].ID != keys[i].ID || got[i].Secret != keys[i].Secret {
				t.Fatalf("key %d = %v; want %v", i, got[i], keys[i])
			}
		}
		if r.Primary().ID != keys[0].ID {
			t.Fatalf("Primary() = %v; want %v", r.Primary(), keys[0])
		}
	})
	t.Run("opens what the written keyring sealed", func(t *testing.T) {
		sealed := mustSeal(t, NewKeyring(keys[0], keys[1:]...), "hunter2", testAAD)
		r, err := ReadKeyFile(path)
		if err != nil {
			t.Fatalf("ReadKeyFile: %v", err)
		}
		got, err := r.Open(sealed, testAAD)
		if err != nil || string(got) != "hunter2" {
			t.Fatalf("Open = %q, %v; want %q, nil", got, err, "hunter2")
		}
	})
	t.Run("mode is 0600", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("Windows has no Unix permission bits")
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Fatalf("mode = %v; want %v", got, fs.FileMode(0o600))
		}
	})
	t.Run("starts with a comment warning that losing it loses every secret", func(t *testing.T) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("ReadFile: %v", err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if !strings.HasPrefix(first, "# ") || !strings.Contains(first, "losing this file loses every sealed secret") {
			t.Fatalf("first line = %q; want a comment explaining the file and the cost of losing it", first)
		}
	})
	t.Run("leaves no temporary file behind", func(t *testing.T) {
		entries, err := os.ReadDir(filepath.Dir(path))
		if err != nil {
			t.Fatalf("ReadDir: %v", err)
		}
		if len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("directory holds %v; want only %s", names, filepath.Base(path))
		}
	})
}

func TestWriteKeyFileReplacesExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seal.keys")
	if err := os.WriteFile(path, []byte("old contents"), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	k := testKey(t, 1)
	if err := WriteKeyFile(path, []Key{k}); err != nil {
		t.Fatalf("WriteKeyFile: %v", err)
	}
	t.Run("new keys replace the old contents", func(t *testing.T) {
		r, err := ReadKeyFile(path)
		if err != nil {
			t.Fatalf("ReadKeyFile: %v", err)
		}
		if r.Primary().ID != k.ID {
			t.Fatalf("Primary() = %v; want %v", r.Primary(), k)
		}
	})
	t.Run("a looser mode is tightened to 0600", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("Windows has no Unix permission bits")
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Fatalf("mode = %v; want %v", got, fs.FileMode(0o600))
		}
	})
}

func TestWriteKeyFileRefuses(t *testing.T) {
	a, b := testKey(t, 1), testKey(t, 2)
	tests := []struct {
		name string
		keys []Key
	}{
		{"zero keys", nil},
		{"a key whose id does not match its secret", []Key{{ID: b.ID, Secret: a.Secret}}},
		{"the same key twice", []Key{a, b, a}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "seal.keys")
			if err := WriteKeyFile(path, tt.keys); err == nil {
				t.Fatalf("WriteKeyFile err = nil; want an error")
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Stat after refusal: err = %v; want fs.ErrNotExist", err)
			}
		})
	}
	t.Run("an empty id is derived", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "seal.keys")
		if err := WriteKeyFile(path, []Key{{Secret: a.Secret}}); err != nil {
			t.Fatalf("WriteKeyFile: %v", err)
		}
		r, err := ReadKeyFile(path)
		if err != nil {
			t.Fatalf("ReadKeyFile: %v", err)
		}
		if r.Primary().ID != a.ID {
			t.Fatalf("Primary().ID = %q; want %q", r.Primary().ID, a.ID)
		}
	})
	t.Run("a missing directory is an error", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "no-such-dir", "seal.keys")
		if err := WriteKeyFile(path, []Key{a}); err == nil {
			t.Fatalf("WriteKeyFile err = nil; want an error")
		}
	})
}

func TestReadKeyFileMissing(t *testing.T) {
	t.Run("missing file wraps fs.ErrNotExist", func(t *testing.T) {
		_, err := ReadKeyFile(filepath.Join(t.TempDir(), "absent.keys"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ReadKeyFile err = %v; want one wrapping fs.ErrNotExist", err)
		}
	})
}

func TestReadKeyFile(t *testing.T) {
	a, b := testKey(t, 1), testKey(t, 2)
	line := func(k Key) string { return k.ID + " " + k.Base64() }

	valid := []struct {
		name    string
		content string
		want    []Key
	}{
		{"comments and blank lines are ignored", "# comment\n\n" + line(a) + "\n   \n# another\n" + line(b) + "\n", []Key{a, b}},
		{"CRLF line endings", line(a) + "\r\n" + line(b) + "\r\n", []Key{a, b}},
		{"no trailing newline", line(b), []Key{b}},
		{"indented lines and tab separators", "  " + a.ID + "\t" + a.Base64() + "  \n", []Key{a}},
		{"URL base64 secret", a.ID + " " + base64.RawURLEncoding.EncodeToString(a.Secret[:]), []Key{a}},
	}
	for _, tt := range valid {
		t.Run("accepts "+tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "seal.keys")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			r, err := ReadKeyFile(path)
			if err != nil {
				t.Fatalf("ReadKeyFile: %v", err)
			}
			got := r.Keys()
			if len(got) != len(tt.want) {
				t.Fatalf("read %d keys; want %d", len(got), len(tt.want))
			}
			for i := range tt.want {
				if got[i].ID != tt.want[i].ID || got[i].Secret != tt.want[i].Secret {
					t.Fatalf("key %d = %v; want %v", i, got[i], tt.want[i])
				}
			}
		})
	}

	short := base64.StdEncoding.EncodeToString(a.Secret[:16])
	long := base64.StdEncoding.EncodeToString(append(a.Secret[:], 0))
	invalid := []struct {
		name    string
		content string
	}{
		{"an id that does not match its secret", b.ID + " " + a.Base64()},
		{"a secret of 16 bytes", a.ID + " " + short},
		{"a secret of 33 bytes", a.ID + " " + long},
		{"a secret that is not base64", a.ID + " " + "not*base64*at*all"},
		{"a line with only a secret", a.Base64()},
		{"a line with three fields", line(a) + " extra"},
		{"the same key twice", line(a) + "\n" + line(b) + "\n" + line(a)},
		{"an empty file", ""},
		{"only comments", "# nothing here\n\n"},
	}
	for _, tt := range invalid {
		t.Run("rejects "+tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "seal.keys")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			r, err := ReadKeyFile(path)
			if err == nil {
				t.Fatalf("ReadKeyFile = %v; want an error", r)
			}
			if errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("ReadKeyFile err = %v; must not look like a missing file", err)
			}
			for _, secret := range []string{a.Base64(), b.Base64(), short, long} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q quotes a secret", err)
				}
			}
		})
	}
}
