package db_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"patchbay"
	"patchbay/db"
	"patchbay/db/seal"
)

// activation is a valid remote activation of f.userOnly for userID.
func (f *connectorFixture) activation(userID int64, name string) db.UserServer {
	return db.UserServer{UserID: userID, CatalogID: f.userOnly.ID, CatalogName: f.userOnly.Name, Name: name,
		Kind: db.KindRemote, Transport: "streamable-http"}
}

// activate creates an activation and fails the test on error.
func (f *connectorFixture) activate(t *testing.T, u db.UserServer, credential map[string]string) db.UserServer {
	t.Helper()
	s, err := f.d.CreateUserServer(context.Background(), u, credential)
	if err != nil {
		t.Fatalf("CreateUserServer(%d, %s): %v", u.UserID, u.Name, err)
	}
	return s
}

// sameUserServer compares activations ignoring times, which it checks separately.
func sameUserServer(t *testing.T, what string, got, want db.UserServer) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s times: got %v/%v; want %v/%v", what, got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestCreateUserServerRoundTrip(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	in := db.UserServer{UserID: f.uma.ID, CatalogID: f.both.ID, CatalogName: "notes", Name: "my_notes",
		Kind: db.KindLocal, Transport: "stdio", Config: db.ServerConfig{Inputs: map[string]string{"FOLDER": "work"}},
		OAuthProvider: "github", Deliver: `{"env":"TOKEN"}`,
		// Ignored: these come from the store.
		HasCredential: false, InstalledHash: "ignored", LastError: "ignored"}
	cred := map[string]string{"TOKEN": canary(t, "token")}
	s, err := d.CreateUserServer(ctx, in, cred)
	if err != nil {
		t.Fatalf("CreateUserServer: %v", err)
	}
	want := db.UserServer{ID: s.ID, UserID: f.uma.ID, CatalogID: f.both.ID, CatalogName: "notes", Name: "my_notes",
		Kind: db.KindLocal, Transport: "stdio", Config: db.ServerConfig{Inputs: map[string]string{"FOLDER": "work"}},
		HasCredential: true, AuthState: db.AuthNone, OAuthProvider: "github", Deliver: `{"env":"TOKEN"}`,
		CreatedAt: f.clock.Now(), UpdatedAt: f.clock.Now()}
	sameUserServer(t, "CreateUserServer result", s, want)
	wantAudit(t, d, "connector.activate", fmt.Sprintf("connector:%d", s.ID), "name=my_notes catalog=notes", f.uma.ID)

	byID, err := d.UserServerByID(ctx, f.uma.ID, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameUserServer(t, "UserServerByID", byID, want)
	byName, err := d.UserServerByName(ctx, f.uma.ID, "my_notes")
	if err != nil {
		t.Fatal(err)
	}
	sameUserServer(t, "UserServerByName", byName, want)
	got, err := d.UserServerCredential(ctx, f.uma.ID, s.ID)
	if err != nil || !maps.Equal(got, cred) {
		t.Errorf("UserServerCredential: got %v, %v; want the credential", got, err)
	}

	t.Run("a user's own remote connector, no catalog, no credential", func(t *testing.T) {
		s, err := d.CreateUserServer(ctx, db.UserServer{UserID: f.uma.ID, Name: "adhoc", Kind: db.KindRemote,
			Transport: "sse", AuthState: db.AuthPending}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.CatalogID != 0 || s.CatalogName != "" || s.HasCredential || s.AuthState != db.AuthPending || s.Deliver != "{}" {
			t.Errorf("activation: got %+v; want no catalog, no credential, pending, deliver {}", s)
		}
		wantAudit(t, d, "connector.activate", fmt.Sprintf("connector:%d", s.ID), "name=adhoc", f.uma.ID)
		c, err := d.UserServerCredential(ctx, f.uma.ID, s.ID)
		if err != nil || c == nil || len(c) != 0 {
			t.Errorf("UserServerCredential: got %#v, %v; want an empty, non-nil map", c, err)
		}
	})

	t.Run("UserServers is the user's own, sorted by name", func(t *testing.T) {
		f.activate(t, f.activation(f.vic.ID, "aaa-vic"), nil)
		list, err := d.UserServers(ctx, f.uma.ID)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range list {
			names = append(names, s.Name)
		}
		if want := []string{"adhoc", "my_notes"}; !slices.Equal(names, want) {
			t.Errorf("UserServers(uma): got %v; want %v", names, want)
		}
	})
}

func TestCreateUserServerRefuses(t *testing.T) {
	tests := []struct {
		name          string
		change        func(f *connectorFixture, u *db.UserServer)
		code, message string
	}{
		{"bad name", func(f *connectorFixture, u *db.UserServer) { u.Name = "my notes" }, patchbay.EINVALID,
			`"my notes" is not a valid connector name: use 1 to 64 letters, digits, '-' and '_', starting with a letter or digit, with no '__' and no '_' at the end.`},
		{"bad kind", func(f *connectorFixture, u *db.UserServer) { u.Kind = "cloud" }, patchbay.EINVALID,
			`A connector's kind is local or remote, not "cloud".`},
		{"local over http", func(f *connectorFixture, u *db.UserServer) { u.Kind = db.KindLocal }, patchbay.EINVALID,
			`A local connector runs over stdio, not "streamable-http".`},
		{"remote over stdio", func(f *connectorFixture, u *db.UserServer) { u.Transport = "stdio" }, patchbay.EINVALID,
			`A remote connector uses the streamable-http or sse transport, not "stdio".`},
		{"bad auth state", func(f *connectorFixture, u *db.UserServer) { u.AuthState = "maybe" }, patchbay.EINVALID,
			`"maybe" is not a connector sign-in state.`},
		{"bad deliver", func(f *connectorFixture, u *db.UserServer) { u.Deliver = "env" }, patchbay.EINVALID,
			"The delivery settings must be a JSON object."},
		{"unknown user", func(f *connectorFixture, u *db.UserServer) { u.UserID = 9999 }, patchbay.EINVALID, "No such user."},
		{"unknown catalog entry", func(f *connectorFixture, u *db.UserServer) { u.CatalogID = 9999 }, patchbay.EINVALID,
			"No such connector in the catalog."},
		{"global-only catalog entry", func(f *connectorFixture, u *db.UserServer) { u.CatalogID = f.global.ID }, patchbay.EINVALID,
			`The catalog connector "search" is only available as a global connector.`},
		{"duplicate name", func(f *connectorFixture, u *db.UserServer) { u.Name = "taken" }, patchbay.ECONFLICT,
			`You already have a connector named "taken".`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConnectorFixture(t)
			f.activate(t, f.activation(f.uma.ID, "taken"), nil)
			rows, audits := countRows(t, f.d, "mcp_user_servers", ""), auditCount(t, f.d)
			u := f.activation(f.uma.ID, "fresh")
			tt.change(f, &u)
			_, err := f.d.CreateUserServer(context.Background(), u, map[string]string{"K": "v"})
			wantError(t, "CreateUserServer", err, tt.code, tt.message)
			if got := countRows(t, f.d, "mcp_user_servers", ""); got != rows {
				t.Errorf("activation rows: got %d; want %d", got, rows)
			}
			if got := auditCount(t, f.d); got != audits {
				t.Errorf("audit rows: got %d; want %d", got, audits)
			}
		})
	}
}

func TestCreateUserServerFailureLeavesNothing(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d

	t.Run("the same name for another user is fine", func(t *testing.T) {
		f.activate(t, f.activation(f.uma.ID, "mine"), nil)
		f.activate(t, f.activation(f.vic.ID, "mine"), nil)
	})

	t.Run("no keyring with a credential", func(t *testing.T) {
		keys := d.Keys()
		d.SetKeyring(nil)
		defer d.SetKeyring(keys)
		rows, audits := countRows(t, d, "mcp_user_servers", ""), auditCount(t, d)
		_, err := d.CreateUserServer(ctx, f.activation(f.uma.ID, "locked"), map[string]string{"TOKEN": "t"})
		if err == nil {
			t.Fatal("CreateUserServer with a credential and no keyring: got nil; want an error")
		}
		if got := countRows(t, d, "mcp_user_servers", ""); got != rows {
			t.Errorf("activation rows: got %d; want %d (rolled back)", got, rows)
		}
		if got := auditCount(t, d); got != audits {
			t.Errorf("audit rows: got %d; want %d", got, audits)
		}
		_, err = d.UserServerByName(ctx, f.uma.ID, "locked")
		wantError(t, "UserServerByName after failure", err, patchbay.ENOTFOUND, `You have no connector named "locked".`)
		// Without a credential nothing needs sealing, so the keyring is not needed.
		f.activate(t, f.activation(f.uma.ID, "locked"), map[string]string{"EMPTY": ""})
	})
}

func TestUserServerLookupsAreScopedToTheUser(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	secret := canary(t, "uma-credential")
	s := f.activate(t, f.activation(f.uma.ID, "private"), map[string]string{"TOKEN": secret})

	_, err := d.UserServerByID(ctx, f.vic.ID, s.ID)
	wantError(t, "UserServerByID(vic)", err, patchbay.ENOTFOUND, "No such connector.")
	_, err = d.UserServerByName(ctx, f.vic.ID, "private")
	wantError(t, "UserServerByName(vic)", err, patchbay.ENOTFOUND, `You have no connector named "private".`)
	c, err := d.UserServerCredential(ctx, f.vic.ID, s.ID)
	wantError(t, "UserServerCredential(vic)", err, patchbay.ENOTFOUND, "No such connector.")
	if c != nil {
		t.Errorf("UserServerCredential(vic): got %v; want nil", c)
	}
	before := auditCount(t, d)
	err = d.UpdateUserServerCredential(ctx, f.vic.ID, s.ID, map[string]string{"TOKEN": "stolen"}, db.AuthReady)
	wantError(t, "UpdateUserServerCredential(vic)", err, patchbay.ENOTFOUND, "No such connector.")
	err = d.DeleteUserServer(ctx, f.vic.ID, s.ID)
	wantError(t, "DeleteUserServer(vic)", err, patchbay.ENOTFOUND, "No such connector.")
	if list, err := d.UserServers(ctx, f.vic.ID); err != nil || len(list) != 0 {
		t.Errorf("UserServers(vic): got %v, %v; want none", list, err)
	}
	if got := auditCount(t, d); got != before {
		t.Errorf("audit rows: got %d; want %d", got, before)
	}
	got, err := d.UserServerCredential(ctx, f.uma.ID, s.ID)
	if err != nil || got["TOKEN"] != secret {
		t.Errorf("uma's credential after vic's attempts: got %v, %v; want unchanged", got, err)
	}
}

func TestUserServerCredentialIsSealed(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	secret, other := canary(t, "uma-token"), canary(t, "vic-token")
	s := f.activate(t, f.activation(f.uma.ID, "sealed-notes"), map[string]string{"TOKEN": secret})
	v := f.activate(t, f.activation(f.vic.ID, "sealed-notes"), map[string]string{"TOKEN": other})

	t.Run("absent from the files and the audit log", func(t *testing.T) {
		var cell string
		if err := d.Readers().GetContext(ctx, &cell, `SELECT credential_sealed FROM mcp_user_servers WHERE id = ?`, s.ID); err != nil {
			t.Fatal(err)
		}
		if want := "v1." + d.Keys().Primary().ID + "."; !strings.HasPrefix(cell, want) {
			t.Errorf("sealed cell: got %.20q...; want prefix %q", cell, want)
		}
		if strings.Contains(dumpTable(t, d, "audit_log"), secret) {
			t.Error("audit_log holds the credential")
		}
		checkpoint(t, d)
		if !fileContains(t, d.Path(), "sealed-notes") {
			t.Fatal("control: the activation name is not in the database file; the search is broken")
		}
		assertNotInFiles(t, secret, dbFiles(d.Path())...)
		assertNotInFiles(t, other, dbFiles(d.Path())...)
	})

	t.Run("lookups never carry it", func(t *testing.T) {
		all, err := d.AllUserServers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s := fmt.Sprintf("%+v %#v", all, all); strings.Contains(s, secret) || strings.Contains(s, "v1.") {
			t.Error("AllUserServers formats with a credential or its sealed value")
		}
	})

	t.Run("a cell copied to another user's row does not open", func(t *testing.T) {
		if _, err := d.Writer().ExecContext(ctx, `UPDATE mcp_user_servers SET credential_sealed =
			(SELECT credential_sealed FROM mcp_user_servers WHERE id = ?) WHERE id = ?`, s.ID, v.ID); err != nil {
			t.Fatal(err)
		}
		got, err := d.UserServerCredential(ctx, f.vic.ID, v.ID)
		wantCode(t, "UserServerCredential(moved cell)", err, patchbay.EINTERNAL)
		if !errors.Is(err, seal.ErrDecrypt) {
			t.Errorf("error: got %v; want one wrapping seal.ErrDecrypt", err)
		}
		if got != nil || strings.Contains(err.Error(), secret) {
			t.Errorf("failure: got %v, %v; want no secret anywhere", got, err)
		}
		if c, err := d.UserServerCredential(ctx, f.uma.ID, s.ID); err != nil || c["TOKEN"] != secret {
			t.Errorf("the original still opens: got %v, %v", c, err)
		}
	})
}

func TestUpdateUserServerCredential(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	s := f.activate(t, f.activation(f.uma.ID, "signin"), map[string]string{"OLD": "o", "KEEP": "k"})
	f.clock.Advance(time.Minute)

	fresh := map[string]string{"access_token": canary(t, "access"), "refresh_token": canary(t, "refresh")}
	if err := d.UpdateUserServerCredential(ctx, f.uma.ID, s.ID, fresh, db.AuthReady); err != nil {
		t.Fatalf("UpdateUserServerCredential: %v", err)
	}
	wantAudit(t, d, "connector.credential", fmt.Sprintf("connector:%d", s.ID), "auth_state=ready", f.uma.ID)
	got, err := d.UserServerCredential(ctx, f.uma.ID, s.ID)
	if err != nil || !maps.Equal(got, fresh) {
		t.Errorf("credential: got %v, %v; want it replaced, old keys gone", got, err)
	}
	u, err := d.UserServerByID(ctx, f.uma.ID, s.ID)
	if err != nil || u.AuthState != db.AuthReady || !u.HasCredential || !u.UpdatedAt.Equal(f.clock.Now()) {
		t.Errorf("activation: got %+v, %v; want ready, with credential, updated now", u, err)
	}

	t.Run("an empty credential removes it", func(t *testing.T) {
		if err := d.UpdateUserServerCredential(ctx, f.uma.ID, s.ID, nil, db.AuthNeedsSignIn); err != nil {
			t.Fatal(err)
		}
		u, err := d.UserServerByID(ctx, f.uma.ID, s.ID)
		if err != nil || u.HasCredential || u.AuthState != db.AuthNeedsSignIn {
			t.Errorf("activation: got %+v, %v; want no credential, needs_signin", u, err)
		}
	})

	t.Run("an unknown state is invalid", func(t *testing.T) {
		err := d.UpdateUserServerCredential(ctx, f.uma.ID, s.ID, fresh, "")
		wantError(t, "UpdateUserServerCredential", err, patchbay.EINVALID, `"" is not a connector sign-in state.`)
	})
}

func TestSetUserServerInstallResult(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	s := f.activate(t, f.activation(f.uma.ID, "installed"), nil)
	steps := []struct{ hash, lastError, wantHash string }{
		{"h1", "", "h1"},
		{"", "npm ci failed", "h1"},
		{"h2", "", "h2"},
	}
	for _, st := range steps {
		if err := f.d.SetUserServerInstallResult(ctx, s.ID, st.hash, st.lastError); err != nil {
			t.Fatal(err)
		}
		got, err := f.d.UserServerByID(ctx, f.uma.ID, s.ID)
		if err != nil || got.InstalledHash != st.wantHash || got.LastError != st.lastError {
			t.Errorf("after (%q, %q): got hash %q, error %q, %v; want %q, %q", st.hash, st.lastError,
				got.InstalledHash, got.LastError, err, st.wantHash, st.lastError)
		}
	}
	err := f.d.SetUserServerInstallResult(ctx, 9999, "h", "")
	wantError(t, "SetUserServerInstallResult(unknown)", err, patchbay.ENOTFOUND, "No such connector.")
}

func TestDeleteUserServer(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	s := f.activate(t, f.activation(f.uma.ID, "goner"), map[string]string{"K": "v"})
	if err := f.d.DeleteUserServer(ctx, f.uma.ID, s.ID); err != nil {
		t.Fatalf("DeleteUserServer: %v", err)
	}
	wantAudit(t, f.d, "connector.deactivate", fmt.Sprintf("connector:%d", s.ID), "name=goner", f.uma.ID)
	_, err := f.d.UserServerByID(ctx, f.uma.ID, s.ID)
	wantCode(t, "UserServerByID after delete", err, patchbay.ENOTFOUND)
	err = f.d.DeleteUserServer(ctx, f.uma.ID, s.ID)
	wantCode(t, "DeleteUserServer again", err, patchbay.ENOTFOUND)
	// The name is free again.
	f.activate(t, f.activation(f.uma.ID, "goner"), nil)
}

func TestAllUserServers(t *testing.T) {
	ctx := context.Background()
	f := newConnectorFixture(t)
	d := f.d
	ids, err := d.UserIDsWithServers(ctx)
	if err != nil || ids == nil || len(ids) != 0 {
		t.Errorf("UserIDsWithServers on an empty store: got %#v, %v; want an empty list", ids, err)
	}
	f.activate(t, f.activation(f.vic.ID, "b"), nil)
	f.activate(t, f.activation(f.uma.ID, "z"), map[string]string{"K": "v"})
	f.activate(t, f.activation(f.vic.ID, "a"), map[string]string{"K": "v"})
	f.activate(t, f.activation(f.uma.ID, "m"), nil)

	all, err := d.AllUserServers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range all {
		got = append(got, fmt.Sprintf("%d/%s/%v", s.UserID, s.Name, s.HasCredential))
	}
	want := []string{
		fmt.Sprintf("%d/m/false", f.uma.ID), fmt.Sprintf("%d/z/true", f.uma.ID),
		fmt.Sprintf("%d/a/true", f.vic.ID), fmt.Sprintf("%d/b/false", f.vic.ID),
	}
	if !slices.Equal(got, want) {
		t.Errorf("AllUserServers: got %v; want %v", got, want)
	}
	ids, err = d.UserIDsWithServers(ctx)
	if want := []int64{f.uma.ID, f.vic.ID}; err != nil || !slices.Equal(ids, want) {
		t.Errorf("UserIDsWithServers: got %v, %v; want %v", ids, err, want)
	}
}
