package seal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// keyFileHeader opens every key file, so whoever finds one knows what it
// is and why it must not be deleted.
const keyFileHeader = `# Patchbay seal keys: they encrypt the secrets stored in the database, and losing this file loses every sealed secret.
# Keep it private (mode 0600) and backed up apart from the database.
# One key per line: "<key id> <base64 secret>". The first key is primary and
# seals new values; the others only open values sealed before a rotation.
`

// ReadKeyFile reads a key file and returns its keys as a keyring, the
// first key primary. A missing file gives an error wrapping
// fs.ErrNotExist, so callers can tell "first start" from "broken file".
// Blank lines and lines starting with # are ignored; a line whose id does
// not match its secret is an error, which catches hand-editing mistakes.
func ReadKeyFile(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("seal: read key file: %w", err)
	}
	keys, err := parseKeyFile(data)
	if err != nil {
		return nil, fmt.Errorf("seal: key file %s: %w", path, err)
	}
	return NewKeyring(keys[0], keys[1:]...), nil
}

// parseKeyFile parses key file contents. Errors name the line number but
// never quote the line, which holds a secret.
func parseKeyFile(data []byte) ([]Key, error) {
	var keys []Key
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want \"<key id> <base64 secret>\"", n)
		}
		k, err := decodeKey(fields[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if fields[0] != k.ID {
			return nil, fmt.Errorf("line %d: key id does not match its secret (the secret's id is %s)", n, k.ID)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("line %d: key %s appears twice", n, k.ID)
		}
		seen[k.ID] = true
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, errors.New("no keys")
	}
	return keys, nil
}

// WriteKeyFile writes keys to path, the first key primary, replacing any
// file there. It writes a temporary file in the same directory with mode
// 0600, syncs it, renames it over path and syncs the directory, so a crash
// leaves either the old file or the new one, never a torn one. It refuses
// to write no keys, a key whose ID does not match its secret (an empty ID
// is filled in) or the same key twice.
func WriteKeyFile(path string, keys []Key) error {
	data, err := formatKeyFile(keys)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("seal: write key file: %w", err)
	}
	// Until the rename succeeds, clean up the temporary file on failure.
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp already uses 0600 less the umask; Chmod makes it exact.
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("seal: write key file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("seal: write key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("seal: write key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("seal: write key file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("seal: write key file: %w", err)
	}
	renamed = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("seal: write key file: sync directory: %w", err)
	}
	return nil
}

// formatKeyFile renders keys in key file format after checking them.
func formatKeyFile(keys []Key) ([]byte, error) {
	if len(keys) == 0 {
		return nil, errors.New("seal: refusing to write a key file with no keys")
	}
	var b strings.Builder
	b.WriteString(keyFileHeader)
	seen := map[string]bool{}
	for i, k := range keys {
		id := deriveKeyID(k.Secret)
		if k.ID != "" && k.ID != id {
			return nil, fmt.Errorf("seal: key %d: id does not match its secret (the secret's id is %s)", i, id)
		}
		if seen[id] {
			return nil, fmt.Errorf("seal: key %d: key %s appears twice", i, id)
		}
		seen[id] = true
		b.WriteString(id + " " + k.Base64() + "\n")
	}
	return []byte(b.String()), nil
}

// syncDir makes a rename in dir durable: the new directory entry is only
// on disk once the directory itself is synced.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
