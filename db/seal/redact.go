package seal

import (
	"fmt"
	"log/slog"
)

// Key and Keyring hold secrets in plain fields, and fmt and slog print
// fields by reflection: one careless %v or %d in a log line would leak a
// key. These methods make every formatting path print only key ids.

// String returns the key's id only, never its secret.
func (k Key) String() string { return "seal.Key(" + k.ID + ")" }

// Format prints String for every verb, so %d, %x or %#v cannot dump the
// secret bytes either.
func (k Key) Format(f fmt.State, _ rune) { fmt.Fprint(f, k.String()) }

// LogValue logs the key as its id only.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// String describes the keyring by its key ids, never its secrets.
func (r *Keyring) String() string {
	if r == nil || len(r.entries) == 0 {
		return "seal.Keyring(empty)"
	}
	s := "seal.Keyring(primary " + r.entries[0].key.ID
	for _, e := range r.entries[1:] {
		s += ", " + e.key.ID
	}
	return s + ")"
}

// Format prints String for every verb, for the same reason as Key.Format.
func (r *Keyring) Format(f fmt.State, _ rune) { fmt.Fprint(f, r.String()) }

// LogValue logs the keyring as its key ids only.
func (r *Keyring) LogValue() slog.Value { return slog.StringValue(r.String()) }
