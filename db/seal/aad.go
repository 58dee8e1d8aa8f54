package seal

import "encoding/binary"

// AAD binds a ciphertext to where it is stored. A value sealed for one
// table, column and row does not open for any other.
type AAD struct {
	Table, Column string
	RowID         int64
}

// additionalData encodes everything a sealed value is bound to: format
// version, key id, table, column and row id. Each string is prefixed with
// its length and the row id is fixed-width, so no two different inputs
// encode alike (table "ab" + column "c" differs from "a" + "bc").
func additionalData(version, keyID string, aad AAD) []byte {
	n := 4*8 + len(version) + len(keyID) + len(aad.Table) + len(aad.Column) + 8
	b := make([]byte, 0, n)
	for _, s := range []string{version, keyID, aad.Table, aad.Column} {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	return binary.BigEndian.AppendUint64(b, uint64(aad.RowID))
}
