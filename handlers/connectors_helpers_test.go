package handlers

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"patchbay/db"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if testBinDir != "" {
		os.RemoveAll(testBinDir)
	}
	os.Exit(code)
}

// The test MCP servers are built once per test binary, on first use, so
// tests that run no connector do not wait for the build.
var (
	buildOnce  sync.Once
	testBinDir string
	buildErr   error
)

// echoServer returns the path of the built echo test MCP server
// (testdata/mcpservers/echo: tools echo, search and sleep).
func echoServer(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "patchbay-handlers-mcpservers-")
		if err != nil {
			buildErr = err
			return
		}
		testBinDir = dir
		cmd := exec.Command("go", "build", "-o", dir+"/", "patchbay/testdata/mcpservers/echo")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build echo test server: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(testBinDir, "echo")
}

// sourceDir returns a connector source directory holding one small file:
// the reconciler installs from a directory even when there is nothing to
// install.
func sourceDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("a test connector\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// addCatalog saves a catalog entry as the admin would with the CLI.
func (ts *testServer) addCatalog(t *testing.T, e db.CatalogEntry) db.CatalogEntry {
	t.Helper()
	e, err := ts.db.SaveCatalogEntry(context.Background(), 0, e)
	if err != nil {
		t.Fatalf("save catalog entry %s: %v", e.Name, err)
	}
	return e
}

// echoEntry is a local stdio catalog entry running the echo test server.
func echoEntry(t *testing.T, name, scope string, inputs ...db.CatalogInput) db.CatalogEntry {
	t.Helper()
	return db.CatalogEntry{
		Name: name, Title: "Echo " + name, Description: "Says back what it is told.",
		Kind: db.KindLocal, Scope: scope, Transport: "stdio",
		Command: echoServer(t), Source: sourceDir(t), Inputs: inputs,
	}
}

// connectorFixtures are rows that the parameterised routes need in order
// to answer: a catalog entry, a disabled shared connector (no process)
// with a grant, and a finished install run of one person's connector.
type connectorFixtures struct {
	catalog  string
	globalID int64
	grantID  int64
	runID    int64
}

// seedConnectorFixtures creates the fixtures; the install run belongs to
// runOwner, who must have signed in.
func (ts *testServer) seedConnectorFixtures(t *testing.T, runOwner int64) connectorFixtures {
	t.Helper()
	ctx := context.Background()
	e := ts.addCatalog(t, db.CatalogEntry{
		Name: "fixture", Kind: db.KindLocal, Scope: db.ScopeBoth, Transport: "stdio",
		Command: "/bin/true", Source: sourceDir(t),
	})
	g, err := ts.db.CreateGlobalServer(ctx, 0, db.GlobalServer{CatalogID: e.ID, Name: "fixture-shared"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	grant, err := ts.db.GrantGlobal(ctx, 0, g.ID, db.GranteeEveryone, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	run, err := ts.db.StartInstallRun(ctx, db.InstallRun{Scope: db.InstallScopeUser, UserID: runOwner, Connector: "fixture", Reason: "activate"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.db.FinishInstallRun(ctx, run.ID, db.InstallSucceeded, "h", "fixture log\n", ""); err != nil {
		t.Fatal(err)
	}
	// Everyone signed in so far has a connector of their own named "7"
	// (no process runs), so /connectors/:name/... answers for each.
	users, err := ts.db.ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if _, err := ts.db.CreateUserServer(ctx, db.UserServer{UserID: u.ID, CatalogID: e.ID, CatalogName: e.Name, Name: "7",
			Kind: db.KindLocal, Transport: "stdio"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return connectorFixtures{catalog: e.Name, globalID: g.ID, grantID: grant.ID, runID: run.ID}
}

// ids fills route parameters for concretePath.
func (f connectorFixtures) ids() map[string]int64 {
	return map[string]int64{"/admin/connectors/": f.globalID, "/installs/": f.runID, ":grant": f.grantID, ":name": 7}
}

// concreteGET turns a GET route into a URL that answers for someone.
func (f connectorFixtures) concreteGET(t *testing.T, path string) string {
	t.Helper()
	if path == "/admin/connectors/new" {
		return path + "?catalog=" + url.QueryEscape(f.catalog)
	}
	return concretePath(t, path, f.ids())
}

// concreteGETs lists every non-public GET route as a URL that answers.
func (f connectorFixtures) concreteGETs(t *testing.T, s *Server) []string {
	t.Helper()
	var out []string
	for _, p := range signedInGETs(s) {
		out = append(out, f.concreteGET(t, p))
	}
	return out
}

// pollInstall polls an install run as HTMX does until it is no longer
// running, and returns the last response. It fails after the deadline.
func (c *client) pollInstall(t *testing.T, runID int64, deadline time.Duration) response {
	t.Helper()
	path := fmt.Sprintf("/installs/%d", runID)
	end := time.Now().Add(deadline)
	for {
		r := c.get(t, path, htmxReq)
		wantStatus(t, r, 200)
		status, _ := r.doc(t).Find(`[data-testid="install-progress"]`).Attr("data-status")
		if status != "running" {
			return r
		}
		if time.Now().After(end) {
			t.Fatalf("install run %d still running after %v; last response:\n%s", runID, deadline, r.body)
		}
		// Each poll is a full HTTP round trip through a database read;
		// a short pause keeps the loop from spinning.
		time.Sleep(20 * time.Millisecond)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, deadline time.Duration, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not after %v; last seen: %s", what, deadline, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// contains reports whether s holds every one of subs.
func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
