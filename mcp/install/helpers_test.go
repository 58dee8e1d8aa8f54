package install

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"patchbay/mcp/install/installtest"
)

// fixtures is where the test connectors live.
const fixtures = "../../testdata/connectors"

// copyFixture copies the named fixture connector into a fresh temporary
// directory and returns its path, so a test may edit its source.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(fixtures, name))); err != nil {
		t.Fatalf("copy fixture %s: %v", name, err)
	}
	return dst
}

// needTools skips the test when a real tool it drives is missing.
func needTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
}

// buildWheel builds the offline tinypkg wheel; see installtest.BuildWheel.
func buildWheel(t *testing.T) string {
	return installtest.BuildWheel(t, filepath.Join(fixtures, "pypkg"))
}

// offlinePip returns pip arguments that install only from wheelDir.
func offlinePip(wheelDir string) Options {
	return Options{PipArgs: installtest.OfflinePipArgs(wheelDir)}
}

// fileState is what a snapshot records about one path.
type fileState struct {
	Mode    fs.FileMode
	Size    int64
	ModTime time.Time
	Content string // file content or symlink target
}

// snapshot records every path under dir, dir itself included.
func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	snap := map[string]fileState{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		s := fileState{Mode: info.Mode(), Size: info.Size(), ModTime: info.ModTime()}
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			s.Content = string(b)
		case info.Mode()&fs.ModeSymlink != 0:
			if s.Content, err = os.Readlink(path); err != nil {
				return err
			}
		}
		rel, _ := filepath.Rel(dir, path)
		snap[rel] = s
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return snap
}

// diffSnapshots returns the paths that differ between two snapshots.
func diffSnapshots(before, after map[string]fileState) []string {
	var diff []string
	for p, b := range before {
		if a, ok := after[p]; !ok {
			diff = append(diff, "removed "+p)
		} else if a != b {
			diff = append(diff, "changed "+p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			diff = append(diff, "added "+p)
		}
	}
	sort.Strings(diff)
	return diff
}

// names lists a directory's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, e := range entries {
		list = append(list, e.Name())
	}
	return list
}

// writeScript writes an executable shell script into a temp dir.
func writeScript(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// baseEnv is a minimal environment for Verify in tests.
func baseEnv() map[string]string {
	return map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}
}
