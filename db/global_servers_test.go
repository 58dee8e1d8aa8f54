package db_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"patchbay"
	"patchbay/db"
	"patchbay/db/seal"
)

// connectorFixture is a store with an admin, two users, a clock and a
// catalog entry of each scope.
type connectorFixture struct {
	d                      *db.DB
	clock                  *testClock
	admin, uma, vic        patchbay.User
	userOnly, global, both db.CatalogEntry
}

func newConnectorFixture(t *testing.T) *connectorFixture {
	t.Helper()
	d := openTestDB(t)
	f := &connectorFixture{d: d, clock: useTestClock(t, d)}
	f.admin = signIn(t, d, "admin", "admin@example.test")
	f.uma = signIn(t, d, "uma", "uma@example.test")
	f.vic = signIn(t, d, "vic", "vic@example.test")
	f.userOnly = saveEntry(t, d, remoteEntry("personal", db.ScopeUser))
	f.global = saveEntry(t, d, localEntry("search", db.ScopeGlobal))
	f.both = saveEntry(t, d, localEntry("notes", db.ScopeBoth))
	f.clock.Advance(time.Minute)
	return f
}

// createGlobal creates an enabled global server from f.global as the admin.
func (f *connectorFixture) createGlobal(t *testing.T, name string, secrets map[string]string) db.GlobalServer {
	t.Helper()
	g, err := f.d.CreateGlobalServer(context.Background(), f.admin.ID,
		db.GlobalServer{CatalogID: f.global.ID, Name: name, Enabled: true}, secrets)
	if err != nil {
		t.Fatalf("CreateGlobalServer(%s): %v", name, err)
	}
	return g
}

// sameGlobal compares global servers ignoring times, which it checks separately.
func sameGlobal(t *testing.T, what string, got, want db.GlobalServer) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s times: got %v/%v; want %v/%v", what, got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestCreateGlobalServerRoundTrip(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	secrets := map[string]string{"API_KEY": canary(t, "api-key"), "OTHER": canary(t, "other"), "EMPTY": ""}
	in := db.GlobalServer{CatalogID: f.both.ID, Name: "team-notes", Enabled: true,
		Config: db.ServerConfig{Inputs: map[string]string{"REGION": "eu"}},
		// Ignored: these come from the store.
		HasSecrets: false, InstalledHash: "ignored", LastError: "ignored", CreatedBy: 999}
	g, err := d.CreateGlobalServer(ctx, f.admin.ID, in, secrets)
	if err != nil {
		t.Fatalf("CreateGlobalServer: %v", err)
	}
	want := db.GlobalServer{ID: g.ID, CatalogID: f.both.ID, Name: "team-notes", Enabled: true,
		Config: db.ServerConfig{Inputs: map[string]string{"REGION": "eu"}}, HasSecrets: true,
		CreatedBy: f.admin.ID, CreatedAt: f.clock.Now(), UpdatedAt: f.clock.Now()}
	sameGlobal(t, "CreateGlobalServer result", g, want)
	wantAudit(t, d, "global.create", "global:team-notes", "catalog=notes secrets=API_KEY,OTHER", f.admin.ID)

	byID, err := d.GlobalServerByID(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameGlobal(t, "GlobalServerByID", byID, want)
	byName, err := d.GlobalServerByName(ctx, "team-notes")
	if err != nil {
		t.Fatal(err)
	}
	sameGlobal(t, "GlobalServerByName", byName, want)
	got, err := d.GlobalServerSecrets(ctx, g.ID)
	if wantSecrets := map[string]string{"API_KEY": secrets["API_KEY"], "OTHER": secrets["OTHER"]}; err != nil || !maps.Equal(got, wantSecrets) {
		t.Errorf("GlobalServerSecrets: got %v, %v; want the two non-empty secrets", got, err)
	}

	t.Run("created by the system", func(t *testing.T) {
		g, err := d.CreateGlobalServer(ctx, 0, db.GlobalServer{CatalogID: f.global.ID, Name: "by-cli"}, map[string]string{})
		if err != nil {
			t.Fatal(err)
		}
		if g.CreatedBy != 0 || g.Enabled || g.HasSecrets || g.Config.Inputs != nil {
			t.Errorf("global: got %+v; want created by 0, disabled, no secrets, empty config", g)
		}
		wantAudit(t, d, "global.create", "global:by-cli", "catalog=search", 0)
		s, err := d.GlobalServerSecrets(ctx, g.ID)
		if err != nil || s == nil || len(s) != 0 {
			t.Errorf("GlobalServerSecrets: got %#v, %v; want an empty, non-nil map", s, err)
		}
		var cell string
		if err := d.Readers().GetContext(ctx, &cell, `SELECT secrets_sealed FROM mcp_global_servers WHERE id = ?`, g.ID); err != nil || cell != "" {
			t.Errorf("secrets_sealed: got %q, %v; want \"\"", cell, err)
		}
	})

	t.Run("GlobalServers is sorted by name", func(t *testing.T) {
		f.createGlobal(t, "aardvark", nil)
		list, err := d.GlobalServers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range list {
			names = append(names, g.Name)
		}
		if want := []string{"aardvark", "by-cli", "team-notes"}; !slices.Equal(names, want) {
			t.Errorf("GlobalServers: got %v; want %v", names, want)
		}
	})
}

func TestCreateGlobalServerRefuses(t *testing.T) {
	tests := []struct {
		name          string
		g             func(f *connectorFixture) db.GlobalServer
		secrets       map[string]string
		code, message string
	}{
		{"unknown catalog entry", func(f *connectorFixture) db.GlobalServer {
			return db.GlobalServer{CatalogID: 9999, Name: "x"}
		}, nil, patchbay.EINVALID, "No such connector in the catalog."},
		{"no catalog entry", func(f *connectorFixture) db.GlobalServer {
			return db.GlobalServer{Name: "x"}
		}, nil, patchbay.EINVALID, "No such connector in the catalog."},
		{"user-only catalog entry", func(f *connectorFixture) db.GlobalServer {
			return db.GlobalServer{CatalogID: f.userOnly.ID, Name: "x"}
		}, nil, patchbay.EINVALID, `The catalog connector "personal" is for users' own activations only, not for a global connector.`},
		{"bad name", func(f *connectorFixture) db.GlobalServer {
			return db.GlobalServer{CatalogID: f.global.ID, Name: "x__y"}
		}, nil, patchbay.EINVALID, `"x__y" is not a valid connector name: use 1 to 64 letters, digits, '-' and '_', starting with a letter or digit, with no '__' and no '_' at the end.`},
		{"duplicate name", func(f *connectorFixture) db.GlobalServer {
			return db.GlobalServer{CatalogID: f.both.ID, Name: "taken"}
		}, nil, patchbay.ECONFLICT, `A global connector named "taken" already exists.`},
		{"secret without a name", func(f *connectorFixture) db.GlobalServer {
			return db.GlobalServer{CatalogID: f.global.ID, Name: "x"}
		}, map[string]string{"": "v"}, patchbay.EINVALID, "Every secret needs a name."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConnectorFixture(t)
			f.createGlobal(t, "taken", nil)
			rows, audits := countRows(t, f.d, "mcp_global_servers", ""), auditCount(t, f.d)
			_, err := f.d.CreateGlobalServer(context.Background(), f.admin.ID, tt.g(f), tt.secrets)
			wantError(t, "CreateGlobalServer", err, tt.code, tt.message)
			if got := countRows(t, f.d, "mcp_global_servers", ""); got != rows {
				t.Errorf("global rows: got %d; want %d", got, rows)
			}
			if got := auditCount(t, f.d); got != audits {
				t.Errorf("audit rows: got %d; want %d", got, audits)
			}
		})
	}
}

func TestCreateGlobalServerWithoutKeys(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	f.d.SetKeyring(nil)
	audits := auditCount(t, f.d)
	_, err := f.d.CreateGlobalServer(ctx, f.admin.ID, db.GlobalServer{CatalogID: f.global.ID, Name: "locked"}, map[string]string{"K": "v"})
	if err == nil {
		t.Fatal("CreateGlobalServer with a secret and no keyring: got nil; want an error")
	}
	if n := countRows(t, f.d, "mcp_global_servers", ""); n != 0 {
		t.Errorf("global rows: got %d; want 0 (rolled back)", n)
	}
	if got := auditCount(t, f.d); got != audits {
		t.Errorf("audit rows: got %d; want %d", got, audits)
	}
	if _, err := f.d.CreateGlobalServer(ctx, f.admin.ID, db.GlobalServer{CatalogID: f.global.ID, Name: "open"}, nil); err != nil {
		t.Errorf("CreateGlobalServer without secrets and no keyring: %v; want it to work", err)
	}
}

func TestGlobalServerSecretsAreSealed(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	secret, other := canary(t, "global-secret"), canary(t, "other-secret")
	g := f.createGlobal(t, "sealed-search", map[string]string{"API_KEY": secret})
	h := f.createGlobal(t, "other-search", map[string]string{"API_KEY": other})

	t.Run("the stored cell is versioned ciphertext", func(t *testing.T) {
		var cell string
		if err := d.Readers().GetContext(ctx, &cell, `SELECT secrets_sealed FROM mcp_global_servers WHERE id = ?`, g.ID); err != nil {
			t.Fatal(err)
		}
		if want := "v1." + d.Keys().Primary().ID + "."; !strings.HasPrefix(cell, want) {
			t.Errorf("sealed cell: got %.20q...; want prefix %q", cell, want)
		}
	})

	t.Run("absent from the database, WAL, audit log and a backup", func(t *testing.T) {
		if strings.Contains(dumpTable(t, d, "audit_log"), secret) {
			t.Error("audit_log holds the secret")
		}
		checkpoint(t, d)
		if !fileContains(t, d.Path(), "sealed-search") {
			t.Fatal("control: the connector name is not in the database file; the search is broken")
		}
		assertNotInFiles(t, secret, dbFiles(d.Path())...)
		assertNotInFiles(t, other, dbFiles(d.Path())...)
		backup := filepath.Join(t.TempDir(), "backup.db")
		if err := d.Backup(ctx, backup); err != nil {
			t.Fatal(err)
		}
		assertNotInFiles(t, secret, dbFiles(backup)...)
	})

	t.Run("lookups never carry it", func(t *testing.T) {
		for _, get := range []func() (db.GlobalServer, error){
			func() (db.GlobalServer, error) { return d.GlobalServerByID(ctx, g.ID) },
			func() (db.GlobalServer, error) { return d.GlobalServerByName(ctx, g.Name) },
		} {
			got, err := get()
			if err != nil {
				t.Fatal(err)
			}
			if s := fmt.Sprintf("%+v %#v", got, got); strings.Contains(s, secret) || strings.Contains(s, "v1.") || !got.HasSecrets {
				t.Errorf("global: got %+v; want HasSecrets and no secret", got)
			}
		}
	})

	t.Run("a cell copied to another row does not open", func(t *testing.T) {
		if _, err := d.Writer().ExecContext(ctx, `UPDATE mcp_global_servers SET secrets_sealed =
			(SELECT secrets_sealed FROM mcp_global_servers WHERE id = ?) WHERE id = ?`, g.ID, h.ID); err != nil {
			t.Fatal(err)
		}
		got, err := d.GlobalServerSecrets(ctx, h.ID)
		wantCode(t, "GlobalServerSecrets(moved cell)", err, patchbay.EINTERNAL)
		if !errors.Is(err, seal.ErrDecrypt) {
			t.Errorf("error: got %v; want one wrapping seal.ErrDecrypt", err)
		}
		if got != nil || strings.Contains(err.Error(), secret) {
			t.Errorf("failure: got %v, %v; want no secret anywhere", got, err)
		}
		if s, err := d.GlobalServerSecrets(ctx, g.ID); err != nil || s["API_KEY"] != secret {
			t.Errorf("original still opens: got %v, %v", s, err)
		}
	})

	t.Run("unknown id is not found", func(t *testing.T) {
		_, err := d.GlobalServerSecrets(ctx, 9999)
		wantError(t, "GlobalServerSecrets", err, patchbay.ENOTFOUND, "No such global connector.")
		_, err = d.GlobalServerByID(ctx, 9999)
		wantError(t, "GlobalServerByID", err, patchbay.ENOTFOUND, "No such global connector.")
		_, err = d.GlobalServerByName(ctx, "nope")
		wantError(t, "GlobalServerByName", err, patchbay.ENOTFOUND, `No global connector named "nope".`)
	})
}

func TestUpdateGlobalServer(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	g := f.createGlobal(t, "search-team", map[string]string{"A": "a1", "B": "b1", "SAME": "s"})
	created := f.clock.Now()

	secretsAre := func(t *testing.T, want map[string]string) {
		t.Helper()
		got, err := d.GlobalServerSecrets(ctx, g.ID)
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("GlobalServerSecrets: got %v, %v; want %v", got, err, want)
		}
	}

	t.Run("nil secrets keep the stored ones", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		cfg := db.ServerConfig{Inputs: map[string]string{"REGION": "us"}}
		got, err := d.UpdateGlobalServer(ctx, f.admin.ID, g.ID, cfg, nil)
		if err != nil {
			t.Fatalf("UpdateGlobalServer: %v", err)
		}
		if !maps.Equal(got.Config.Inputs, cfg.Inputs) || !got.UpdatedAt.Equal(f.clock.Now()) || !got.CreatedAt.Equal(created) || !got.HasSecrets {
			t.Errorf("updated global: got %+v; want new config, updated now, created kept, secrets kept", got)
		}
		secretsAre(t, map[string]string{"A": "a1", "B": "b1", "SAME": "s"})
		wantAudit(t, d, "global.update", "global:search-team", "", f.admin.ID)
	})

	t.Run("a map merges: empty deletes, others replace", func(t *testing.T) {
		got, err := d.UpdateGlobalServer(ctx, f.admin.ID, g.ID, db.ServerConfig{},
			map[string]string{"A": "a2", "B": "", "C": "c1", "SAME": "s", "MISSING": ""})
		if err != nil {
			t.Fatalf("UpdateGlobalServer: %v", err)
		}
		if got.Config.Inputs != nil {
			t.Errorf("config: got %+v; want it replaced by the empty config", got.Config)
		}
		secretsAre(t, map[string]string{"A": "a2", "C": "c1", "SAME": "s"})
		wantAudit(t, d, "global.update", "global:search-team", "secrets=A,B,C", f.admin.ID)
		if strings.Contains(dumpTable(t, d, "audit_log"), "a2") {
			t.Error("audit log holds a secret value")
		}
	})

	t.Run("an empty map changes nothing", func(t *testing.T) {
		if _, err := d.UpdateGlobalServer(ctx, f.admin.ID, g.ID, db.ServerConfig{}, map[string]string{}); err != nil {
			t.Fatal(err)
		}
		secretsAre(t, map[string]string{"A": "a2", "C": "c1", "SAME": "s"})
	})

	t.Run("deleting every secret empties the cell", func(t *testing.T) {
		got, err := d.UpdateGlobalServer(ctx, f.admin.ID, g.ID, db.ServerConfig{}, map[string]string{"A": "", "C": "", "SAME": ""})
		if err != nil {
			t.Fatal(err)
		}
		if got.HasSecrets {
			t.Error("HasSecrets: got true; want false")
		}
		secretsAre(t, map[string]string{})
		var cell string
		if err := d.Readers().GetContext(ctx, &cell, `SELECT secrets_sealed FROM mcp_global_servers WHERE id = ?`, g.ID); err != nil || cell != "" {
			t.Errorf("secrets_sealed: got %q, %v; want \"\"", cell, err)
		}
	})

	t.Run("unknown id is not found", func(t *testing.T) {
		before := auditCount(t, d)
		_, err := d.UpdateGlobalServer(ctx, f.admin.ID, 9999, db.ServerConfig{}, nil)
		wantError(t, "UpdateGlobalServer", err, patchbay.ENOTFOUND, "No such global connector.")
		if got := auditCount(t, d); got != before {
			t.Errorf("audit rows: got %d; want %d", got, before)
		}
	})

	t.Run("without keys, a secret change fails and changes nothing", func(t *testing.T) {
		keys := d.Keys()
		d.SetKeyring(nil)
		defer d.SetKeyring(keys)
		_, err := d.UpdateGlobalServer(ctx, f.admin.ID, g.ID, db.ServerConfig{Inputs: map[string]string{"X": "y"}}, map[string]string{"A": "a3"})
		if err == nil {
			t.Fatal("UpdateGlobalServer without keys: got nil; want an error")
		}
		d.SetKeyring(keys)
		got, err := d.GlobalServerByID(ctx, g.ID)
		if err != nil || got.Config.Inputs != nil || got.HasSecrets {
			t.Errorf("global after failed update: got %+v, %v; want unchanged", got, err)
		}
	})
}

func TestSetGlobalEnabled(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	g := f.createGlobal(t, "toggle", nil)
	for _, enabled := range []bool{false, true} {
		if err := f.d.SetGlobalEnabled(ctx, f.admin.ID, g.ID, enabled); err != nil {
			t.Fatalf("SetGlobalEnabled(%v): %v", enabled, err)
		}
		got, err := f.d.GlobalServerByID(ctx, g.ID)
		if err != nil || got.Enabled != enabled {
			t.Errorf("Enabled: got %v, %v; want %v", got.Enabled, err, enabled)
		}
		action := "global.disable"
		if enabled {
			action = "global.enable"
		}
		wantAudit(t, f.d, action, "global:toggle", "", f.admin.ID)
	}
	err := f.d.SetGlobalEnabled(ctx, f.admin.ID, 9999, true)
	wantError(t, "SetGlobalEnabled(unknown)", err, patchbay.ENOTFOUND, "No such global connector.")
}

func TestSetGlobalInstallResult(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	g := f.createGlobal(t, "installed", nil)
	steps := []struct {
		hash, lastError         string
		wantHash, wantLastError string
	}{
		{"h1", "", "h1", ""},
		{"", "npm ci failed", "h1", "npm ci failed"}, // a failed install keeps the last good hash
		{"h2", "", "h2", ""},
	}
	for _, s := range steps {
		if err := f.d.SetGlobalInstallResult(ctx, g.ID, s.hash, s.lastError); err != nil {
			t.Fatalf("SetGlobalInstallResult(%q, %q): %v", s.hash, s.lastError, err)
		}
		got, err := f.d.GlobalServerByID(ctx, g.ID)
		if err != nil || got.InstalledHash != s.wantHash || got.LastError != s.wantLastError {
			t.Errorf("after (%q, %q): got hash %q, error %q, %v; want %q, %q", s.hash, s.lastError,
				got.InstalledHash, got.LastError, err, s.wantHash, s.wantLastError)
		}
	}
	err := f.d.SetGlobalInstallResult(ctx, 9999, "h", "")
	wantCode(t, "SetGlobalInstallResult(unknown)", err, patchbay.ENOTFOUND)
}

func TestDeleteGlobalServer(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	g := f.createGlobal(t, "doomed", map[string]string{"K": "v"})
	if _, err := f.d.GrantGlobal(ctx, f.admin.ID, g.ID, db.GranteeEveryone, "", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.GrantGlobal(ctx, f.admin.ID, g.ID, db.GranteeUser, "", f.uma.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.d.DeleteGlobalServer(ctx, f.admin.ID, g.ID); err != nil {
		t.Fatalf("DeleteGlobalServer: %v", err)
	}
	wantAudit(t, f.d, "global.delete", "global:doomed", "", f.admin.ID)
	if n := countRows(t, f.d, "mcp_global_access", "global_id = ?", g.ID); n != 0 {
		t.Errorf("grants after delete: got %d; want 0 (cascaded)", n)
	}
	_, err := f.d.GlobalServerByID(ctx, g.ID)
	wantCode(t, "GlobalServerByID after delete", err, patchbay.ENOTFOUND)
	err = f.d.DeleteGlobalServer(ctx, f.admin.ID, g.ID)
	wantError(t, "DeleteGlobalServer again", err, patchbay.ENOTFOUND, "No such global connector.")
}
