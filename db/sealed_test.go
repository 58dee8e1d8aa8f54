package db_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"patchbay"
	"patchbay/db"
	"patchbay/db/seal"
)

// canary returns a unique, recognisable secret for label.
func canary(t *testing.T, label string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "canary-" + label + "-" + hex.EncodeToString(b)
}

// testProvider is a minimal valid OAuth provider named name.
func testProvider(name string) db.OAuthProvider {
	return db.OAuthProvider{Name: name, DisplayName: "Provider " + name,
		AuthURL: "https://" + name + ".example.test/authorize", TokenURL: "https://" + name + ".example.test/token",
		ClientID: "client-id-" + name}
}

func TestOAuthProviderSecretIsSealed(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	secret := canary(t, "client-secret")
	saved, err := d.SaveOAuthProvider(ctx, 0, testProvider("github"), secret)
	if err != nil {
		t.Fatalf("SaveOAuthProvider: %v", err)
	}

	t.Run("the stored cell is versioned ciphertext under the primary key", func(t *testing.T) {
		var cell string
		if err := d.Readers().GetContext(ctx, &cell, `SELECT client_secret_sealed FROM oauth_providers WHERE id = ?`, saved.ID); err != nil {
			t.Fatal(err)
		}
		if want := "v1." + d.Keys().Primary().ID + "."; !strings.HasPrefix(cell, want) {
			t.Errorf("sealed cell: got %.20q...; want prefix %q", cell, want)
		}
	})

	t.Run("absent from the database, WAL and shared-memory files", func(t *testing.T) {
		checkpoint(t, d)
		if !fileContains(t, d.Path(), "client-id-github") {
			t.Fatal("control: client id not found in the database file; the search is broken")
		}
		assertNotInFiles(t, secret, dbFiles(d.Path())...)
	})

	t.Run("absent from a backup", func(t *testing.T) {
		backup := filepath.Join(t.TempDir(), "backup.db")
		if err := d.Backup(ctx, backup); err != nil {
			t.Fatalf("Backup: %v", err)
		}
		if !fileContains(t, backup, "client-id-github") {
			t.Fatal("control: client id not found in the backup; the search is broken")
		}
		assertNotInFiles(t, secret, dbFiles(backup)...)
	})

	t.Run("OAuthProviderSecret opens it", func(t *testing.T) {
		got, err := d.OAuthProviderSecret(ctx, "github")
		if err != nil || got != secret {
			t.Errorf("OAuthProviderSecret: got %q, %v; want the canary, nil", got, err)
		}
	})

	t.Run("OAuthProviderByName never exposes it", func(t *testing.T) {
		p, err := d.OAuthProviderByName(ctx, "github")
		if err != nil {
			t.Fatal(err)
		}
		if !p.HasSecret {
			t.Error("HasSecret: got false; want true")
		}
		if s := fmt.Sprintf("%+v %#v", p, p); strings.Contains(s, secret) || strings.Contains(s, "v1.") {
			t.Error("provider formats with its secret or its sealed value")
		}
		if p.ClientID != "client-id-github" || p.AuthURL == "" || p.ExtraParams != "{}" {
			t.Errorf("provider: got %+v; want the saved fields", p)
		}
	})

	t.Run("saving again without a secret keeps it", func(t *testing.T) {
		edit := testProvider("github")
		edit.DisplayName = "GitHub"
		p, err := d.SaveOAuthProvider(ctx, 0, edit, "")
		if err != nil {
			t.Fatal(err)
		}
		if p.ID != saved.ID || !p.HasSecret || p.DisplayName != "GitHub" {
			t.Errorf("edited provider: got %+v; want same id, secret kept, new display name", p)
		}
		if got, err := d.OAuthProviderSecret(ctx, "github"); err != nil || got != secret {
			t.Errorf("OAuthProviderSecret after edit: got %q, %v; want the canary", got, err)
		}
	})

	t.Run("a provider without a secret", func(t *testing.T) {
		p, err := d.SaveOAuthProvider(ctx, 0, testProvider("public"), "")
		if err != nil {
			t.Fatal(err)
		}
		if p.HasSecret {
			t.Error("HasSecret: got true; want false")
		}
		if got, err := d.OAuthProviderSecret(ctx, "public"); err != nil || got != "" {
			t.Errorf("OAuthProviderSecret: got %q, %v; want \"\", nil", got, err)
		}
	})

	t.Run("unknown provider is not found", func(t *testing.T) {
		_, err := d.OAuthProviderByName(ctx, "nope")
		wantCode(t, "OAuthProviderByName", err, patchbay.ENOTFOUND)
		_, err = d.OAuthProviderSecret(ctx, "nope")
		wantCode(t, "OAuthProviderSecret", err, patchbay.ENOTFOUND)
	})

	t.Run("incomplete provider is invalid", func(t *testing.T) {
		for _, change := range []func(*db.OAuthProvider){
			func(p *db.OAuthProvider) { p.Name = "  " },
			func(p *db.OAuthProvider) { p.AuthURL = "" },
			func(p *db.OAuthProvider) { p.TokenURL = "" },
			func(p *db.OAuthProvider) { p.ClientID = "" },
		} {
			p := testProvider("broken")
			change(&p)
			_, err := d.SaveOAuthProvider(ctx, 0, p, "s")
			wantCode(t, "SaveOAuthProvider(incomplete)", err, patchbay.EINVALID)
		}
	})
}

func TestSealedSecretBoundToItsRow(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	secret := canary(t, "alpha-secret")
	if _, err := d.SaveOAuthProvider(ctx, 0, testProvider("alpha"), secret); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SaveOAuthProvider(ctx, 0, testProvider("beta"), canary(t, "beta-secret")); err != nil {
		t.Fatal(err)
	}
	// Someone with write access to the file copies alpha's cell onto beta.
	if _, err := d.Writer().ExecContext(ctx, `UPDATE oauth_providers SET client_secret_sealed =
		(SELECT client_secret_sealed FROM oauth_providers WHERE name = 'alpha') WHERE name = 'beta'`); err != nil {
		t.Fatal(err)
	}
	got, err := d.OAuthProviderSecret(ctx, "beta")
	if err == nil {
		t.Fatalf("OAuthProviderSecret(beta) with alpha's cell: got %q, nil; want an error", got)
	}
	wantCode(t, "OAuthProviderSecret(moved cell)", err, patchbay.EINTERNAL)
	if !errors.Is(err, seal.ErrDecrypt) {
		t.Errorf("error: got %v; want one wrapping seal.ErrDecrypt", err)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(patchbay.ErrorMessage(err), secret) || got != "" {
		t.Error("the failure carries the secret; want it nowhere")
	}
	if s, err := d.OAuthProviderSecret(ctx, "alpha"); err != nil || s != secret {
		t.Errorf("alpha still opens: got %q, %v; want the canary", s, err)
	}
}

func TestSealedColumnsMatchSchema(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	found := map[db.SealedColumn]bool{}
	for _, table := range tableNames(t, d) {
		var cols []string
		if err := d.Readers().SelectContext(ctx, &cols, `SELECT name FROM pragma_table_info(?)`, table); err != nil {
			t.Fatalf("table_info(%s): %v", table, err)
		}
		if len(cols) == 0 {
			t.Fatalf("table_info(%s): got no columns", table)
		}
		for _, c := range cols {
			if strings.HasSuffix(c, "_sealed") {
				found[db.SealedColumn{Table: table, Column: c}] = true
			}
		}
	}
	registered := map[db.SealedColumn]bool{}
	for _, c := range db.SealedColumns {
		if registered[c] {
			t.Errorf("SealedColumns lists %s.%s twice", c.Table, c.Column)
		}
		registered[c] = true
	}
	for c := range found {
		if !registered[c] {
			t.Errorf("%s.%s: in the schema but not in SealedColumns; key rotation would skip it", c.Table, c.Column)
		}
	}
	for c := range registered {
		if !found[c] {
			t.Errorf("%s.%s: in SealedColumns but not in the schema", c.Table, c.Column)
		}
	}
	if len(found) == 0 {
		t.Fatal("found no _sealed columns; want at least one")
	}
}

// sealedCell is one registered column's cell in the rotation test.
type sealedCell struct {
	col   db.SealedColumn
	rowID int64
	plain string
}

// insertSealedRows puts one row with a sealed value into every registered
// sealed column, through the store where it has a method and with raw SQL
// (sealing with d.Keys() and the cell's AAD) where it does not yet.
func insertSealedRows(t *testing.T, d *db.DB) []sealedCell {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	owner := signIn(t, d, "owner", "owner@example.test")
	insertRow := map[string]func(plain string) int64{
		"oauth_providers": func(plain string) int64 {
			p, err := d.SaveOAuthProvider(ctx, 0, testProvider("rotating"), plain)
			if err != nil {
				t.Fatal(err)
			}
			return p.ID
		},
		"mcp_global_servers": func(string) int64 {
			res, err := d.Writer().ExecContext(ctx, `INSERT INTO mcp_global_servers (name, created_by, created_at, updated_at)
				VALUES ('shared-search', ?, ?, ?)`, owner.ID, now, now)
			if err != nil {
				t.Fatal(err)
			}
			id, _ := res.LastInsertId()
			return id
		},
		"mcp_user_servers": func(string) int64 {
			res, err := d.Writer().ExecContext(ctx, `INSERT INTO mcp_user_servers
				(user_id, catalog_name, name, kind, transport, created_at, updated_at)
				VALUES (?, 'notes', 'my-notes', 'remote', 'streamable-http', ?, ?)`, owner.ID, now, now)
			if err != nil {
				t.Fatal(err)
			}
			id, _ := res.LastInsertId()
			return id
		},
	}
	var cells []sealedCell
	for _, c := range db.SealedColumns {
		insert, ok := insertRow[c.Table]
		if !ok {
			t.Fatalf("no fixture for sealed column %s.%s: add one to insertSealedRows", c.Table, c.Column)
		}
		plain := canary(t, c.Table+"."+c.Column)
		id := insert(plain)
		if c.Table != "oauth_providers" {
			sealed, err := d.Keys().Seal([]byte(plain), seal.AAD{Table: c.Table, Column: c.Column, RowID: id}, nil)
			if err != nil {
				t.Fatal(err)
			}
			q := fmt.Sprintf(`UPDATE %s SET %s = ? WHERE id = ?`, c.Table, c.Column)
			if _, err := d.Writer().ExecContext(ctx, q, sealed, id); err != nil {
				t.Fatal(err)
			}
		}
		cells = append(cells, sealedCell{col: c, rowID: id, plain: plain})
	}
	return cells
}

// openCell reads one cell and opens it with d's current keyring.
func openCell(t *testing.T, d *db.DB, c sealedCell) (string, error) {
	t.Helper()
	var v string
	q := fmt.Sprintf(`SELECT %s FROM %s WHERE id = ?`, c.col.Column, c.col.Table)
	if err := d.Readers().GetContext(context.Background(), &v, q, c.rowID); err != nil {
		t.Fatal(err)
	}
	b, err := d.Keys().Open(v, seal.AAD{Table: c.col.Table, Column: c.col.Column, RowID: c.rowID})
	return string(b), err
}

func TestResealAll(t *testing.T) {
	ctx := context.Background()
	oldKey, newKey := newTestKey(t), newTestKey(t)
	d := openTestDBAt(t, testDBPath(t), seal.NewKeyring(oldKey))
	cells := insertSealedRows(t, d)

	ids, err := d.SealedKeyIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{oldKey.ID: len(db.SealedColumns)}; !maps.Equal(ids, want) {
		t.Fatalf("SealedKeyIDs before rotation: got %v; want %v", ids, want)
	}

	d.SetKeyring(seal.NewKeyring(newKey, oldKey))
	n, err := d.ResealAll(ctx)
	if err != nil {
		t.Fatalf("ResealAll: %v", err)
	}
	if n != len(cells) {
		t.Errorf("ResealAll count: got %d; want %d", n, len(cells))
	}

	t.Run("SealedKeyIDs reports the new key only", func(t *testing.T) {
		ids, err := d.SealedKeyIDs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{newKey.ID: len(db.SealedColumns)}; !maps.Equal(ids, want) {
			t.Errorf("SealedKeyIDs: got %v; want %v", ids, want)
		}
	})

	t.Run("a keyring with only the new key opens every cell", func(t *testing.T) {
		d.SetKeyring(seal.NewKeyring(newKey))
		for _, c := range cells {
			got, err := openCell(t, d, c)
			if err != nil || got != c.plain {
				t.Errorf("%s.%s: got %q, %v; want the canary", c.col.Table, c.col.Column, got, err)
			}
		}
		if got, err := d.OAuthProviderSecret(ctx, "rotating"); err != nil || !strings.HasPrefix(got, "canary-oauth_providers") {
			t.Errorf("OAuthProviderSecret: got %q, %v; want its canary", got, err)
		}
	})

	t.Run("a keyring with only the old key opens none", func(t *testing.T) {
		d.SetKeyring(seal.NewKeyring(oldKey))
		for _, c := range cells {
			if _, err := openCell(t, d, c); !errors.Is(err, seal.ErrDecrypt) {
				t.Errorf("%s.%s with the old key: got %v; want ErrDecrypt", c.col.Table, c.col.Column, err)
			}
		}
	})

	t.Run("plaintexts are absent from the files", func(t *testing.T) {
		checkpoint(t, d)
		for _, c := range cells {
			assertNotInFiles(t, c.plain, dbFiles(d.Path())...)
		}
	})

	t.Run("rotation is audited", func(t *testing.T) {
		es, err := d.AuditLog(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 1 || es[0].Action != "keys.rotate" || es[0].Target != newKey.ID || es[0].ActorID != nil {
			t.Errorf("newest audit entry: got %+v; want keys.rotate of %s by the system", es, newKey.ID)
		}
	})
}

func TestResealAllIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	oldKey, newKey := newTestKey(t), newTestKey(t)
	d := openTestDBAt(t, testDBPath(t), seal.NewKeyring(oldKey))
	cells := insertSealedRows(t, d)
	// The last registered cell is sealed with a key the new keyring lacks.
	lost := newTestKey(t)
	last := cells[len(cells)-1]
	bad, err := seal.NewKeyring(lost).Seal([]byte("x"), seal.AAD{Table: last.col.Table, Column: last.col.Column, RowID: last.rowID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := fmt.Sprintf(`UPDATE %s SET %s = ? WHERE id = ?`, last.col.Table, last.col.Column)
	if _, err := d.Writer().ExecContext(ctx, q, bad, last.rowID); err != nil {
		t.Fatal(err)
	}
	audits := auditCount(t, d)

	d.SetKeyring(seal.NewKeyring(newKey, oldKey))
	if _, err := d.ResealAll(ctx); err == nil {
		t.Fatal("ResealAll with an unopenable cell: got nil; want an error")
	}
	ids, err := d.SealedKeyIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{oldKey.ID: len(cells) - 1, lost.ID: 1}; !maps.Equal(ids, want) {
		t.Errorf("SealedKeyIDs after failed rotation: got %v; want %v (nothing moved)", ids, want)
	}
	if got := auditCount(t, d); got != audits {
		t.Errorf("audit rows: got %d; want %d", got, audits)
	}
}

func TestSealedWithoutKeys(t *testing.T) {
	ctx := context.Background()
	d := openTestDBAt(t, testDBPath(t), nil)
	if _, err := d.SaveOAuthProvider(ctx, 0, testProvider("nokeys"), "s3cret"); err == nil {
		t.Error("SaveOAuthProvider with a secret and no keyring: got nil; want an error")
	}
	if _, err := d.OAuthProviderByName(ctx, "nokeys"); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
		t.Errorf("provider after failed save: got %v; want ENOTFOUND (rolled back)", err)
	}
	if _, err := d.ResealAll(ctx); err == nil {
		t.Error("ResealAll without a keyring: got nil; want an error")
	}
	ids, err := d.SealedKeyIDs(ctx)
	if err != nil || len(ids) != 0 {
		t.Errorf("SealedKeyIDs on an empty store: got %v, %v; want empty", ids, err)
	}
}
