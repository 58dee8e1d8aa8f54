package connectors_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"patchbay"
	"patchbay/db"
	"patchbay/db/seal"
	pbmcp "patchbay/mcp"
	"patchbay/mcp/connectors"
	"patchbay/mcp/install/installtest"
)

// fixtures is where the test connectors' sources live.
const fixtures = "../../testdata/connectors"

// binDir holds the Go test MCP servers, built once per test binary.
var binDir string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "patchbay-connectors-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("go", "build", "-o", dir+"/", "patchbay/testdata/mcpservers/echo")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build test servers:", err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// env is one test's Patchbay: a real database file, real runtimes and
// three people.
type env struct {
	t                  *testing.T
	db                 *db.DB
	rt                 *connectors.Runtimes
	cfg                connectors.Config
	admin, user, other *patchbay.Principal
	support            *patchbay.Principal
	dataDir            string
}

func newEnv(t *testing.T, tune ...func(*connectors.Config)) *env {
	t.Helper()
	needTools(t, "python3", "npm", "node")
	dataDir := t.TempDir()
	key, err := seal.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(context.Background(), filepath.Join(dataDir, "patchbay.db"), seal.NewKeyring(key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	cfg := connectors.Config{
		DB:      d,
		DataDir: dataDir,
		PipArgs: installtest.OfflinePipArgs(installtest.BuildWheel(t, filepath.Join(fixtures, "pypkg"))),
		Manager: pbmcp.Options{StopGrace: 300 * time.Millisecond, ConnectTimeout: 20 * time.Second},
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, f := range tune {
		f(&cfg)
	}
	e := &env{t: t, db: d, cfg: cfg, dataDir: dataDir}
	e.admin = e.person("admin@example.test", patchbay.RoleAdmin)
	e.user = e.person("user@example.test", patchbay.RoleUser)
	e.other = e.person("other@example.test", patchbay.RoleUser)
	e.support = e.person("support@example.test", patchbay.RoleSupport)
	e.start()
	return e
}

// start (re)starts the runtimes on the same data directory.
func (e *env) start() {
	e.t.Helper()
	e.rt = connectors.New(e.cfg)
	rt := e.rt
	e.t.Cleanup(func() { rt.Close() })
	if err := rt.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) person(email, role string) *patchbay.Principal {
	e.t.Helper()
	ctx := context.Background()
	u, err := e.db.AddUser(ctx, email, role)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := e.db.Role(ctx, role)
	if err != nil {
		e.t.Fatal(err)
	}
	return &patchbay.Principal{User: u, Role: r}
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required in CI: %v", tool, err)
			}
			t.Skipf("%s not installed", tool)
		}
	}
}

// copySource copies a fixture connector into a temp dir so a test may
// change it, and returns its path.
func copySource(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(fixtures, name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// catalog saves an entry and returns it.
func (e *env) catalog(entry db.CatalogEntry) db.CatalogEntry {
	e.t.Helper()
	if entry.Scope == "" {
		entry.Scope = db.ScopeBoth
	}
	saved, err := e.db.SaveCatalogEntry(context.Background(), e.admin.User.ID, entry)
	if err != nil {
		e.t.Fatal(err)
	}
	return saved
}

// pyEntry is the python connector: its tools need tinypkg from its
// requirements.txt, and its verify imports it too.
func (e *env) pyEntry(name, src string) db.CatalogEntry {
	return e.catalog(db.CatalogEntry{
		Name: name, Title: "Python search", Kind: db.KindLocal, Transport: "stdio",
		Command: "python3", Args: []string{"server.py"}, Source: src,
		Verify: &db.VerifySpec{Command: []string{"python3", "verify.py"}, TimeoutSeconds: 30},
		Inputs: []db.CatalogInput{
			{Name: "SEARCH_API_KEY", Title: "API key", Secret: true},
			{Name: "SEARCH_REGION", Title: "Region", Default: "eu"},
		},
	})
}

// nodeEntry is the node connector: its tool needs tinydep, installed by
// npm ci from its lockfile.
func (e *env) nodeEntry(name string) db.CatalogEntry {
	return e.catalog(db.CatalogEntry{
		Name: name, Kind: db.KindLocal, Transport: "stdio",
		Command: "node", Args: []string{"server.js"}, Source: copySource(e.t, "nodeserver"),
	})
}

// echoEntry runs the Go echo test server; its source is a one-file dir.
func (e *env) echoEntry(name string) db.CatalogEntry {
	src := filepath.Join(e.t.TempDir(), name)
	if err := os.MkdirAll(src, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "README"), []byte("echo\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return e.catalog(db.CatalogEntry{
		Name: name, Kind: db.KindLocal, Transport: "stdio",
		Command: filepath.Join(binDir, "echo"), Source: src,
	})
}

// wait waits for a job and fails the test if it failed.
func wait(t *testing.T, j *connectors.Job, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := j.Wait(ctx); err != nil {
		t.Fatalf("job failed: %v\nlog:\n%s", err, j.Log())
	}
}

// waitFailed waits for a job that must fail and returns its error.
func waitFailed(t *testing.T, j *connectors.Job, err error) error {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = j.Wait(ctx)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("job: got %v; want it to fail\nlog:\n%s", err, j.Log())
	}
	return err
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// callText calls a namespaced tool and returns its text.
func callText(t *testing.T, p pbmcp.Provider, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := p.CallTool(ctx, name, args)
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("CallTool(%s): tool error %q", name, parts)
	}
	return strings.Join(parts, "")
}

func toolNames(p pbmcp.Provider) []string {
	var out []string
	for _, d := range p.ToolDefs() {
		out = append(out, d.Name)
	}
	return out
}

func stateOf(p pbmcp.Provider, name string) pbmcp.State {
	for _, s := range p.States() {
		if s.Server == name {
			return s
		}
	}
	return pbmcp.State{}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return syscall.Kill(pid, 0) == nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
