package seal

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// testKey returns a deterministic key whose secret is 32 copies of fill,
// so tests are repeatable and keys made from different fills differ.
func testKey(t testing.TB, fill byte) Key {
	t.Helper()
	k, err := GenerateKey(bytes.NewReader(bytes.Repeat([]byte{fill}, keySize)))
	if err != nil {
		t.Fatalf("GenerateKey: %v", err)
	}
	return k
}

// testAAD is where most test values pretend to live.
var testAAD = AAD{Table: "integrations", Column: "api_token", RowID: 42}

// mustSeal seals plaintext for aad or fails the test.
func mustSeal(t testing.TB, r *Keyring, plaintext string, aad AAD) string {
	t.Helper()
	s, err := r.Seal([]byte(plaintext), aad, nil)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return s
}

// checkDecryptErr fails unless err wraps ErrDecrypt and its message does
// not echo input (checked only when input is long enough to be telling).
func checkDecryptErr(t testing.TB, err error, input string) {
	t.Helper()
	if !errors.Is(err, ErrDecrypt) {
		t.Fatalf("Open error = %v; want one wrapping ErrDecrypt", err)
	}
	if len(input) >= 8 && strings.Contains(err.Error(), input) {
		t.Fatalf("Open error %q echoes its input", err)
	}
}

// failingReader fails every read, standing in for a broken random source.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy exhausted") }
