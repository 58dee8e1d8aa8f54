package connectors_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"patchbay"
	"patchbay/db"
	pbmcp "patchbay/mcp"
	"patchbay/mcp/connectors"
)

func userDir(e *env, p *patchbay.Principal, name string) string {
	return filepath.Join(e.dataDir, "connectors", "users", strconv.FormatInt(p.User.ID, 10), name)
}

// Activation installs a node connector with npm ci into the user's own
// directory, connects it in their runtime and records the activation.
func TestActivateNodeConnector(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.nodeEntry("nodesearch")
	j, err := e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "nodesearch"})
	wait(t, j, err)

	view, err := e.rt.ForUser(ctx, e.user.User)
	if err != nil {
		t.Fatal(err)
	}
	if got := callText(t, view, "nodesearch__search", map[string]any{"q": "node"}); got != "node: 42" {
		t.Errorf("search: got %q; want %q (tinydep must come from npm ci)", got, "node: 42")
	}
	dir := userDir(e, e.user, "nodesearch")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "tinydep")); err != nil {
		t.Errorf("node_modules not installed in the user's dir: %v", err)
	}
	rows, _ := e.db.UserServers(ctx, e.user.User.ID)
	if len(rows) != 1 || rows[0].Name != "nodesearch" || rows[0].InstalledHash == "" {
		t.Errorf("rows: %+v", rows)
	}
	run, _ := e.db.InstallRunByID(ctx, j.RunID)
	if run.Reason != "activate" || run.Status != db.InstallSucceeded || !strings.Contains(run.Log, "npm ci --omit=dev") || !strings.Contains(run.Log, "--ignore-scripts") {
		t.Errorf("install run: %s/%s log:\n%s", run.Reason, run.Status, run.Log)
	}

	// Someone else sees none of it.
	otherView, _ := e.rt.ForUser(ctx, e.other.User)
	if names := toolNames(otherView); len(names) != 0 {
		t.Errorf("another user sees %v", names)
	}
	if _, err := otherView.CallTool(ctx, "nodesearch__search", nil); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
		t.Errorf("another user calling it: got %v; want not found", err)
	}

	// Deactivate stops it and removes row, credential and files.
	pid := stateOf(view, "nodesearch").PID
	if err := e.rt.Deactivate(ctx, e.user.User.ID, "nodesearch"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deactivated server to exit", func() bool { return !alive(pid) })
	if rows, _ := e.db.UserServers(ctx, e.user.User.ID); len(rows) != 0 {
		t.Errorf("rows after deactivate: %+v", rows)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("files after deactivate: %v", err)
	}
	if err := e.rt.Deactivate(ctx, e.user.User.ID, "nodesearch"); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
		t.Errorf("deactivating twice: got %v; want not found", err)
	}
}

// A failed activation leaves nothing: no row, no files, no process.
func TestFailedActivationLeavesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()

	noLock := copySource(t, "nodeserver")
	os.Remove(filepath.Join(noLock, "package-lock.json"))
	e.catalog(db.CatalogEntry{Name: "nolock", Kind: db.KindLocal, Transport: "stdio", Command: "node", Args: []string{"server.js"}, Source: noLock})
	badVerify := copySource(t, "pyserver")
	os.WriteFile(filepath.Join(badVerify, "verify.py"), []byte("raise SystemExit(4)\n"), 0o644)
	e.pyEntry("badverify", badVerify)
	e.catalog(db.CatalogEntry{Name: "nocmd", Kind: db.KindLocal, Transport: "stdio", Command: "no-such-connector-binary", Source: copySource(t, "pyserver")})
	crashes := copySource(t, "pyserver")
	os.WriteFile(filepath.Join(crashes, "server.py"), []byte("import sys\nsys.exit('bad config: region unknown')\n"), 0o644)
	e.catalog(db.CatalogEntry{Name: "crashes", Kind: db.KindLocal, Transport: "stdio", Command: "python3", Args: []string{"server.py"}, Source: crashes})

	for name, want := range map[string]string{
		"nolock":    "no package-lock.json",
		"badverify": "verify failed",
		"nocmd":     "command not found: no-such-connector-binary",
		"crashes":   "bad config: region unknown",
	} {
		t.Run(name, func(t *testing.T) {
			j, err := e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: name})
			ferr := waitFailed(t, j, err)
			if !strings.Contains(ferr.Error(), want) {
				t.Errorf("error %q lacks %q", ferr, want)
			}
			if _, err := e.db.UserServerByName(ctx, e.user.User.ID, name); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
				t.Errorf("a failed activation left a row: %v", err)
			}
			if _, err := os.Stat(userDir(e, e.user, name)); !os.IsNotExist(err) {
				t.Errorf("a failed activation left files: %v", err)
			}
			view, _ := e.rt.ForUser(ctx, e.user.User)
			if st := stateOf(view, name); st.Server != "" {
				t.Errorf("a failed activation left a session: %+v", st)
			}
			run, _ := e.db.InstallRunByID(ctx, j.RunID)
			if run.Status != db.InstallFailed || !strings.Contains(run.Error, want) {
				t.Errorf("install run: %s %q", run.Status, run.Error)
			}
		})
	}
}

// Requests that cannot work are refused before anything starts.
func TestActivateRefusesBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	py := e.pyEntry("websearch", copySource(t, "pyserver"))
	py.Inputs[0].Required = true
	e.catalog(py)
	e.catalog(db.CatalogEntry{Name: "sharedonly", Scope: db.ScopeGlobal, Kind: db.KindLocal, Transport: "stdio", Command: "python3", Source: copySource(t, "pyserver")})
	e.echoEntry("echo")
	j, err := e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "echo"})
	wait(t, j, err)
	noLocal := &patchbay.Principal{User: e.other.User, Role: patchbay.Role{Name: "remote-only", Capabilities: []patchbay.Capability{patchbay.CapRegisterRemote}}}

	for _, c := range []struct {
		name string
		p    *patchbay.Principal
		a    connectors.Activation
		code string
		msg  string
	}{
		{"missing required secret", e.user, connectors.Activation{CatalogName: "websearch"}, patchbay.EINVALID, "websearch needs: API key."},
		{"unknown entry", e.user, connectors.Activation{CatalogName: "nope"}, patchbay.ENOTFOUND, "nope"},
		{"global-only entry", e.user, connectors.Activation{CatalogName: "sharedonly"}, patchbay.EINVALID, "shared by an administrator"},
		{"duplicate name", e.user, connectors.Activation{CatalogName: "echo"}, patchbay.ECONFLICT, "You already have a connector named echo."},
		{"bad name", e.user, connectors.Activation{CatalogName: "echo", Name: "../x"}, patchbay.EINVALID, "not a valid connector name"},
		{"capability", noLocal, connectors.Activation{CatalogName: "echo", Name: "echo2"}, patchbay.EFORBIDDEN, "may not activate local"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _ := e.db.InstallRuns(ctx, db.InstallScopeUser, c.p.User.ID, c.a.CatalogName, 0)
			j, err := e.rt.Activate(ctx, c.p, c.a)
			if j != nil || patchbay.ErrorCode(err) != c.code || !strings.Contains(patchbay.ErrorMessage(err), c.msg) {
				t.Fatalf("got job %v, error %v; want %s %q", j, err, c.code, c.msg)
			}
			if after, _ := e.db.InstallRuns(ctx, db.InstallScopeUser, c.p.User.ID, c.a.CatalogName, 0); len(after) != len(before) {
				t.Errorf("a refused request recorded an install run")
			}
		})
	}
}

// The per-user start path reinstalls what is missing or changed, and
// records nothing when the install is current.
func TestUserStartPathInstalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.pyEntry("websearch", copySource(t, "pyserver"))
	j, err := e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "websearch", Secrets: map[string]string{"SEARCH_API_KEY": "sk-user-1"}})
	wait(t, j, err)
	e.rt.Close()
	runs := func() int {
		r, _ := e.db.InstallRuns(ctx, db.InstallScopeUser, e.user.User.ID, "websearch", 0)
		return len(r)
	}
	before := runs()

	// A restart with the install intact: ready again, no run recorded.
	e.start()
	view, _ := e.rt.ForUser(ctx, e.user.User)
	if err := e.rt.WaitUser(ctx, e.user.User.ID); err != nil {
		t.Fatal(err)
	}
	if got := callText(t, view, "websearch__env", map[string]any{"name": "SEARCH_API_KEY"}); got != "sk-user-1" {
		t.Errorf("credential after restart: got %q", got)
	}
	if runs() != before {
		t.Errorf("an up-to-date start recorded an install run")
	}

	// Files gone (a fresh host or a restored backup): the start reinstalls.
	e.rt.Close()
	os.RemoveAll(userDir(e, e.user, "websearch"))
	e.start()
	view, _ = e.rt.ForUser(ctx, e.user.User)
	if err := e.rt.WaitUser(ctx, e.user.User.ID); err != nil {
		t.Fatal(err)
	}
	if got := callText(t, view, "websearch__search", map[string]any{"q": "again"}); got != "again: 42" {
		t.Errorf("after reinstall: got %q", got)
	}
	latest, err := e.db.LatestInstallRun(ctx, db.InstallScopeUser, e.user.User.ID, "websearch")
	if err != nil || latest.Reason != "start" || latest.Status != db.InstallSucceeded || runs() != before+1 {
		t.Errorf("start-path install: %+v %v (runs %d -> %d)", latest, err, before, runs())
	}
}

// A user sees the union of the globals granted to them and their own
// connectors; two connectors with a "search" tool never collide, and
// the grants are a snapshot taken when the view is built.
func TestUnionViewOfGrantedGlobalsAndOwnConnectors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	py := e.pyEntry("websearch", copySource(t, "pyserver"))
	g, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: py.ID, Enabled: true}, nil)
	wait(t, j, err)
	e.nodeEntry("nodesearch")
	j, err = e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "nodesearch"})
	wait(t, j, err)
	grant, err := e.db.GrantGlobal(ctx, e.admin.User.ID, g.ID, db.GranteeUser, "", e.user.User.ID)
	if err != nil {
		t.Fatal(err)
	}

	view, _ := e.rt.ForUser(ctx, e.user.User)
	names := toolNames(view)
	for _, want := range []string{"websearch__search", "websearch__env", "nodesearch__search"} {
		if !contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	if a, b := callText(t, view, "websearch__search", map[string]any{"q": "g"}), callText(t, view, "nodesearch__search", map[string]any{"q": "u"}); a != "g: 42" || b != "u: 42" {
		t.Errorf("calls: %q, %q", a, b)
	}
	otherView, _ := e.rt.ForUser(ctx, e.other.User)
	if n := toolNames(otherView); len(n) != 0 {
		t.Errorf("an ungranted user sees %v", n)
	}

	if err := e.db.RevokeGlobalGrant(ctx, e.admin.User.ID, g.ID, grant.ID); err != nil {
		t.Fatal(err)
	}
	if !contains(toolNames(view), "websearch__search") {
		t.Error("a view built before the revoke changed")
	}
	fresh, _ := e.rt.ForUser(ctx, e.user.User)
	if contains(toolNames(fresh), "websearch__search") {
		t.Error("a view built after the revoke still has the global")
	}
	statuses, _ := e.rt.UserStatuses(ctx, e.user.User)
	if len(statuses) != 1 || statuses[0].Name != "nodesearch" || statuses[0].Phase != "ready" {
		t.Errorf("statuses after revoke: %+v", statuses)
	}

	// A grant to the user's role works the same way.
	if _, err := e.db.GrantGlobal(ctx, e.admin.User.ID, g.ID, db.GranteeRole, patchbay.RoleUser, 0); err != nil {
		t.Fatal(err)
	}
	if v, _ := e.rt.ForUser(ctx, e.other.User); !contains(toolNames(v), "websearch__search") {
		t.Error("a role grant did not reach a user with that role")
	}
}

// A user's runtime stops after the idle timeout, with its processes, and
// starts again on the next use.
func TestUserRuntimeStopsWhenIdle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *connectors.Config) { c.IdleTimeout = 400 * time.Millisecond })
	ctx := context.Background()
	e.echoEntry("echo")
	j, err := e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "echo"})
	wait(t, j, err)
	view, _ := e.rt.ForUser(ctx, e.user.User)
	pid := stateOf(view, "echo").PID
	if !alive(pid) {
		t.Fatalf("echo not running: %+v", view.States())
	}

	// A tool call longer than the idle timeout keeps the runtime alive.
	if got := callText(t, view, "echo__sleep", map[string]any{"ms": 1200}); got == "" {
		t.Log("sleep returned no text")
	}
	if !e.rt.UserRunning(e.user.User.ID) || !alive(pid) {
		t.Fatal("the runtime was stopped during a tool call")
	}

	eventually(t, "the idle runtime to stop", func() bool { return !e.rt.UserRunning(e.user.User.ID) })
	eventually(t, "the idle connector's process to exit", func() bool { return !alive(pid) })

	// The view taken before the stop still works: its next call starts
	// the runtime again and waits for it, like a client that was quiet.
	if got := callText(t, view, "echo__echo", map[string]any{"text": "back"}); got != "back" {
		t.Errorf("a call through the old view after the idle stop: got %q", got)
	}
	if st := stateOf(view, "echo"); st.Phase != pbmcp.PhaseReady || st.PID == pid {
		t.Errorf("after the next use: %+v (old pid %d)", st, pid)
	}
}

// Close stops every runtime's processes.
func TestCloseStopsEveryProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	echo := e.echoEntry("echo")
	_, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: echo.ID, Enabled: true}, nil)
	wait(t, j, err)
	j, err = e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "echo"})
	wait(t, j, err)
	view, _ := e.rt.ForUser(ctx, e.user.User)
	pids := []int{stateOf(e.rt.Global(), "echo").PID}
	for _, s := range view.States() {
		pids = append(pids, s.PID)
	}
	if len(pids) != 2 || !alive(pids[0]) || !alive(pids[1]) {
		t.Fatalf("pids %v", pids)
	}
	e.rt.Close()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d alive after Close", pid)
		}
	}
	if _, err := e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "echo", Name: "echo2"}); err == nil {
		t.Error("Activate after Close succeeded")
	}
}

// Install runs are readable by whom they concern, and not found for
// anyone else.
func TestInstallRunAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	echo := e.echoEntry("echo")
	_, gj, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: echo.ID, Enabled: true}, nil)
	wait(t, gj, err)
	uj, err := e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "echo"})
	wait(t, uj, err)
	for _, c := range []struct {
		who  *patchbay.Principal
		run  int64
		want string
	}{
		{e.admin, gj.RunID, ""},
		{e.user, gj.RunID, patchbay.ENOTFOUND},
		{e.support, gj.RunID, patchbay.ENOTFOUND},
		{e.user, uj.RunID, ""},
		{e.other, uj.RunID, patchbay.ENOTFOUND},
		{e.support, uj.RunID, ""},
		{e.admin, uj.RunID, ""},
	} {
		run, err := e.rt.InstallRun(ctx, c.who, c.run)
		if patchbay.ErrorCode(err) != c.want {
			t.Errorf("%s reading run %d: got %v; want code %q", c.who.User.Email, c.run, err, c.want)
		}
		if c.want == "" && !strings.Contains(run.Log, "ready with") {
			t.Errorf("%s reading run %d: log %q", c.who.User.Email, c.run, run.Log)
		}
	}
}

// A granted global and a user's own connector both named "search": the
// name means the shared one while it is granted (the user's is listed as
// hidden, never merged), and the user's own once the grant is gone.
func TestGrantedGlobalAndUserConnectorWithTheSameName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	py := e.pyEntry("websearch", copySource(t, "pyserver"))
	g, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: py.ID, Name: "search", Enabled: true}, nil)
	wait(t, j, err)
	grant, err := e.db.GrantGlobal(ctx, e.admin.User.ID, g.ID, db.GranteeEveryone, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	e.echoEntry("echo")
	j, err = e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "echo", Name: "search"})
	wait(t, j, err)

	view, _ := e.rt.ForUser(ctx, e.user.User)
	if got := callText(t, view, "search__search", map[string]any{"q": "which"}); got != "which: 42" {
		t.Errorf("search__search while granted: got %q; want the shared python server's answer", got)
	}
	var n int
	for _, name := range toolNames(view) {
		if name == "search__search" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("search__search listed %d times; want once", n)
	}
	statuses, _ := e.rt.UserStatuses(ctx, e.user.User)
	var own connectors.Status
	for _, st := range statuses {
		if st.Scope == db.InstallScopeUser && st.Name == "search" {
			own = st
		}
	}
	if !strings.Contains(own.LastError, "Hidden by the shared connector") {
		t.Errorf("the user's own search status: %+v; want it marked hidden", own)
	}

	if err := e.db.RevokeGlobalGrant(ctx, e.admin.User.ID, g.ID, grant.ID); err != nil {
		t.Fatal(err)
	}
	view, _ = e.rt.ForUser(ctx, e.user.User)
	if got := callText(t, view, "search__search", map[string]any{"q": "which"}); got != "echo results for which" {
		t.Errorf("search__search after the revoke: got %q; want the user's own echo server", got)
	}
}

// Two activations of one name at once: one wins, the other fails with a
// conflict and does not disturb the winner's files or server.
func TestConcurrentActivationsOfOneName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.echoEntry("echo")
	var jobs []*connectors.Job
	for range 2 {
		j, err := e.rt.Activate(ctx, e.user, connectors.Activation{CatalogName: "echo"})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	var failed int
	for _, j := range jobs {
		if err := j.Wait(ctx); err != nil {
			failed++
			if patchbay.ErrorCode(err) != patchbay.ECONFLICT {
				t.Errorf("the losing activation: got %v; want a conflict", err)
			}
		}
	}
	if failed != 1 {
		t.Fatalf("%d of 2 activations failed; want exactly 1", failed)
	}
	view, _ := e.rt.ForUser(ctx, e.user.User)
	if got := callText(t, view, "echo__echo", map[string]any{"text": "still here"}); got != "still here" {
		t.Errorf("the winner's server after the loser finished: %q", got)
	}
	if _, err := os.Stat(userDir(e, e.user, "echo")); err != nil {
		t.Errorf("the winner's files after the loser finished: %v", err)
	}
}
