package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"patchbay"
	"patchbay/db/seal"
)

// SealedColumn names a column that holds sealed secrets. Every such column
// ends in "_sealed"; a test checks the schema against this list.
type SealedColumn struct {
	Table, Column string
}

// SealedColumns is the one registry of sealed columns: key rotation walks
// it, and nothing else may hold a secret.
var SealedColumns = []SealedColumn{
	{Table: "oauth_providers", Column: "client_secret_sealed"},
	{Table: "mcp_global_servers", Column: "secrets_sealed"},
	{Table: "mcp_user_servers", Column: "credential_sealed"},
}

func (c SealedColumn) aad(rowID int64) seal.AAD {
	return seal.AAD{Table: c.Table, Column: c.Column, RowID: rowID}
}

// errNoKeys is returned when a sealed column is touched without a keyring.
var errNoKeys = errors.New("db: no secret key loaded")

// sealValue seals plaintext for one cell. The empty secret is stored as ""
// so "not set" stays distinguishable without opening anything.
func (d *DB) sealValue(c SealedColumn, rowID int64, plaintext string) (string, error) {
	if plaintext == "" {
		return "", nil
	}
	if d.keys == nil {
		return "", errNoKeys
	}
	s, err := d.keys.Seal([]byte(plaintext), c.aad(rowID), nil)
	if err != nil {
		return "", fmt.Errorf("db: seal %s.%s: %w", c.Table, c.Column, err)
	}
	return s, nil
}

// openValue opens one cell. A value that will not open is an internal
// error that names the cell but never its contents.
func (d *DB) openValue(c SealedColumn, rowID int64, sealed string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	if d.keys == nil {
		return "", errNoKeys
	}
	b, err := d.keys.Open(sealed, c.aad(rowID))
	if err != nil {
		return "", &patchbay.Error{Code: patchbay.EINTERNAL, Message: "A stored secret could not be decrypted.",
			Err: fmt.Errorf("db: open %s.%s row %d: %w", c.Table, c.Column, rowID, err)}
	}
	return string(b), nil
}

// ResealAll re-seals every sealed cell with the keyring's primary key, in
// one transaction: either every secret moves to the new key or none does.
// It returns how many cells were re-sealed.
func (d *DB) ResealAll(ctx context.Context) (int, error) {
	if d.keys == nil {
		return 0, errNoKeys
	}
	total := 0
	err := d.writeTx(ctx, func(tx *sqlx.Tx) error {
		for _, c := range SealedColumns {
			n, err := d.resealColumn(ctx, tx, c)
			if err != nil {
				return err
			}
			total += n
		}
		return audit(ctx, tx, d.now(), 0, "keys.rotate", d.keys.Primary().ID, fmt.Sprintf("resealed=%d", total))
	})
	return total, err
}

func (d *DB) resealColumn(ctx context.Context, tx *sqlx.Tx, c SealedColumn) (int, error) {
	var cells []struct {
		ID     int64  `db:"id"`
		Sealed string `db:"v"`
	}
	// Table and column names come from the registry above, never from input.
	q := fmt.Sprintf(`SELECT id, %s AS v FROM %s WHERE %s <> ''`, c.Column, c.Table, c.Column)
	if err := tx.SelectContext(ctx, &cells, q); err != nil {
		return 0, fmt.Errorf("db: reseal %s.%s: %w", c.Table, c.Column, err)
	}
	for _, cell := range cells {
		plain, err := d.openValue(c, cell.ID, cell.Sealed)
		if err != nil {
			return 0, err
		}
		resealed, err := d.sealValue(c, cell.ID, plain)
		if err != nil {
			return 0, err
		}
		u := fmt.Sprintf(`UPDATE %s SET %s = ? WHERE id = ?`, c.Table, c.Column)
		if _, err := tx.ExecContext(ctx, u, resealed, cell.ID); err != nil {
			return 0, fmt.Errorf("db: reseal %s.%s: %w", c.Table, c.Column, err)
		}
	}
	return len(cells), nil
}

// SealedKeyIDs returns the set of key ids that sealed cells currently use,
// so an operator can tell when an old key is no longer needed.
func (d *DB) SealedKeyIDs(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for _, c := range SealedColumns {
		var vals []string
		q := fmt.Sprintf(`SELECT %s FROM %s WHERE %s <> ''`, c.Column, c.Table, c.Column)
		if err := d.read.SelectContext(ctx, &vals, q); err != nil {
			return nil, fmt.Errorf("db: key ids: %w", err)
		}
		for _, v := range vals {
			id, err := d.keys.KeyIDOf(v)
			if err != nil {
				id = "unreadable"
			}
			out[id]++
		}
	}
	return out, nil
}
