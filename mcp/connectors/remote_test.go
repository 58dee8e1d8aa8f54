package connectors_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"patchbay"
	"patchbay/db"
	pbmcp "patchbay/mcp"
	"patchbay/mcp/connectors"
)

// remoteServer is a real MCP server over HTTP that wants
// "Authorization: Bearer <key>" on every request (401 otherwise) and
// records the Authorization headers it was sent (but see the DELETE
// below).
type remoteServer struct {
	// URL is the MCP endpoint: /mcp for streamable HTTP, /sse for SSE.
	URL string

	mu    sync.Mutex
	auths []string
}

func newRemoteServer(t *testing.T, transport pbmcp.Transport, key string) *remoteServer {
	t.Helper()
	s := server.NewMCPServer("remote", "1")
	s.AddTool(mcp.NewTool("search", mcp.WithString("q")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("remote results for " + req.GetString("q", "")), nil
	})
	s.AddTool(mcp.NewTool("fetch"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("fetched"), nil
	})
	var h http.Handler
	path := "/mcp"
	if transport == pbmcp.TransportSSE {
		h, path = server.NewSSEServer(s), "/sse"
	} else {
		h = server.NewStreamableHTTPServer(s)
	}
	rs := &remoteServer{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		rs.mu.Lock()
		// mcp-go ends a streamable-HTTP session with a DELETE that carries
		// none of the client's headers (v1.2.1), so it is not counted: it
		// is answered 401 like any request without the key.
		if r.Method != http.MethodDelete {
			rs.auths = append(rs.auths, got)
		}
		rs.mu.Unlock()
		if got != "Bearer "+key {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	// Made before newEnv, so this cleanup runs after the runtimes' Close:
	// their streams end before the server closes.
	t.Cleanup(ts.Close)
	rs.URL = ts.URL + path
	return rs
}

// seen returns the Authorization headers received so far.
func (rs *remoteServer) seen() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.auths...)
}

// remoteEntry is a remote catalog entry whose API key becomes a bearer
// header.
func (e *env) remoteEntry(name string, transport pbmcp.Transport, url string) db.CatalogEntry {
	return e.catalog(db.CatalogEntry{
		Name: name, Title: "Remote search", Kind: db.KindRemote, Transport: string(transport), URL: url,
		AuthType: "api_key",
		Inputs: []db.CatalogInput{
			{Name: "API_KEY", Title: "API key", Secret: true, Required: true, Header: "Authorization", Format: "Bearer {}"},
		},
	})
}

var remoteTransports = []pbmcp.Transport{pbmcp.TransportStreamableHTTP, pbmcp.TransportSSE}

// A user activates a remote connector with their key: it is ready, its
// tools answer through ForUser, and every request carried the bearer.
func TestActivateRemoteConnector(t *testing.T) {
	t.Parallel()
	for _, transport := range remoteTransports {
		t.Run(string(transport), func(t *testing.T) {
			t.Parallel()
			const key = "remote-user-key-1234"
			remote := newRemoteServer(t, transport, key)
			e := newEnv(t)
			ctx := context.Background()
			e.remoteEntry("websearch", transport, remote.URL)

			j, err := e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "websearch", Secrets: map[string]string{"API_KEY": key}})
			wait(t, j, err)

			view, err := e.rt.ForUser(ctx, e.user.User)
			if err != nil {
				t.Fatal(err)
			}
			if st := stateOf(view, "websearch"); st.Phase != pbmcp.PhaseReady {
				t.Fatalf("state: got %+v; want ready", st)
			}
			if got := callText(t, view, "websearch__search", map[string]any{"q": "go"}); got != "remote results for go" {
				t.Errorf("search: got %q; want the remote server's answer", got)
			}
			seen := remote.seen()
			if len(seen) == 0 {
				t.Fatal("the remote server saw no request")
			}
			for _, a := range seen {
				if a != "Bearer "+key {
					t.Errorf("the remote server saw Authorization %q; want the bearer on every request", a)
				}
			}
			row, err := e.db.UserServerByName(ctx, e.user.User.ID, "websearch")
			if err != nil || row.Kind != db.KindRemote || !row.HasCredential || row.AuthState != db.AuthReady {
				t.Errorf("row: got %+v, %v; want a remote activation with its credential", row, err)
			}
			if _, err := os.Stat(userDir(e, e.user, "websearch")); !os.IsNotExist(err) {
				t.Errorf("a remote connector has files: %v", err)
			}
			run, _ := e.db.InstallRunByID(ctx, j.RunID)
			if run.Status != db.InstallSucceeded || !strings.Contains(run.Log, "websearch is ready with 2 tools") || strings.Contains(run.Log, key) {
				t.Errorf("install run: %s log:\n%s", run.Status, run.Log)
			}
		})
	}
}

// A wrong key fails the activation with an error a person can act on,
// and keeps nothing.
func TestActivateRemoteConnectorWithAWrongKey(t *testing.T) {
	t.Parallel()
	for _, transport := range remoteTransports {
		t.Run(string(transport), func(t *testing.T) {
			t.Parallel()
			const wrong = "remote-wrong-key-5678"
			remote := newRemoteServer(t, transport, "remote-right-key-1234")
			e := newEnv(t)
			ctx := context.Background()
			e.remoteEntry("websearch", transport, remote.URL)

			j, err := e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "websearch", Secrets: map[string]string{"API_KEY": wrong}})
			ferr := waitFailed(t, j, err)
			want := "auth failed: HTTP 401 from " + remote.URL
			if !strings.Contains(ferr.Error(), want) {
				t.Errorf("error: got %q; want it to say %q", ferr, want)
			}
			if strings.Contains(ferr.Error(), wrong) {
				t.Errorf("error %q shows the key", ferr)
			}
			if _, err := e.db.UserServerByName(ctx, e.user.User.ID, "websearch"); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
				t.Errorf("a failed activation left a row: %v", err)
			}
			view, _ := e.rt.ForUser(ctx, e.user.User)
			if st := stateOf(view, "websearch"); st.Server != "" {
				t.Errorf("a failed activation left a session: %+v", st)
			}
			run, _ := e.db.InstallRunByID(ctx, j.RunID)
			if run.Status != db.InstallFailed || !strings.Contains(run.Error, want) || strings.Contains(run.Error+run.Log, wrong) {
				t.Errorf("install run: %s %q log:\n%s", run.Status, run.Error, run.Log)
			}
			if seen := remote.seen(); len(seen) == 0 || seen[0] != "Bearer "+wrong {
				t.Errorf("the remote server saw %q; want the (wrong) bearer sent", seen)
			}
		})
	}
}

// A shared remote connector works with the key the admin stored, and
// the key never shows in its status, its install run or its errors.
func TestGlobalRemoteConnectorKeepsItsKeySecret(t *testing.T) {
	t.Parallel()
	for _, transport := range remoteTransports {
		t.Run(string(transport), func(t *testing.T) {
			t.Parallel()
			const key = "remote-global-canary-9876"
			remote := newRemoteServer(t, transport, key)
			e := newEnv(t)
			ctx := context.Background()
			entry := e.remoteEntry("websearch", transport, remote.URL)

			g, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: entry.ID, Enabled: true}, map[string]string{"API_KEY": key})
			wait(t, j, err)
			if got := callText(t, e.rt.Global(), "websearch__search", map[string]any{"q": "shared"}); got != "remote results for shared" {
				t.Errorf("search: got %q", got)
			}
			if _, err := e.db.GrantGlobal(ctx, e.admin.User.ID, g.ID, db.GranteeEveryone, "", 0); err != nil {
				t.Fatal(err)
			}
			view, _ := e.rt.ForUser(ctx, e.user.User)
			if got := callText(t, view, "websearch__fetch", nil); got != "fetched" {
				t.Errorf("fetch through a user's view: got %q", got)
			}
			for _, a := range remote.seen() {
				if a != "Bearer "+key {
					t.Errorf("the remote server saw Authorization %q; want the stored bearer", a)
				}
			}

			statuses, err := e.rt.GlobalStatuses(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(statuses) != 1 || statuses[0].Phase != string(pbmcp.PhaseReady) || !statuses[0].HasSecrets || len(statuses[0].Tools) != 2 {
				t.Errorf("statuses: %+v", statuses)
			}
			run, _ := e.db.InstallRunByID(ctx, j.RunID)
			row, _ := e.db.GlobalServerByID(ctx, g.ID)
			userStatuses, _ := e.rt.UserStatuses(ctx, e.user.User)
			for what, text := range map[string]string{
				"statuses":      fmtValue(statuses),
				"user statuses": fmtValue(userStatuses),
				"install run":   fmtValue(run),
				"row":           fmtValue(row),
				"stderr":        e.rt.Global().Stderr("websearch"),
			} {
				if strings.Contains(text, key) {
					t.Errorf("the key shows in the %s: %s", what, text)
				}
			}

			// A wrong key saved in the settings: the update fails readably
			// and the key shows nowhere.
			const wrong = "remote-global-wrong-4321"
			j, err = e.rt.UpdateGlobal(ctx, e.admin.User.ID, g.ID, nil, map[string]string{"API_KEY": wrong})
			ferr := waitFailed(t, j, err)
			want := "auth failed: HTTP 401 from " + remote.URL
			if !strings.Contains(ferr.Error(), want) {
				t.Errorf("update error: got %q; want %q", ferr, want)
			}
			run, _ = e.db.InstallRunByID(ctx, j.RunID)
			row, _ = e.db.GlobalServerByID(ctx, g.ID)
			statuses, _ = e.rt.GlobalStatuses(ctx)
			if !strings.Contains(row.LastError, want) {
				t.Errorf("row last error: got %q; want %q", row.LastError, want)
			}
			// Refused credentials do not improve by retrying: the shared
			// connector shows failed, and why, until its settings change.
			if len(statuses) != 1 || statuses[0].Phase != "failed" || !strings.Contains(statuses[0].LastError, want) {
				t.Errorf("status after a refused key: %+v; want failed with %q", statuses, want)
			}
			for what, text := range map[string]string{
				"error":       ferr.Error(),
				"statuses":    fmtValue(statuses),
				"install run": fmtValue(run),
				"row":         fmtValue(row),
			} {
				if strings.Contains(text, wrong) || strings.Contains(text, key) {
					t.Errorf("a key shows in the %s after a failed update: %s", what, text)
				}
			}
		})
	}
}

// Activating a remote connector needs mcp.register_remote, whatever
// else the role may do.
func TestActivateRemoteNeedsItsCapability(t *testing.T) {
	t.Parallel()
	remote := newRemoteServer(t, pbmcp.TransportStreamableHTTP, "remote-key-1234")
	e := newEnv(t)
	ctx := context.Background()
	e.remoteEntry("websearch", pbmcp.TransportStreamableHTTP, remote.URL)
	localOnly := &patchbay.Principal{User: e.other.User, Role: patchbay.Role{Name: "local-only", Capabilities: []patchbay.Capability{patchbay.CapRegisterLocalFromCatalog}}}

	j, err := e.rt.Activate(ctx, localOnly, connectors.Activation{CatalogName: "websearch", Secrets: map[string]string{"API_KEY": "remote-key-1234"}})
	if j != nil || patchbay.ErrorCode(err) != patchbay.EFORBIDDEN || !strings.Contains(patchbay.ErrorMessage(err), "may not activate remote") {
		t.Fatalf("got job %v, error %v; want forbidden", j, err)
	}
	if runs, _ := e.db.InstallRuns(ctx, db.InstallScopeUser, e.other.User.ID, "websearch", 0); len(runs) != 0 {
		t.Errorf("a refused activation recorded %d install runs", len(runs))
	}
	if seen := remote.seen(); len(seen) != 0 {
		t.Errorf("a refused activation reached the remote server %d times", len(seen))
	}
}

// fmtValue prints v with its field names, to search it for a secret.
func fmtValue(v any) string { return fmt.Sprintf("%+v", v) }
