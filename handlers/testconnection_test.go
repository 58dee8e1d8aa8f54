package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"patchbay"
	"patchbay/db"
)

// bearerRemote runs a real MCP server (tools fetch and search) that
// answers only requests with "Authorization: Bearer <key>", and returns
// its endpoint: /mcp for streamable HTTP, /sse for SSE. Call it before
// newTestServer, so it closes after the connector runtimes.
func bearerRemote(t *testing.T, transport, key string) string {
	t.Helper()
	s := server.NewMCPServer("remote", "1")
	s.AddTool(mcp.NewTool("search", mcp.WithString("q")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("remote results"), nil
	})
	s.AddTool(mcp.NewTool("fetch"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("fetched"), nil
	})
	var h http.Handler = server.NewStreamableHTTPServer(s)
	path := "/mcp"
	if transport == "sse" {
		h, path = server.NewSSEServer(s), "/sse"
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + path
}

// remoteEntry is a remote catalog entry whose API key is sent as a
// bearer token.
func remoteEntry(name, scope, transport, endpoint string) db.CatalogEntry {
	return db.CatalogEntry{
		Name: name, Title: "Remote " + name, Kind: db.KindRemote, Scope: scope, Transport: transport, URL: endpoint,
		AuthType: "api_key",
		Inputs: []db.CatalogInput{
			{Name: "API_KEY", Title: "API key", Secret: true, Required: true, Header: "Authorization", Format: "Bearer {}"},
		},
	}
}

// whereEntry is a local entry that runs the echo server through a script
// that first writes its working directory to the file where, so a test
// can see where a test connection ran.
func whereEntry(t *testing.T, name, scope, where string) db.CatalogEntry {
	t.Helper()
	src := t.TempDir()
	script := "#!/bin/sh\npwd > \"$WHERE_FILE\"\nexec " + echoServer(t) + "\n"
	if err := os.WriteFile(filepath.Join(src, "run.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return db.CatalogEntry{
		Name: name, Kind: db.KindLocal, Scope: scope, Transport: "stdio",
		Command: "./run.sh", Source: src, Env: map[string]string{"WHERE_FILE": where},
	}
}

// testResult returns the Test connection fragment of a response, after
// checking it is one: a 200 fragment, not a page.
func testResult(t *testing.T, r response) *goquery.Selection {
	t.Helper()
	wantStatus(t, r, http.StatusOK)
	if isFullPage(r.body) {
		t.Fatalf("got a full page; want the result fragment: %.300q", r.body)
	}
	res := r.doc(t).Find(`[data-testid="test-connection-result"]`)
	if res.Length() != 1 {
		t.Fatalf("got %d results in %.300q; want 1", res.Length(), r.body)
	}
	return res
}

// wantConnected checks a result that lists the tools.
func wantConnected(t *testing.T, r response, tools string) {
	t.Helper()
	res := testResult(t, r)
	if got := res.AttrOr("data-ok", ""); got != "true" {
		t.Fatalf("got a failed test %q; want connected", strings.TrimSpace(res.Text()))
	}
	if got := strings.Join(strings.Fields(res.Text()), " "); got != "Connected: "+tools {
		t.Errorf("got %q; want %q", got, "Connected: "+tools)
	}
}

// wantTestFailed checks a result that says why the connector did not
// connect.
func wantTestFailed(t *testing.T, r response, want string) {
	t.Helper()
	res := testResult(t, r)
	if got := res.AttrOr("data-ok", ""); got != "false" {
		t.Fatalf("got %q; want a failed test", strings.TrimSpace(res.Text()))
	}
	if got := res.Find(`[data-testid="test-connection-error"]`).Text(); !strings.Contains(got, want) {
		t.Errorf("got error %q; want it to say %q", got, want)
	}
}

// wantTestButton checks a form's Test connection button and result area.
func wantTestButton(t *testing.T, form *goquery.Selection, action, area string) {
	t.Helper()
	b := form.Find(`[data-testid="test-connection"]`)
	want := map[string]string{
		"type": "button", "hx-post": action, "hx-include": "closest form", "hx-target": "#" + area, "hx-swap": "innerHTML",
	}
	for k, v := range want {
		if got := b.AttrOr(k, ""); got != v {
			t.Errorf("test button: got %s=%q; want %q", k, got, v)
		}
	}
	if form.Find("#"+area).AttrOr("data-testid", "") != "test-connection-area" {
		t.Errorf("got no result area #%s in the form", area)
	}
	if form.Find(`button[type="submit"]`).Length() != 1 {
		t.Error("got no submit button next to Test connection; want the form still to save")
	}
}

// nothingStored checks that tests stored nothing: no shared connector,
// no activation, no install run.
func nothingStored(t *testing.T, ts *testServer, names ...string) {
	t.Helper()
	ctx := context.Background()
	if gs, _ := ts.db.GlobalServers(ctx); len(gs) != 0 {
		t.Errorf("got shared connectors %+v; want none", gs)
	}
	users, _ := ts.db.ListUsers(ctx)
	for _, u := range users {
		if rows, _ := ts.db.UserServers(ctx, u.ID); len(rows) != 0 {
			t.Errorf("got activations %+v for %s; want none", rows, u.Email)
		}
		for _, name := range names {
			if _, err := ts.db.LatestInstallRun(ctx, db.InstallScopeUser, u.ID, name); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
				t.Errorf("got an install run of %s for %s (%v); want none", name, u.Email, err)
			}
		}
	}
	for _, name := range names {
		if _, err := ts.db.LatestInstallRun(ctx, db.InstallScopeGlobal, 0, name); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
			t.Errorf("got a shared install run of %s (%v); want none", name, err)
		}
	}
}

func TestTestConnectionFromTheAdminForm(t *testing.T) {
	t.Parallel()
	const key, wrong = "admin-remote-key-1234", "admin-wrong-key-5678"
	streamable := bearerRemote(t, "streamable-http", key)
	sse := bearerRemote(t, "sse", key)
	ts := newTestServer(t, serverOpts{})
	admin := ts.signIn(t, ada)
	user := ts.signIn(t, uma)
	ts.addCatalog(t, remoteEntry("remote-search", db.ScopeBoth, "streamable-http", streamable))
	ts.addCatalog(t, remoteEntry("remote-sse", db.ScopeGlobal, "sse", sse))
	where := filepath.Join(t.TempDir(), "where")
	ts.addCatalog(t, whereEntry(t, "local-echo", db.ScopeGlobal, where))
	broken := echoEntry(t, "broken", db.ScopeBoth)
	broken.Command = "/nonexistent/patchbay-no-such-command"
	ts.addCatalog(t, broken)

	t.Run("the add form has the button beside the submit", func(t *testing.T) {
		r := admin.get(t, "/admin/connectors/new?catalog=remote-search", htmxReq)
		wantStatus(t, r, http.StatusOK)
		wantTestButton(t, r.doc(t).Find(`[data-testid="connector-form"]`), "/admin/connectors/test", "connector-test-result")
	})

	t.Run("a remote entry with the right key lists its tools", func(t *testing.T) {
		for _, name := range []string{"remote-search", "remote-sse"} {
			wantConnected(t, admin.htmxPost(t, "/admin/connectors/test", url.Values{
				"catalog": {name}, "name": {name}, "enable": {"1"}, "secret.API_KEY": {key},
			}), "2 tools: fetch, search")
		}
	})

	t.Run("a wrong key says auth failed and is not echoed", func(t *testing.T) {
		for name, endpoint := range map[string]string{"remote-search": streamable, "remote-sse": sse} {
			r := admin.htmxPost(t, "/admin/connectors/test", url.Values{"catalog": {name}, "name": {name}, "secret.API_KEY": {wrong}})
			wantTestFailed(t, r, "auth failed: HTTP 401 from "+endpoint)
			if strings.Contains(r.body, wrong) {
				t.Errorf("got the typed key in the response: %q", r.body)
			}
		}
	})

	t.Run("a missing key is named", func(t *testing.T) {
		wantTestFailed(t, admin.htmxPost(t, "/admin/connectors/test", url.Values{"catalog": {"remote-search"}}), "remote-search needs: API key.")
	})

	t.Run("a local entry runs in a scratch directory that is removed", func(t *testing.T) {
		wantConnected(t, admin.htmxPost(t, "/admin/connectors/test", url.Values{"catalog": {"local-echo"}, "name": {"local-echo"}}),
			"3 tools: echo, search, sleep")
		b, err := os.ReadFile(where)
		if err != nil {
			t.Fatalf("the connector did not run: %v", err)
		}
		ran := strings.TrimSpace(string(b))
		scratch := filepath.Dir(filepath.Dir(ran))
		if filepath.Base(ran) != "local-echo" || !strings.HasSuffix(scratch, filepath.Join("connectors", "scratch")) {
			t.Fatalf("it ran in %s; want <data-dir>/connectors/scratch/<random>/local-echo", ran)
		}
		if left, err := os.ReadDir(scratch); err != nil || len(left) != 0 {
			t.Errorf("got %v left under %s (%v); want nothing", left, scratch, err)
		}
		for _, sub := range []string{"global", "users"} {
			if _, err := os.Stat(filepath.Join(filepath.Dir(scratch), sub)); !os.IsNotExist(err) {
				t.Errorf("got connectors/%s (%v); want no install", sub, err)
			}
		}
	})

	t.Run("a local entry whose command does not exist says so", func(t *testing.T) {
		wantTestFailed(t, admin.htmxPost(t, "/admin/connectors/test", url.Values{"catalog": {"broken"}}),
			"command not found: /nonexistent/patchbay-no-such-command")
	})

	t.Run("an unknown entry is not found", func(t *testing.T) {
		wantErrorFragment(t, admin.htmxPost(t, "/admin/connectors/test", url.Values{"catalog": {"nope"}}), http.StatusNotFound)
	})

	t.Run("a user may not use it", func(t *testing.T) {
		wantErrorFragment(t, user.htmxPost(t, "/admin/connectors/test", url.Values{"catalog": {"remote-search"}, "secret.API_KEY": {key}}), http.StatusForbidden)
		wantErrorPage(t, user.formPost(t, "/admin/connectors/test", url.Values{"catalog": {"remote-search"}, "secret.API_KEY": {key}}), http.StatusForbidden)
	})

	nothingStored(t, ts, "remote-search", "remote-sse", "local-echo", "broken")

	t.Run("the settings form tests with the stored key when the field is blank", func(t *testing.T) {
		ctx := context.Background()
		e, err := ts.db.CatalogEntryByName(ctx, "remote-search")
		if err != nil {
			t.Fatal(err)
		}
		g, err := ts.db.CreateGlobalServer(ctx, 0, db.GlobalServer{CatalogID: e.ID, Name: "remote-shared"}, map[string]string{"API_KEY": key})
		if err != nil {
			t.Fatal(err)
		}
		settings := admin.get(t, "/admin/connectors/"+itoa64(g.ID)+"/settings", htmxReq)
		wantStatus(t, settings, http.StatusOK)
		form := settings.doc(t).Find(`[data-testid="connector-form"]`)
		wantTestButton(t, form, "/admin/connectors/test", "connector-test-result")
		if got := form.Find(`input[type="hidden"][name="id"]`).AttrOr("value", ""); got != itoa64(g.ID) {
			t.Errorf("got hidden id %q; want %d", got, g.ID)
		}
		wantConnected(t, admin.htmxPost(t, "/admin/connectors/test", url.Values{"id": {itoa64(g.ID)}, "secret.API_KEY": {""}}), "2 tools: fetch, search")
		r := admin.htmxPost(t, "/admin/connectors/test", url.Values{"id": {itoa64(g.ID)}, "secret.API_KEY": {wrong}})
		wantTestFailed(t, r, "auth failed: HTTP 401")
		if strings.Contains(r.body, wrong) || strings.Contains(r.body, key) {
			t.Errorf("got a key in the response: %q", r.body)
		}
		if sec, _ := ts.db.GlobalServerSecrets(ctx, g.ID); sec["API_KEY"] != key {
			t.Error("got the stored key changed by a test; want it kept")
		}
		wantErrorFragment(t, admin.htmxPost(t, "/admin/connectors/test", url.Values{"id": {"x"}}), http.StatusBadRequest)
		wantErrorFragment(t, admin.htmxPost(t, "/admin/connectors/test", url.Values{"id": {"99999"}}), http.StatusNotFound)
	})
}

func TestTestConnectionFromTheMarketplace(t *testing.T) {
	t.Parallel()
	const key, wrong = "user-remote-key-1234", "user-wrong-key-5678"
	endpoint := bearerRemote(t, "streamable-http", key)
	ts := newTestServer(t, serverOpts{})
	user := ts.signIn(t, uma)
	ts.addCatalog(t, remoteEntry("remote-search", db.ScopeUser, "streamable-http", endpoint))
	ts.addCatalog(t, echoEntry(t, "echo", db.ScopeUser))
	broken := echoEntry(t, "broken", db.ScopeUser)
	broken.Command = "/nonexistent/patchbay-no-such-command"
	ts.addCatalog(t, broken)
	ts.addCatalog(t, echoEntry(t, "admins-only", db.ScopeGlobal))

	t.Run("each activate form has the button", func(t *testing.T) {
		r := user.get(t, "/marketplace")
		wantStatus(t, r, http.StatusOK)
		for _, name := range []string{"remote-search", "echo", "broken"} {
			form := r.doc(t).Find(`[data-catalog="` + name + `"] [data-testid="activate-form"]`)
			wantTestButton(t, form, "/connectors/test", "activate-"+name+"-test-result")
		}
	})

	t.Run("the right key lists the tools, a wrong one says why", func(t *testing.T) {
		wantConnected(t, user.htmxPost(t, "/connectors/test", url.Values{"catalog": {"remote-search"}, "name": {"mine"}, "secret.API_KEY": {key}}),
			"2 tools: fetch, search")
		r := user.htmxPost(t, "/connectors/test", url.Values{"catalog": {"remote-search"}, "name": {"mine"}, "secret.API_KEY": {wrong}})
		wantTestFailed(t, r, "auth failed: HTTP 401 from "+endpoint)
		if strings.Contains(r.body, wrong) {
			t.Errorf("got the typed key in the response: %q", r.body)
		}
	})

	t.Run("local entries", func(t *testing.T) {
		wantConnected(t, user.htmxPost(t, "/connectors/test", url.Values{"catalog": {"echo"}}), "3 tools: echo, search, sleep")
		wantTestFailed(t, user.htmxPost(t, "/connectors/test", url.Values{"catalog": {"broken"}}), "command not found")
		wantTestFailed(t, user.htmxPost(t, "/connectors/test", url.Values{"catalog": {"admins-only"}}), "shared by an administrator")
	})

	nothingStored(t, ts, "remote-search", "echo", "broken", "admins-only")
}
