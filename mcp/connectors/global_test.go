package connectors_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"patchbay"
	"patchbay/db"
	pbmcp "patchbay/mcp"
	"patchbay/mcp/install"
)

// The enable path installs a python connector's requirements, verifies
// it with exactly the server's env and connects it: its tool answers only
// if .pydeps reached the server's PYTHONPATH.
func TestEnableGlobalInstallsVerifiesAndConnects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	entry := e.pyEntry("websearch", copySource(t, "pyserver"))

	g, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: entry.ID, Enabled: true},
		map[string]string{"SEARCH_API_KEY": "sk-global-canary-1234"})
	wait(t, j, err)

	if got := callText(t, e.rt.Global(), "websearch__search", map[string]any{"q": "life"}); got != "life: 42" {
		t.Errorf("search: got %q; want %q (tinypkg must import from .pydeps)", got, "life: 42")
	}
	run, err := e.db.InstallRunByID(ctx, j.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != db.InstallSucceeded || run.Reason != "enable" || run.Scope != db.InstallScopeGlobal {
		t.Errorf("install run: got status %q reason %q scope %q", run.Status, run.Reason, run.Scope)
	}
	for _, want := range []string{"pip install --target .pydeps", "verify ok: tinypkg 42", "websearch is ready with 2 tools"} {
		if !strings.Contains(run.Log, want) {
			t.Errorf("install log lacks %q:\n%s", want, run.Log)
		}
	}
	dir := filepath.Join(e.dataDir, "connectors", "global", "websearch")
	m, err := install.ReadMarker(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.db.GlobalServerByID(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.InstalledHash != m.Hash || got.LastError != "" {
		t.Errorf("row: installed_hash %q last_error %q; want %q and no error", got.InstalledHash, got.LastError, m.Hash)
	}

	// The environment is exactly the declared one plus the base: the
	// secret and the default input arrive, Patchbay's own do not.
	env := func(name string) string {
		return callText(t, e.rt.Global(), "websearch__env", map[string]any{"name": name})
	}
	if got := env("SEARCH_API_KEY"); got != "sk-global-canary-1234" {
		t.Errorf("SEARCH_API_KEY: got %q", got)
	}
	if got := env("SEARCH_REGION"); got != "eu" {
		t.Errorf("SEARCH_REGION (default): got %q", got)
	}
	if got := env("HOME"); got != dir {
		t.Errorf("HOME: got %q; want the connector's own dir %q", got, dir)
	}
	if got := env("PYTHONPATH"); got != filepath.Join(dir, ".pydeps") {
		t.Errorf("PYTHONPATH: got %q", got)
	}
	if got := env("GOPATH"); got != "<unset>" {
		t.Errorf("Patchbay's own environment leaked: GOPATH=%q", got)
	}

	statuses, err := e.rt.GlobalStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 1 || statuses[0].Phase != "ready" || !contains(statuses[0].Tools, "search") || statuses[0].InstallStatus != db.InstallSucceeded {
		t.Errorf("statuses: %+v", statuses)
	}
}

// Refresh after an update is the second host path that lands files: an
// update that adds a requirements.txt must install it, or the connector
// comes back exactly as broken.
func TestRefreshGlobalInstallsWhatAnUpdateAdded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	src := copySource(t, "pyserver")
	// Version 1 has no dependencies.
	os.Remove(filepath.Join(src, "requirements.txt"))
	os.Remove(filepath.Join(src, "verify.py"))
	server, _ := os.ReadFile(filepath.Join(src, "server.py"))
	v1 := strings.Replace(string(server), "import tinypkg\n", "class tinypkg:\n    ANSWER = 1\n    __file__ = 'builtin'\n", 1)
	if err := os.WriteFile(filepath.Join(src, "server.py"), []byte(v1), 0o644); err != nil {
		t.Fatal(err)
	}
	entry := e.catalog(db.CatalogEntry{Name: "websearch", Kind: db.KindLocal, Transport: "stdio",
		Command: "python3", Args: []string{"server.py"}, Source: src})
	g, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: entry.ID, Enabled: true}, nil)
	wait(t, j, err)
	if got := callText(t, e.rt.Global(), "websearch__search", map[string]any{"q": "v1"}); got != "v1: 1" {
		t.Fatalf("v1: got %q", got)
	}
	pid1 := stateOf(e.rt.Global(), "websearch").PID

	// Refreshing with nothing changed installs nothing.
	j, err = e.rt.RefreshGlobal(ctx, e.admin.User.ID, g.ID)
	wait(t, j, err)
	if run, _ := e.db.InstallRunByID(ctx, j.RunID); run.Status != db.InstallUnchanged || run.Reason != "refresh" {
		t.Errorf("refresh of an unchanged source: status %q reason %q; want unchanged/refresh", run.Status, run.Reason)
	}

	// Version 2 adds requirements.txt and imports its dependency.
	if err := os.WriteFile(filepath.Join(src, "server.py"), server, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "requirements.txt"), []byte("tinypkg==0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err = e.rt.RefreshGlobal(ctx, e.admin.User.ID, g.ID)
	wait(t, j, err)
	if got := callText(t, e.rt.Global(), "websearch__search", map[string]any{"q": "v2"}); got != "v2: 42" {
		t.Errorf("v2 after refresh: got %q; want %q", got, "v2: 42")
	}
	if pid2 := stateOf(e.rt.Global(), "websearch").PID; pid2 == pid1 || pid2 == 0 {
		t.Errorf("refresh did not restart the server: pid %d then %d", pid1, pid2)
	}
	if run, _ := e.db.InstallRunByID(ctx, j.RunID); run.Status != db.InstallSucceeded || !strings.Contains(run.Log, "pip install") {
		t.Errorf("refresh of a changed source: status %q, log:\n%s", run.Status, run.Log)
	}
}

// A failed reinstall keeps the previous working install and the running
// server, and says why.
func TestRefreshGlobalFailureKeepsTheWorkingInstall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	src := copySource(t, "pyserver")
	entry := e.pyEntry("websearch", src)
	g, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: entry.ID, Enabled: true}, nil)
	wait(t, j, err)
	dir := filepath.Join(e.dataDir, "connectors", "global", "websearch")
	before, _ := install.ReadMarker(dir)

	if err := os.WriteFile(filepath.Join(src, "requirements.txt"), []byte("no-such-package==9.9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err = e.rt.RefreshGlobal(ctx, e.admin.User.ID, g.ID)
	ferr := waitFailed(t, j, err)
	if !strings.Contains(ferr.Error(), "no-such-package") {
		t.Errorf("error does not say what failed: %v", ferr)
	}
	after, _ := install.ReadMarker(dir)
	if after.Hash != before.Hash {
		t.Errorf("a failed install replaced the working one: marker %s -> %s", before.Hash, after.Hash)
	}
	if got := callText(t, e.rt.Global(), "websearch__search", map[string]any{"q": "still"}); got != "still: 42" {
		t.Errorf("the running server was disturbed: %q", got)
	}
	row, _ := e.db.GlobalServerByID(ctx, g.ID)
	if row.InstalledHash != before.Hash || !strings.Contains(row.LastError, "no-such-package") {
		t.Errorf("row: hash %q error %q", row.InstalledHash, row.LastError)
	}
	if run, _ := e.db.InstallRunByID(ctx, j.RunID); run.Status != db.InstallFailed || run.Error == "" {
		t.Errorf("install run: status %q error %q", run.Status, run.Error)
	}
}

// A verify that fails rejects the install before it replaces anything,
// and the secrets it printed are redacted from everything kept.
func TestVerifyFailureIsRedactedAndKeepsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	src := copySource(t, "pyserver")
	verify := "import os, sys\nprint('key is', os.environ['SEARCH_API_KEY'])\nsys.exit(3)\n"
	if err := os.WriteFile(filepath.Join(src, "verify.py"), []byte(verify), 0o644); err != nil {
		t.Fatal(err)
	}
	entry := e.pyEntry("websearch", src)
	const secret = "sk-verify-canary-98765"
	g, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: entry.ID, Enabled: true},
		map[string]string{"SEARCH_API_KEY": secret})
	ferr := waitFailed(t, j, err)
	if !strings.Contains(ferr.Error(), "verify") {
		t.Errorf("error does not blame the verify: %v", ferr)
	}
	run, _ := e.db.InstallRunByID(ctx, j.RunID)
	row, _ := e.db.GlobalServerByID(ctx, g.ID)
	for what, text := range map[string]string{"log": run.Log, "run error": run.Error, "last_error": row.LastError, "job log": j.Log(), "job error": ferr.Error()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the secret:\n%s", what, text)
		}
	}
	if !strings.Contains(run.Log, "key is [REDACTED]") {
		t.Errorf("log lacks the redacted verify output:\n%s", run.Log)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "connectors", "global", "websearch")); !os.IsNotExist(err) {
		t.Errorf("a rejected install left files: %v", err)
	}
	if _, ok := e.rt.Global().State("websearch"); ok {
		t.Error("a rejected connector was started")
	}
}

// At boot, enabled global connectors are installed if needed (a restored
// data dir has none) and connected; disabled ones are not started.
func TestGlobalsConnectAtBoot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	py := e.pyEntry("websearch", copySource(t, "pyserver"))
	echo := e.echoEntry("echo")
	_, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: py.ID, Enabled: true}, nil)
	wait(t, j, err)
	if _, _, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: echo.ID, Enabled: false}, nil); err != nil {
		t.Fatal(err)
	}
	runsBefore, _ := e.db.InstallRuns(ctx, db.InstallScopeGlobal, 0, "websearch", 100)
	pid := stateOf(e.rt.Global(), "websearch").PID
	e.rt.Close()
	eventually(t, "the old server to exit", func() bool { return !alive(pid) })
	if err := os.RemoveAll(filepath.Join(e.dataDir, "connectors")); err != nil {
		t.Fatal(err)
	}

	e.start()
	eventually(t, "websearch ready after boot", func() bool { return stateOf(e.rt.Global(), "websearch").Phase == pbmcp.PhaseReady })
	if got := callText(t, e.rt.Global(), "websearch__search", map[string]any{"q": "boot"}); got != "boot: 42" {
		t.Errorf("after boot: got %q", got)
	}
	if _, ok := e.rt.Global().State("echo"); ok {
		t.Error("a disabled connector was started at boot")
	}
	runs, _ := e.db.InstallRuns(ctx, db.InstallScopeGlobal, 0, "websearch", 100)
	if len(runs) != len(runsBefore)+1 || runs[0].Reason != "start" || runs[0].Status != db.InstallSucceeded {
		t.Errorf("boot install: %d runs before, %d after, newest %+v", len(runsBefore), len(runs), runs[0])
	}

	// A second boot with the install intact records no run at all.
	e.rt.Close()
	e.start()
	eventually(t, "websearch ready after the second boot", func() bool { return stateOf(e.rt.Global(), "websearch").Phase == pbmcp.PhaseReady })
	if again, _ := e.db.InstallRuns(ctx, db.InstallScopeGlobal, 0, "websearch", 100); len(again) != len(runs) {
		t.Errorf("an up-to-date boot recorded a run: %d -> %d", len(runs), len(again))
	}
}

func TestDisableAndDeleteGlobal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	echo := e.echoEntry("echo")
	g, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: echo.ID, Enabled: true}, nil)
	wait(t, j, err)
	pid := stateOf(e.rt.Global(), "echo").PID
	if err := e.rt.DisableGlobal(ctx, e.admin.User.ID, g.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the disabled server to exit", func() bool { return !alive(pid) })
	st, _ := e.rt.GlobalStatuses(ctx)
	if len(st) != 1 || st[0].Phase != "disabled" {
		t.Errorf("after disable: %+v", st)
	}
	j, err = e.rt.EnableGlobal(ctx, e.admin.User.ID, g.ID)
	wait(t, j, err)
	if err := e.rt.DeleteGlobal(ctx, e.admin.User.ID, g.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.GlobalServerByID(ctx, g.ID); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
		t.Errorf("row after delete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "connectors", "global", "echo")); !os.IsNotExist(err) {
		t.Errorf("files after delete: %v", err)
	}
	if len(e.rt.Global().States()) != 0 {
		t.Errorf("states after delete: %+v", e.rt.Global().States())
	}
}

// Saving a global connector's settings reconnects it with them; a blank
// secret keeps the stored one.
func TestUpdateGlobalReconnectsWithNewSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	entry := e.pyEntry("websearch", copySource(t, "pyserver"))
	g, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: entry.ID, Enabled: true},
		map[string]string{"SEARCH_API_KEY": "sk-old-0001"})
	wait(t, j, err)
	env := func(name string) string {
		return callText(t, e.rt.Global(), "websearch__env", map[string]any{"name": name})
	}

	j, err = e.rt.UpdateGlobal(ctx, e.admin.User.ID, g.ID, map[string]string{"SEARCH_REGION": "us"}, map[string]string{"SEARCH_API_KEY": ""})
	wait(t, j, err)
	if got := env("SEARCH_REGION"); got != "us" {
		t.Errorf("SEARCH_REGION after update: %q", got)
	}
	if got := env("SEARCH_API_KEY"); got != "sk-old-0001" {
		t.Errorf("a blank secret did not keep the stored one: %q", got)
	}
	if run, _ := e.db.InstallRunByID(ctx, j.RunID); run.Reason != "update" || run.Status != db.InstallUnchanged {
		t.Errorf("update run: reason %q status %q; want update/unchanged", run.Reason, run.Status)
	}

	j, err = e.rt.UpdateGlobal(ctx, e.admin.User.ID, g.ID, map[string]string{"SEARCH_REGION": "us"}, map[string]string{"SEARCH_API_KEY": "sk-new-0002"})
	wait(t, j, err)
	if got := env("SEARCH_API_KEY"); got != "sk-new-0002" {
		t.Errorf("SEARCH_API_KEY after update: %q", got)
	}
}

// SECURITY 7: a connector process gets its declared environment and its
// own secrets, never Patchbay's key nor another connector's secrets, as
// the kernel sees it in /proc/<pid>/environ.
func TestConnectorEnvironIsOnlyItsOwn(t *testing.T) {
	const patchbayKey = "patchbay-key-canary-0123456789"
	t.Setenv("PATCHBAY_SECRET_KEY", patchbayKey)
	e := newEnv(t)
	ctx := context.Background()
	echo := e.echoEntry("echo")
	echo.Inputs = []db.CatalogInput{{Name: "ECHO_TOKEN", Secret: true}}
	e.catalog(echo)
	var pids []int
	for i, secret := range []string{"sk-first-canary-1111", "sk-second-canary-2222"} {
		name := []string{"first", "second"}[i]
		_, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: echo.ID, Name: name, Enabled: true},
			map[string]string{"ECHO_TOKEN": secret})
		wait(t, j, err)
		pids = append(pids, stateOf(e.rt.Global(), name).PID)
	}
	environ := func(pid int) string {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(b), "\x00", "\n")
	}
	first, second := environ(pids[0]), environ(pids[1])
	if !strings.Contains(first, "ECHO_TOKEN=sk-first-canary-1111\n") || !strings.Contains(second, "ECHO_TOKEN=sk-second-canary-2222\n") {
		t.Errorf("a connector lacks its own secret:\n%s\n--\n%s", first, second)
	}
	for _, c := range []struct{ env, leak string }{
		{first, "sk-second-canary-2222"}, {second, "sk-first-canary-1111"},
		{first, patchbayKey}, {second, patchbayKey}, {first, "GOPATH="},
	} {
		if strings.Contains(c.env, c.leak) {
			t.Errorf("environ holds %q:\n%s", c.leak, c.env)
		}
	}
	var keys []string
	for _, kv := range strings.Split(strings.TrimSpace(first), "\n") {
		k, _, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
	}
	if got := strings.Join(keys, ","); got != "ECHO_TOKEN,HOME,LANG,PATH" {
		t.Errorf("environment variables: got %s; want exactly ECHO_TOKEN,HOME,LANG,PATH", got)
	}
}

// An entry that gained a required input since the connector was added:
// enabling is refused and the connector stays disabled, rather than
// enabled and failing at every boot.
func TestEnableRefusedLeavesTheConnectorDisabled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	echo := e.echoEntry("echo")
	g, j, err := e.rt.CreateGlobal(ctx, e.admin.User.ID, db.GlobalServer{CatalogID: echo.ID, Enabled: false}, nil)
	if err != nil || j != nil {
		t.Fatalf("CreateGlobal disabled: job %v, err %v", j, err)
	}
	echo.Inputs = []db.CatalogInput{{Name: "ECHO_TOKEN", Title: "Token", Secret: true, Required: true}}
	e.catalog(echo)

	j, err = e.rt.EnableGlobal(ctx, e.admin.User.ID, g.ID)
	if j != nil || patchbay.ErrorCode(err) != patchbay.EINVALID || !strings.Contains(patchbay.ErrorMessage(err), "echo needs: Token.") {
		t.Fatalf("EnableGlobal: job %v, err %v; want EINVALID naming the token", j, err)
	}
	if row, _ := e.db.GlobalServerByID(ctx, g.ID); row.Enabled {
		t.Error("a refused enable left the connector enabled")
	}
}
