package seal

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzOpen feeds Open arbitrary sealed strings and AADs. Open must never
// panic, must fail only with ErrDecrypt, and anything it does open must
// re-seal and open to the same bytes under the primary key. Plain
// `go test` runs only the seeds; `go test -fuzz=FuzzOpen` explores.
func FuzzOpen(f *testing.F) {
	older, primary := testKey(f, 1), testKey(f, 2)
	ring := NewKeyring(primary, older)
	olderRing := NewKeyring(older)
	aad := testAAD

	seed := func(sealed string, a AAD) { f.Add(sealed, a.Table, a.Column, a.RowID) }
	movedRow := AAD{Table: aad.Table, Column: aad.Column, RowID: aad.RowID + 1}
	movedTable := AAD{Table: "users", Column: aad.Column, RowID: aad.RowID}
	// Valid values sealed by the primary and by an older key, each with
	// the mutations the unit tests check: moved, truncated, re-versioned
	// and tampered.
	for _, plaintext := range []string{"", "x", "hunter2", strings.Repeat("z", 100), "\x00\xff"} {
		for _, r := range []*Keyring{ring, olderRing} {
			s := mustSeal(f, r, plaintext, aad)
			flipped := []byte(s)
			flipped[len(flipped)/2] ^= 1
			seed(s, aad)
			seed(s, movedRow)
			seed(s, movedTable)
			seed(s[:len(s)-1], aad)
			seed("v2"+s[2:], aad)
			seed(string(flipped), aad)
		}
	}
	for _, s := range []string{"", "garbage", "v1..", "v1." + primary.ID + ".", "v1." + primary.ID + ".AAAA"} {
		seed(s, aad)
	}

	f.Fuzz(func(t *testing.T, sealed, table, column string, rowID int64) {
		a := AAD{Table: table, Column: column, RowID: rowID}
		plaintext, err := ring.Open(sealed, a)
		needsReseal := ring.NeedsReseal(sealed)
		id, idErr := ring.KeyIDOf(sealed)
		if err != nil {
			if !errors.Is(err, ErrDecrypt) {
				t.Fatalf("Open err = %v; want one wrapping ErrDecrypt", err)
			}
			return
		}
		if idErr != nil {
			t.Fatalf("Open succeeded but KeyIDOf failed: %v", idErr)
		}
		if _, ok := ring.lookup(id); !ok {
			t.Fatalf("Open succeeded with key %s, which is not in the ring", id)
		}
		if needsReseal != (id != primary.ID) {
			t.Fatalf("NeedsReseal = %v for key %s; want %v", needsReseal, id, id != primary.ID)
		}
		again, err := ring.Open(sealed, a)
		if err != nil || !bytes.Equal(again, plaintext) {
			t.Fatalf("second Open = %q, %v; want %q, nil", again, err, plaintext)
		}
		resealed, err := ring.Seal(plaintext, a, nil)
		if err != nil {
			t.Fatalf("Seal of an opened value: %v", err)
		}
		got, err := ring.Open(resealed, a)
		if err != nil || !bytes.Equal(got, plaintext) {
			t.Fatalf("Open(Seal(p)) = %q, %v; want %q, nil", got, err, plaintext)
		}
		if ring.NeedsReseal(resealed) {
			t.Fatalf("NeedsReseal(resealed) = true; want false")
		}
	})
}
