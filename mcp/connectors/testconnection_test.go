package connectors_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"patchbay"
	"patchbay/db"
	pbmcp "patchbay/mcp"
)

// nothingKept checks that a test connection left no trace: no install
// run, no row, no files but the (empty) scratch directory.
func nothingKept(t *testing.T, e *env, name string) {
	t.Helper()
	ctx := context.Background()
	for _, p := range []*patchbay.Principal{e.admin, e.user, e.other} {
		if runs, _ := e.db.InstallRuns(ctx, db.InstallScopeUser, p.User.ID, name, 0); len(runs) != 0 {
			t.Errorf("%s: %d user install runs recorded", p.User.Email, len(runs))
		}
		if rows, _ := e.db.UserServers(ctx, p.User.ID); len(rows) != 0 {
			t.Errorf("%s: activations %+v", p.User.Email, rows)
		}
	}
	if runs, _ := e.db.InstallRuns(ctx, db.InstallScopeGlobal, 0, name, 0); len(runs) != 0 {
		t.Errorf("%d global install runs recorded", len(runs))
	}
	if gs, _ := e.db.GlobalServers(ctx); len(gs) != 0 {
		t.Errorf("shared connectors %+v", gs)
	}
	root := filepath.Join(e.dataDir, "connectors")
	for _, sub := range []string{"users", "global"} {
		if _, err := os.Stat(filepath.Join(root, sub)); !os.IsNotExist(err) {
			t.Errorf("connectors/%s exists: %v", sub, err)
		}
	}
	left, _ := os.ReadDir(filepath.Join(root, "scratch"))
	if len(left) != 0 {
		t.Errorf("scratch directory not empty: %v", left)
	}
	if len(e.rt.Global().States()) != 0 {
		t.Errorf("global sessions: %+v", e.rt.Global().States())
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// A local entry is installed (dependencies and verify included) into a
// scratch directory, connected there and removed with it.
func TestTestConnectionLocal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.pyEntry("websearch", copySource(t, "pyserver"))
	tools, err := e.rt.TestConnection(ctx, e.user, "websearch", nil, map[string]string{"SEARCH_API_KEY": "sk-test-1234"})
	if err != nil {
		t.Fatalf("TestConnection: %v", err)
	}
	if got := sorted(tools); !slices.Equal(got, []string{"env", "search"}) {
		t.Errorf("tools: got %v; want env and search (tinypkg must come from the scratch install)", got)
	}
	nothingKept(t, e, "websearch")
}

// A remote entry is connected with the headers its inputs make.
func TestTestConnectionRemote(t *testing.T) {
	t.Parallel()
	for _, transport := range remoteTransports {
		t.Run(string(transport), func(t *testing.T) {
			t.Parallel()
			const key = "remote-test-key-1234"
			remote := newRemoteServer(t, transport, key)
			e := newEnv(t)
			ctx := context.Background()
			e.remoteEntry("websearch", transport, remote.URL)

			tools, err := e.rt.TestConnection(ctx, e.user, "websearch", nil, map[string]string{"API_KEY": key})
			if err != nil {
				t.Fatalf("TestConnection: %v", err)
			}
			if got := sorted(tools); !slices.Equal(got, []string{"fetch", "search"}) {
				t.Errorf("tools: got %v; want fetch and search", got)
			}
			for _, a := range remote.seen() {
				if a != "Bearer "+key {
					t.Errorf("the remote server saw Authorization %q", a)
				}
			}

			const wrong = "remote-wrong-key-5678"
			_, err = e.rt.TestConnection(ctx, e.user, "websearch", nil, map[string]string{"API_KEY": wrong})
			want := "auth failed: HTTP 401 from " + remote.URL
			if patchbay.ErrorCode(err) != patchbay.EINVALID || patchbay.ErrorMessage(err) != want {
				t.Errorf("wrong key: got %v (code %s); want EINVALID %q", err, patchbay.ErrorCode(err), want)
			}
			nothingKept(t, e, "websearch")
		})
	}
}

// Every failure is an EINVALID error that says what went wrong, with the
// secrets given redacted, and leaves nothing behind.
func TestTestConnectionErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const secret = "sk-canary-test-9876"
	keyInput := []db.CatalogInput{{Name: "SEARCH_API_KEY", Title: "API key", Secret: true, Required: true}}

	e.catalog(db.CatalogEntry{Name: "nocmd", Kind: db.KindLocal, Transport: "stdio", Command: "no-such-connector-binary", Source: copySource(t, "pyserver")})
	crashes := copySource(t, "pyserver")
	os.WriteFile(filepath.Join(crashes, "server.py"), []byte("import os, sys\nsys.exit('bad key: ' + os.environ['SEARCH_API_KEY'])\n"), 0o644)
	e.catalog(db.CatalogEntry{Name: "crashes", Kind: db.KindLocal, Transport: "stdio", Command: "python3", Args: []string{"server.py"}, Source: crashes, Inputs: keyInput})
	badVerify := copySource(t, "pyserver")
	os.WriteFile(filepath.Join(badVerify, "verify.py"), []byte("raise SystemExit(4)\n"), 0o644)
	e.pyEntry("badverify", badVerify)
	noLock := copySource(t, "nodeserver")
	os.Remove(filepath.Join(noLock, "package-lock.json"))
	e.catalog(db.CatalogEntry{Name: "nolock", Kind: db.KindLocal, Transport: "stdio", Command: "node", Args: []string{"server.js"}, Source: noLock})
	e.catalog(db.CatalogEntry{Name: "needskey", Kind: db.KindLocal, Transport: "stdio", Command: "python3", Args: []string{"server.py"}, Source: copySource(t, "pyserver"), Inputs: keyInput})

	for _, c := range []struct {
		name, want string
		secrets    map[string]string
	}{
		{"nocmd", "command not found: no-such-connector-binary", nil},
		{"crashes", "exited with code 1: bad key: [REDACTED]", map[string]string{"SEARCH_API_KEY": secret}},
		{"badverify", "verify failed", map[string]string{"SEARCH_API_KEY": secret}},
		{"nolock", "no package-lock.json", nil},
		{"needskey", "needskey needs: API key.", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tools, err := e.rt.TestConnection(ctx, e.admin, c.name, nil, c.secrets)
			if err == nil {
				t.Fatalf("got tools %v; want an error", tools)
			}
			msg := patchbay.ErrorMessage(err)
			if patchbay.ErrorCode(err) != patchbay.EINVALID || !strings.Contains(msg, c.want) {
				t.Errorf("got %q (code %s); want EINVALID with %q", msg, patchbay.ErrorCode(err), c.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the secret: %q", err)
			}
			nothingKept(t, e, c.name)
		})
	}
}

// Testing needs the capability activating the entry would need; catalog
// administrators may test anything, global-only entries included.
func TestTestConnectionAccess(t *testing.T) {
	t.Parallel()
	remote := newRemoteServer(t, pbmcp.TransportStreamableHTTP, "remote-key-1234")
	e := newEnv(t)
	ctx := context.Background()
	e.echoEntry("echo")
	e.catalog(db.CatalogEntry{Name: "sharedonly", Scope: db.ScopeGlobal, Kind: db.KindLocal, Transport: "stdio", Command: filepath.Join(binDir, "echo"), Source: copySource(t, "pyserver")})
	e.remoteEntry("websearch", pbmcp.TransportStreamableHTTP, remote.URL)
	role := func(caps ...patchbay.Capability) *patchbay.Principal {
		return &patchbay.Principal{User: e.other.User, Role: patchbay.Role{Name: "custom", Capabilities: caps}}
	}
	key := map[string]string{"API_KEY": "remote-key-1234"}
	for _, c := range []struct {
		name    string
		p       *patchbay.Principal
		entry   string
		secrets map[string]string
		code    string
	}{
		{"local with the local capability", role(patchbay.CapRegisterLocalFromCatalog), "echo", nil, ""},
		{"local without it", role(patchbay.CapRegisterRemote), "echo", nil, patchbay.EFORBIDDEN},
		{"remote with the remote capability", role(patchbay.CapRegisterRemote), "websearch", key, ""},
		{"remote without it", role(patchbay.CapRegisterLocalFromCatalog), "websearch", key, patchbay.EFORBIDDEN},
		{"catalog admin, remote", role(patchbay.CapManageCatalog), "websearch", key, ""},
		{"catalog admin, local", role(patchbay.CapManageCatalog), "echo", nil, ""},
		{"catalog admin, global-only", role(patchbay.CapManageCatalog), "sharedonly", nil, ""},
		{"user, global-only", e.user, "sharedonly", nil, patchbay.EINVALID},
		{"support, remote", e.support, "websearch", key, ""},
		{"unknown entry", e.admin, "nope", nil, patchbay.ENOTFOUND},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(remote.seen())
			tools, err := e.rt.TestConnection(ctx, c.p, c.entry, nil, c.secrets)
			if got := patchbay.ErrorCode(err); c.code == "" && err != nil || c.code != "" && got != c.code {
				t.Fatalf("got tools %v, error %v; want code %q", tools, err, c.code)
			}
			if c.code != "" && c.entry == "websearch" && len(remote.seen()) != before {
				t.Error("a refused test reached the remote server")
			}
		})
	}
	nothingKept(t, e, "echo")
}

// The settings form of a shared connector tests with the stored secret
// when its field is left blank.
func TestTestGlobalConnectionUsesStoredSecrets(t *testing.T) {
	t.Parallel()
	const key = "remote-stored-key-1234"
	remote := newRemoteServer(t, pbmcp.TransportSSE, key)
	e := newEnv(t)
	ctx := context.Background()
	entry := e.remoteEntry("websearch", pbmcp.TransportSSE, remote.URL)
	g, _, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: entry.ID}, map[string]string{"API_KEY": key})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := e.rt.TestGlobalConnection(ctx, e.admin, g.ID, nil, map[string]string{})
	if err != nil || len(tools) != 2 {
		t.Fatalf("with the stored key: got %v, %v; want two tools", tools, err)
	}
	_, err = e.rt.TestGlobalConnection(ctx, e.admin, g.ID, nil, map[string]string{"API_KEY": "remote-typed-wrong-key"})
	if !strings.Contains(patchbay.ErrorMessage(err), "auth failed: HTTP 401") {
		t.Errorf("with a typed wrong key: got %v; want auth failed", err)
	}
	if _, err := e.rt.TestGlobalConnection(ctx, e.user, g.ID, nil, nil); patchbay.ErrorCode(err) != patchbay.EFORBIDDEN {
		t.Errorf("as a user: got %v; want forbidden", err)
	}
	if sec, _ := e.db.GlobalServerSecrets(ctx, g.ID); sec["API_KEY"] != key {
		t.Error("testing changed the stored key")
	}
	if runs, _ := e.db.InstallRuns(ctx, db.InstallScopeGlobal, 0, "websearch", 0); len(runs) != 0 {
		t.Errorf("testing recorded %d install runs", len(runs))
	}
}
