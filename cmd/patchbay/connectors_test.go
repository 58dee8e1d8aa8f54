package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"patchbay/db"
	"patchbay/mcp"
)

// testServers are the Go test MCP servers, built once for the tests that
// run connectors under the patchbay binary.
var testServers struct {
	once sync.Once
	dir  string
	err  error
}

func testServerPath(t *testing.T, name string) string {
	t.Helper()
	testServers.once.Do(func() {
		testServers.dir, testServers.err = os.MkdirTemp("", "patchbay-e2e-servers-")
		if testServers.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", testServers.dir+"/",
			"patchbay/testdata/mcpservers/forker", "patchbay/testdata/mcpservers/echo")
		if out, err := cmd.CombinedOutput(); err != nil {
			testServers.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if testServers.err != nil {
		t.Fatal(testServers.err)
	}
	return filepath.Join(testServers.dir, name)
}

// writeConnector writes a connector directory holding connector.json.
func writeConnector(t *testing.T, m map[string]any) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), m["name"].(string))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// addMarkedGlobal adds a connector running command to dataDir's catalog
// with `patchbay catalog add` and makes it an enabled global connector. It
// returns the KEY=VALUE marker in its declared environment, which its
// processes (and any they start) carry, so markedPids can find them.
func addMarkedGlobal(t *testing.T, dataDir, name, command string) string {
	t.Helper()
	markBytes := make([]byte, 8)
	rand.Read(markBytes)
	mark := "PB_E2E_MARK=" + hex.EncodeToString(markBytes)
	k, v, _ := strings.Cut(mark, "=")
	conn := writeConnector(t, map[string]any{
		"name": name, "kind": "local", "scope": "both", "transport": "stdio",
		"command": command, "env": map[string]string{k: v},
	})
	out := mustRunPatchbay(t, nil, "catalog", "add", "--data-dir", dataDir, "--dir", conn)
	if want := "catalog entry " + name + " (local/stdio, scope both) saved"; !strings.Contains(out, want) {
		t.Errorf("catalog add printed %q; want %q", out, want)
	}
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(dataDir, "patchbay.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	entry, err := d.CatalogEntryByName(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if entry.Source != conn || entry.Command != command {
		t.Errorf("catalog entry: source %q command %q; want %q and %q", entry.Source, entry.Command, conn, command)
	}
	if _, err := d.CreateGlobalServer(ctx, 0, db.GlobalServer{CatalogID: entry.ID, Name: name, Enabled: true}, nil); err != nil {
		t.Fatal(err)
	}
	return mark
}

// markedPids lists live processes whose environment holds mark: a
// connector's declared variable, inherited by any grandchild it spawns.
func markedPids(mark string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte(mark)) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
				continue // a zombie has exited; its parent has yet to reap it
			}
		}
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return pids
}

func waitForPids(t *testing.T, what string, mark string, ok func(n int) bool) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pids := markedPids(mark)
		if ok(len(pids)) {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; marked processes now: %v", what, pids)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// A global connector is connected at boot; when Patchbay stops (SIGTERM)
// or is killed (kill -9), no connector process survives, grandchildren
// included.
func TestServeRunsGlobalConnectorsAndLeavesNoOrphans(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc")
	}
	dataDir := t.TempDir()
	mark := addMarkedGlobal(t, dataDir, "forker", testServerPath(t, "forker"))

	for _, stop := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"kill -9", syscall.SIGKILL}} {
		t.Run(stop.name, func(t *testing.T) {
			p := startBinary(t, dataDir)
			// The connector and the grandchild it spawned.
			pids := waitForPids(t, "the connector and its grandchild to run", mark, func(n int) bool { return n >= 2 })
			p.signal(t, stop.sig)
			code := p.wait(t, 20*time.Second)
			if stop.sig == syscall.SIGTERM && code != 0 {
				t.Errorf("exit code after SIGTERM: %d; stderr:\n%s", code, p.stderr)
			}
			waitForPids(t, fmt.Sprintf("connector processes %v to be gone after %s", pids, stop.name), mark, func(n int) bool { return n == 0 })
		})
	}
}

func TestCatalogAddRefusesABadManifest(t *testing.T) {
	dataDir := t.TempDir()
	for name, c := range map[string]struct {
		manifest map[string]any
		want     string
	}{
		"unknown field": {map[string]any{"name": "x", "kind": "local", "transport": "stdio", "command": "x", "comand": "typo"}, `unknown field "comand"`},
		"bad kind":      {map[string]any{"name": "x", "kind": "cloud", "transport": "stdio", "command": "x"}, "kind"},
		"bad name":      {map[string]any{"name": "a__b", "kind": "local", "transport": "stdio", "command": "x"}, "name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := runPatchbay(t, nil, "catalog", "add", "--data-dir", dataDir, "--dir", writeConnector(t, c.manifest))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v; want an error mentioning %q", err, c.want)
			}
		})
	}
	if _, err := runPatchbay(t, nil, "catalog", "add", "--data-dir", dataDir); err == nil || !strings.Contains(err.Error(), "--dir is required") {
		t.Errorf("without --dir: %v", err)
	}
}

// With --sandbox bwrap, a connector runs in its own mount namespace where
// only its own directory and the system's read-only files exist: not the
// host's /etc/shadow, not Patchbay's database or key.
func TestServeSandboxRunsConnectorsUnderBwrap(t *testing.T) {
	if !mcp.BwrapAvailable() {
		if os.Getenv("CI") != "" {
			t.Fatal("bubblewrap is required in CI")
		}
		t.Skip("bwrap is not usable here")
	}
	dataDir := t.TempDir()
	mark := addMarkedGlobal(t, dataDir, "echo", testServerPath(t, "echo"))

	startPatchbay(t, nil, "--data-dir", dataDir, "--sandbox", "bwrap")
	pids := waitForPids(t, "the sandboxed connector to run", mark, func(n int) bool { return n >= 1 })
	root := fmt.Sprintf("/proc/%d/root", pids[0])
	own, _ := os.Readlink("/proc/self/ns/mnt")
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pids[0]))
	if err != nil || theirs == own {
		t.Fatalf("connector mount namespace %q (err %v); want one of its own, not %q", theirs, err, own)
	}
	installDir := filepath.Join(dataDir, "connectors", "global", "echo")
	if _, err := os.Stat(root + installDir); err != nil {
		t.Errorf("the connector cannot see its own directory: %v", err)
	}
	for _, hidden := range []string{"/etc/shadow", filepath.Join(dataDir, "patchbay.db"), filepath.Join(dataDir, "secret.key")} {
		if _, err := os.Stat(root + hidden); !os.IsNotExist(err) {
			t.Errorf("the sandboxed connector can see %s (stat: %v)", hidden, err)
		}
	}
}

func TestServeRefusesAnUnknownSandbox(t *testing.T) {
	_, err := runPatchbay(t, nil, "serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--sandbox", "docker")
	if err == nil || !strings.Contains(err.Error(), `--sandbox "docker": want none or bwrap`) {
		t.Errorf("got %v", err)
	}
}
