package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"patchbay"
)

func TestHash(t *testing.T) {
	t.Run("ignores installed dependencies, .git, __pycache__ and the marker", func(t *testing.T) {
		src := copyFixture(t, "pyconn")
		writeFile(t, filepath.Join(src, "sub", "keep.py"), "")
		before := mustHash(t, src)
		for _, p := range []string{
			"node_modules/dep/index.js", ".pydeps/tinypkg/__init__.py", ".git/HEAD",
			"__pycache__/server.cpython-311.pyc", "sub/node_modules/x.js", MarkerFile,
		} {
			writeFile(t, filepath.Join(src, p), "x")
		}
		if after := mustHash(t, src); after != before {
			t.Errorf("got hash %s after adding ignored files; want %s", after, before)
		}
	})

	t.Run("changes with content, added files, mode and renames", func(t *testing.T) {
		src := copyFixture(t, "pyconn")
		seen := map[string]string{mustHash(t, src): "original"}
		edits := []struct {
			name string
			edit func()
		}{
			{"content", func() { writeFile(t, filepath.Join(src, "helpers.py"), "# edited\n") }},
			{"added file", func() { writeFile(t, filepath.Join(src, "extra.py"), "") }},
			{"mode", func() { os.Chmod(filepath.Join(src, "server.py"), 0o755) }},
			{"rename", func() { os.Rename(filepath.Join(src, "extra.py"), filepath.Join(src, "extra2.py")) }},
			{"empty dir", func() { os.Mkdir(filepath.Join(src, "empty"), 0o755) }},
		}
		for _, e := range edits {
			e.edit()
			h := mustHash(t, src)
			if prev, ok := seen[h]; ok {
				t.Errorf("after %s edit: got the same hash as after %s", e.name, prev)
			}
			seen[h] = e.name
		}
	})

	t.Run("equal trees hash equal", func(t *testing.T) {
		if a, b := mustHash(t, copyFixture(t, "nodeconn")), mustHash(t, copyFixture(t, "nodeconn")); a != b {
			t.Errorf("got %s and %s for two copies of one fixture; want equal", a, b)
		}
	})

	t.Run("allows a symlink inside the tree", func(t *testing.T) {
		src := copyFixture(t, "pyconn")
		if err := os.Symlink("helpers.py", filepath.Join(src, "alias.py")); err != nil {
			t.Fatal(err)
		}
		mustHash(t, src)
	})

	for _, target := range []string{"/etc/passwd", "../outside", "sub/../../outside"} {
		t.Run("rejects a symlink escaping to "+target, func(t *testing.T) {
			src := copyFixture(t, "pyconn")
			writeFile(t, filepath.Join(filepath.Dir(src), "outside"), "secret")
			if err := os.Symlink(target, filepath.Join(src, "link")); err != nil {
				t.Fatal(err)
			}
			_, err := Hash(src)
			if patchbay.ErrorCode(err) != patchbay.EINVALID || !strings.Contains(err.Error(), "outside") {
				t.Errorf("got %v; want an EINVALID error about a link outside the connector", err)
			}
		})
	}

	t.Run("rejects a link through an excluded dir that ends outside", func(t *testing.T) {
		// node_modules is never walked, so only resolving the link
		// catches a chain that leaves the tree through it.
		src := copyFixture(t, "pyconn")
		if err := os.MkdirAll(filepath.Join(src, "node_modules"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/etc", filepath.Join(src, "node_modules", "evil")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("node_modules/evil", filepath.Join(src, "link")); err != nil {
			t.Fatal(err)
		}
		if _, err := Hash(src); patchbay.ErrorCode(err) != patchbay.EINVALID {
			t.Errorf("got %v; want the escaping link rejected", err)
		}
	})
}

func mustHash(t *testing.T, dir string) string {
	t.Helper()
	h, err := Hash(dir)
	if err != nil {
		t.Fatalf("Hash(%s): %v", dir, err)
	}
	return h
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
