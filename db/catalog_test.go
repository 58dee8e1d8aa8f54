package db_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"patchbay"
	"patchbay/db"
	"patchbay/migrations"
)

// localEntry is a minimal valid local catalog entry named name.
func localEntry(name, scope string) db.CatalogEntry {
	return db.CatalogEntry{Name: name, Title: "Title of " + name, Kind: db.KindLocal, Scope: scope,
		Transport: "stdio", Command: "node", Args: []string{"server.js"}}
}

// remoteEntry is a minimal valid remote catalog entry named name.
func remoteEntry(name, scope string) db.CatalogEntry {
	return db.CatalogEntry{Name: name, Kind: db.KindRemote, Scope: scope, Transport: "streamable-http",
		URL: "https://" + name + ".example.test/mcp"}
}

// saveEntry saves e as the system and fails the test on error.
func saveEntry(t *testing.T, d *db.DB, e db.CatalogEntry) db.CatalogEntry {
	t.Helper()
	saved, err := d.SaveCatalogEntry(context.Background(), 0, e)
	if err != nil {
		t.Fatalf("SaveCatalogEntry(%s): %v", e.Name, err)
	}
	return saved
}

// lastAudit returns the newest audit entry and its actor (0 for the system).
func lastAudit(t *testing.T, d *db.DB) (db.AuditEntry, int64) {
	t.Helper()
	es, err := d.AuditLog(context.Background(), 1)
	if err != nil || len(es) != 1 {
		t.Fatalf("AuditLog: got %v, %v; want one entry", es, err)
	}
	var actor int64
	if es[0].ActorID != nil {
		actor = *es[0].ActorID
	}
	return es[0], actor
}

// wantAudit fails the test unless the newest audit entry is exactly this.
func wantAudit(t *testing.T, d *db.DB, action, target, detail string, actor int64) {
	t.Helper()
	e, gotActor := lastAudit(t, d)
	if e.Action != action || e.Target != target || e.Detail != detail || gotActor != actor {
		t.Errorf("newest audit entry: got %s %s %q by %d; want %s %s %q by %d",
			e.Action, e.Target, e.Detail, gotActor, action, target, detail, actor)
	}
}

// wantError fails the test unless err has code and exactly message.
func wantError(t *testing.T, what string, err error, code, message string) {
	t.Helper()
	wantCode(t, what, err, code)
	if got := patchbay.ErrorMessage(err); got != message {
		t.Errorf("%s: got message %q; want %q", what, got, message)
	}
}

func fullEntry() db.CatalogEntry {
	return db.CatalogEntry{
		Name: "notes_v2", Title: "Notes", Description: "Reads and writes notes.",
		Kind: db.KindLocal, Scope: db.ScopeBoth, Transport: "stdio",
		Command: "node", Args: []string{"dist/index.js", "--stdio"}, Env: map[string]string{"LOG_LEVEL": "debug"},
		Inputs: []db.CatalogInput{
			{Name: "NOTES_TOKEN", Title: "Token", Secret: true, Required: true},
			{Name: "X-Region", Default: "eu", Header: "X-Region", Format: "region {}"},
		},
		AuthType: "oauth", OAuthProvider: "github", OAuthScopes: []string{"repo", "read:user"},
		Deliver: `{"env":"NOTES_TOKEN"}`, Verify: &db.VerifySpec{Command: []string{"node", "verify.js"}, TimeoutSeconds: 30},
		InstallScripts: true, Version: 7, VersionString: "1.2.3", VersionReleaseDate: "2030-01-02",
		Source: "/srv/catalog/notes", SourceRef: "git:abc123", ContentHash: "sha256:feed", ToolDigest: "sha256:beef",
	}
}

// sameEntry compares entries ignoring times, which it checks separately.
func sameEntry(t *testing.T, what string, got, want db.CatalogEntry) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s times: got %v/%v; want %v/%v", what, got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestSaveCatalogEntryRoundTrip(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	clock := useTestClock(t, d)
	admin := signIn(t, d, "admin", "admin@example.test")

	in := fullEntry()
	saved, err := d.SaveCatalogEntry(ctx, admin.ID, in)
	if err != nil {
		t.Fatalf("SaveCatalogEntry: %v", err)
	}
	want := in
	want.ID, want.CreatedAt, want.UpdatedAt = saved.ID, clock.Now(), clock.Now()
	if saved.ID == 0 {
		t.Fatal("saved ID: got 0; want it set")
	}
	sameEntry(t, "SaveCatalogEntry result", saved, want)
	wantAudit(t, d, "catalog.save", "catalog:notes_v2", "kind=local scope=both version=7", admin.ID)

	byName, err := d.CatalogEntryByName(ctx, "notes_v2")
	if err != nil {
		t.Fatalf("CatalogEntryByName: %v", err)
	}
	sameEntry(t, "CatalogEntryByName", byName, want)
	byID, err := d.CatalogEntryByID(ctx, saved.ID)
	if err != nil {
		t.Fatalf("CatalogEntryByID: %v", err)
	}
	sameEntry(t, "CatalogEntryByID", byID, want)
	list, err := d.ListCatalog(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListCatalog: got %d entries, %v; want 1", len(list), err)
	}
	sameEntry(t, "ListCatalog[0]", list[0], want)

	t.Run("remote entry", func(t *testing.T) {
		r := remoteEntry("search", db.ScopeUser)
		r.Transport = "sse"
		r.AuthType = "api_key"
		r.Inputs = []db.CatalogInput{{Name: "key", Secret: true, Header: "Authorization", Format: "Bearer {}"}}
		got := saveEntry(t, d, r)
		if got.Kind != db.KindRemote || got.Transport != "sse" || got.URL != r.URL || got.Command != "" ||
			!reflect.DeepEqual(got.Inputs, r.Inputs) {
			t.Errorf("remote entry: got %+v; want %+v", got, r)
		}
	})
}

func TestSaveCatalogEntryDefaults(t *testing.T) {
	d := openTestDB(t)
	e := localEntry("plain", "")
	e.Args = nil
	got := saveEntry(t, d, e)
	if got.Scope != db.ScopeUser || got.AuthType != "none" || got.Deliver != "{}" {
		t.Errorf("defaults: got scope %q, auth %q, deliver %q; want user, none, {}", got.Scope, got.AuthType, got.Deliver)
	}
	if got.Args != nil || got.Env != nil || got.Inputs != nil || got.OAuthScopes != nil || got.Verify != nil || got.InstallScripts {
		t.Errorf("empty fields: got %+v; want nil collections, no verify, no install scripts", got)
	}
	var cells string
	if err := d.Readers().Get(&cells, `SELECT args_json || env_json || inputs_json || oauth_scopes_json || verify_json || install_scripts
		FROM mcp_catalog WHERE id = ?`, got.ID); err != nil {
		t.Fatal(err)
	}
	if cells != "[]{}[][]0" {
		t.Errorf("stored JSON columns: got %q; want %q (never null)", cells, "[]{}[][]0")
	}
}

func TestSaveCatalogEntryUpserts(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	clock := useTestClock(t, d)
	first := saveEntry(t, d, fullEntry())
	created := clock.Now()
	clock.Advance(time.Hour)

	edit := fullEntry()
	edit.Title, edit.Verify, edit.InstallScripts, edit.Version = "Notes 2", nil, false, 8
	edit.Inputs = edit.Inputs[:1]
	second := saveEntry(t, d, edit)
	want := edit
	want.ID, want.CreatedAt, want.UpdatedAt = first.ID, created, clock.Now()
	sameEntry(t, "after second save", second, want)
	if n := countRows(t, d, "mcp_catalog", ""); n != 1 {
		t.Errorf("catalog rows: got %d; want 1", n)
	}
	got, err := d.CatalogEntryByName(ctx, "notes_v2")
	if err != nil {
		t.Fatal(err)
	}
	sameEntry(t, "CatalogEntryByName after upsert", got, want)
}

func TestSaveCatalogEntryValidation(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name    string
		change  func(e *db.CatalogEntry)
		message string
	}{
		{"empty name", func(e *db.CatalogEntry) { e.Name = "" }, `"" is not a valid connector name: use 1 to 64 letters, digits, '-' and '_', starting with a letter or digit, with no '__' and no '_' at the end.`},
		{"name too long", func(e *db.CatalogEntry) { e.Name = long }, fmt.Sprintf(`%q is not a valid connector name: use 1 to 64 letters, digits, '-' and '_', starting with a letter or digit, with no '__' and no '_' at the end.`, long)},
		{"double underscore", func(e *db.CatalogEntry) { e.Name = "a__b" }, `"a__b" is not a valid connector name: use 1 to 64 letters, digits, '-' and '_', starting with a letter or digit, with no '__' and no '_' at the end.`},
		{"kind", func(e *db.CatalogEntry) { e.Kind = "docker" }, `A connector's kind is local or remote, not "docker".`},
		{"scope", func(e *db.CatalogEntry) { e.Scope = "team" }, `A connector's scope is user, global or both, not "team".`},
		{"transport", func(e *db.CatalogEntry) { e.Transport = "websocket" }, `A local connector runs over stdio, not "websocket".`},
		{"local over http", func(e *db.CatalogEntry) { e.Transport = "streamable-http" }, `A local connector runs over stdio, not "streamable-http".`},
		{"remote over stdio", func(e *db.CatalogEntry) { e.Kind, e.URL = db.KindRemote, "https://x.example.test" },
			`A remote connector uses the streamable-http or sse transport, not "stdio".`},
		{"local without command", func(e *db.CatalogEntry) { e.Command = " " }, `The local connector "tool" needs a command to run.`},
		{"remote without URL", func(e *db.CatalogEntry) { e.Kind, e.Transport, e.URL = db.KindRemote, "sse", "" },
			`The remote connector "tool" needs an http or https URL.`},
		{"remote with a file URL", func(e *db.CatalogEntry) { e.Kind, e.Transport, e.URL = db.KindRemote, "sse", "file:///etc/passwd" },
			`The remote connector "tool" needs an http or https URL.`},
		{"auth type", func(e *db.CatalogEntry) { e.AuthType = "basic" }, `A connector's auth type is none, api_key, oauth or qr, not "basic".`},
		{"input without a name", func(e *db.CatalogEntry) { e.Inputs = []db.CatalogInput{{Name: "A"}, {Name: ""}} }, `Every input of "tool" needs a name.`},
		{"duplicate inputs", func(e *db.CatalogEntry) { e.Inputs = []db.CatalogInput{{Name: "A"}, {Name: "B"}, {Name: "A"}} }, `"tool" has two inputs named "A".`},
		{"verify without command", func(e *db.CatalogEntry) { e.Verify = &db.VerifySpec{} }, `The verify step of "tool" needs a command and a timeout of zero or more seconds.`},
		{"deliver not an object", func(e *db.CatalogEntry) { e.Deliver = `["env"]` }, `The delivery settings of "tool" must be a JSON object.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := openTestDB(t)
			e := localEntry("tool", db.ScopeUser)
			tt.change(&e)
			before := auditCount(t, d)
			_, err := d.SaveCatalogEntry(context.Background(), 0, e)
			wantError(t, "SaveCatalogEntry", err, patchbay.EINVALID, tt.message)
			if n := countRows(t, d, "mcp_catalog", ""); n != 0 {
				t.Errorf("catalog rows: got %d; want 0", n)
			}
			if got := auditCount(t, d); got != before {
				t.Errorf("audit rows: got %d; want %d", got, before)
			}
		})
	}
}

func TestConnectorNames(t *testing.T) {
	d := openTestDB(t)
	valid := []string{"a", "A9", "my-notes", "my_notes", "a_b_c", "9-lives", "x-", strings.Repeat("z", 64)}
	invalid := []string{"", "_a", "-a", "a_", "a__b", "a_-b_", "a b", "a.b", "a/b", "ünï", strings.Repeat("z", 65)}
	for _, name := range valid {
		if _, err := d.SaveCatalogEntry(context.Background(), 0, localEntry(name, db.ScopeUser)); err != nil {
			t.Errorf("SaveCatalogEntry(%q): got %v; want it accepted", name, err)
		}
	}
	for _, name := range invalid {
		_, err := d.SaveCatalogEntry(context.Background(), 0, localEntry(name, db.ScopeUser))
		wantCode(t, fmt.Sprintf("SaveCatalogEntry(%q)", name), err, patchbay.EINVALID)
	}
}

func TestCatalogLookupsNotFound(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	_, err := d.CatalogEntryByName(ctx, "nope")
	wantError(t, "CatalogEntryByName", err, patchbay.ENOTFOUND, `No connector named "nope" in the catalog.`)
	_, err = d.CatalogEntryByID(ctx, 42)
	wantError(t, "CatalogEntryByID", err, patchbay.ENOTFOUND, "No such connector in the catalog.")
	list, err := d.ListCatalog(ctx)
	if err != nil || len(list) != 0 {
		t.Errorf("ListCatalog on an empty store: got %v, %v; want empty", list, err)
	}
}

func TestListCatalogSortedByName(t *testing.T) {
	d := openTestDB(t)
	for _, name := range []string{"zeta", "alpha", "mid"} {
		saveEntry(t, d, localEntry(name, db.ScopeUser))
	}
	list, err := d.ListCatalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
	}
	if want := []string{"alpha", "mid", "zeta"}; !slices.Equal(names, want) {
		t.Errorf("ListCatalog names: got %v; want %v", names, want)
	}
}

func TestDeleteCatalogEntry(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	admin := signIn(t, d, "admin", "admin@example.test")
	uma := signIn(t, d, "uma", "uma@example.test")
	shared := saveEntry(t, d, localEntry("shared", db.ScopeBoth))
	g, err := d.CreateGlobalServer(ctx, admin.ID, db.GlobalServer{CatalogID: shared.ID, Name: "shared-main", Enabled: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	act, err := d.CreateUserServer(ctx, db.UserServer{UserID: uma.ID, CatalogID: shared.ID, CatalogName: "shared",
		Name: "mine", Kind: db.KindLocal, Transport: "stdio"}, nil)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("refused while a global connector uses it", func(t *testing.T) {
		before := auditCount(t, d)
		err := d.DeleteCatalogEntry(ctx, admin.ID, shared.ID)
		wantError(t, "DeleteCatalogEntry", err, patchbay.ECONFLICT,
			`The global connector "shared-main" still uses "shared"; delete it before removing "shared" from the catalog.`)
		if _, err := d.CatalogEntryByID(ctx, shared.ID); err != nil {
			t.Errorf("entry after refused delete: %v; want it kept", err)
		}
		if got := auditCount(t, d); got != before {
			t.Errorf("audit rows: got %d; want %d", got, before)
		}
	})

	t.Run("its scope cannot drop global while used", func(t *testing.T) {
		_, err := d.SaveCatalogEntry(ctx, admin.ID, localEntry("shared", db.ScopeUser))
		wantError(t, "SaveCatalogEntry(scope user)", err, patchbay.ECONFLICT,
			`The global connector "shared-main" uses "shared", so its scope must stay global or both.`)
		if _, err := d.SaveCatalogEntry(ctx, admin.ID, localEntry("shared", db.ScopeGlobal)); err != nil {
			t.Errorf("SaveCatalogEntry(scope global): %v; want it accepted", err)
		}
	})

	t.Run("allowed once the global connector is gone", func(t *testing.T) {
		if err := d.DeleteGlobalServer(ctx, admin.ID, g.ID); err != nil {
			t.Fatal(err)
		}
		if err := d.DeleteCatalogEntry(ctx, admin.ID, shared.ID); err != nil {
			t.Fatalf("DeleteCatalogEntry: %v", err)
		}
		wantAudit(t, d, "catalog.delete", "catalog:shared", "", admin.ID)
		_, err := d.CatalogEntryByID(ctx, shared.ID)
		wantCode(t, "CatalogEntryByID after delete", err, patchbay.ENOTFOUND)
	})

	t.Run("user activations keep their snapshot", func(t *testing.T) {
		got, err := d.UserServerByID(ctx, uma.ID, act.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.CatalogID != 0 || got.CatalogName != "shared" {
			t.Errorf("activation: got catalog id %d, name %q; want 0, shared", got.CatalogID, got.CatalogName)
		}
	})

	t.Run("unknown id is not found", func(t *testing.T) {
		err := d.DeleteCatalogEntry(ctx, admin.ID, shared.ID)
		wantError(t, "DeleteCatalogEntry(gone)", err, patchbay.ENOTFOUND, "No such connector in the catalog.")
	})
}

func TestConnectorsMigration(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	columns := func(table string) []string {
		t.Helper()
		var cols []string
		if err := d.Readers().SelectContext(ctx, &cols, `SELECT name FROM pragma_table_info(?)`, table); err != nil {
			t.Fatal(err)
		}
		return cols
	}
	if !slices.Contains(columns("mcp_catalog"), "install_scripts") {
		t.Error("mcp_catalog.install_scripts: missing")
	}
	if !slices.Contains(columns("mcp_global_servers"), "installed_hash") {
		t.Error("mcp_global_servers.installed_hash: missing")
	}
	want := []string{"id", "scope", "user_id", "connector", "reason", "status", "hash", "log", "error", "started_at", "finished_at"}
	if got := columns("install_runs"); !slices.Equal(got, want) {
		t.Errorf("install_runs columns: got %v; want %v", got, want)
	}
	var index string
	if err := d.Readers().GetContext(ctx, &index, `SELECT group_concat(name, ',') FROM pragma_index_info('install_runs_connector')`); err != nil {
		t.Fatal(err)
	}
	if index != "scope,user_id,connector,id" {
		t.Errorf("install_runs_connector columns: got %q; want scope,user_id,connector,id", index)
	}
	saveEntry(t, d, localEntry("checked", db.ScopeUser))
	if _, err := d.Writer().ExecContext(ctx, `UPDATE mcp_catalog SET install_scripts = 2`); err == nil {
		t.Error("install_scripts = 2: got nil; want the CHECK constraint to refuse it")
	}

	t.Run("down and up again", func(t *testing.T) {
		p, err := goose.NewProvider(database.DialectSQLite3, d.Writer().DB, migrations.FS)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DownTo(ctx, 1); err != nil {
			t.Fatalf("DownTo(1): %v", err)
		}
		if slices.Contains(tableNames(t, d), "install_runs") || slices.Contains(columns("mcp_catalog"), "install_scripts") ||
			slices.Contains(columns("mcp_global_servers"), "installed_hash") {
			t.Error("after down: the connector columns or install_runs remain")
		}
		if err := d.Migrate(ctx); err != nil {
			t.Fatalf("Migrate after down: %v", err)
		}
		if _, err := d.CatalogEntryByName(ctx, "checked"); err != nil {
			t.Errorf("entry after down and up: %v", err)
		}
	})
}
