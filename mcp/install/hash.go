// Package install lands a local connector's files in its install
// directory and installs its dependencies there, once per change of the
// connector's source.
//
// Every path that puts new connector files on disk (activation, a
// per-user start, a global enable, the refresh after a marketplace
// update) goes through Reconciler.Ensure. The reconciler is keyed on a
// hash of the connector's source files rather than on a version string,
// so an unchanged connector is a cheap no-op and any change, including
// one that adds a requirements.txt, reinstalls.
package install

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"patchbay"
)

// MarkerFile is the file, at the root of an install directory, that
// records which source hash was installed there. It is never part of
// the source hash itself.
const MarkerFile = ".patchbay-install.json"

// excludedNames are directory (or file) names that are never source:
// installed dependencies, version control, and Python's bytecode cache,
// which running a connector from its source tree would otherwise turn
// into a spurious reinstall.
var excludedNames = map[string]bool{
	"node_modules": true,
	".pydeps":      true,
	".git":         true,
	"__pycache__":  true,
}

// Hash returns a digest of the connector source in srcDir: every file's
// slash-separated relative path, permission bits and content, every
// directory's path and every symlink's target, in lexical order. Installed
// dependencies (node_modules, .pydeps), .git, __pycache__ and the
// install marker are excluded. A symlink that is absolute or resolves
// outside srcDir is an error, as is any special file.
func Hash(srcDir string) (string, error) {
	h := sha256.New()
	buf := make([]byte, 32<<10)
	err := walkSource(srcDir, func(e sourceEntry) error {
		return hashEntry(h, e, buf)
	})
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// hashEntry writes one entry to h. Each field is NUL-terminated and
// content is length-prefixed, so no two different trees encode alike.
func hashEntry(h hash.Hash, e sourceEntry, buf []byte) error {
	perm := e.info.Mode().Perm()
	switch {
	case e.info.IsDir():
		// Directory permissions are left out: they follow the umask, and
		// the staging copy keeps them writable.
		fmt.Fprintf(h, "dir\x00%s\x00", e.rel)
	case e.info.Mode()&fs.ModeSymlink != 0:
		fmt.Fprintf(h, "link\x00%s\x00%s\x00", e.rel, e.target)
	default:
		fmt.Fprintf(h, "file\x00%s\x00%o\x00%d\x00", e.rel, perm, e.info.Size())
		f, err := os.Open(e.path)
		if err != nil {
			return fmt.Errorf("install: hash: %w", err)
		}
		defer f.Close()
		// Hiding *os.File's WriteTo makes CopyBuffer use buf instead of
		// allocating a buffer per file.
		n, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf)
		if err != nil {
			return fmt.Errorf("install: hash %s: %w", e.rel, err)
		}
		if n != e.info.Size() {
			return fmt.Errorf("install: hash %s: file changed while hashing", e.rel)
		}
	}
	return nil
}

// sourceEntry is one entry of a connector source tree.
type sourceEntry struct {
	rel    string // slash-separated, relative to the root
	path   string // absolute path on disk
	info   fs.FileInfo
	target string // symlink target, only for symlinks
}

// walkSource calls fn for every source entry below root in lexical
// order. Hash and the staging copy both use it, so what is hashed is
// exactly what is copied.
func walkSource(root string, fn func(sourceEntry) error) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("install: source dir: %w", err)
	}
	realRoot, err = filepath.Abs(realRoot)
	if err != nil {
		return fmt.Errorf("install: source dir: %w", err)
	}
	return filepath.WalkDir(realRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("install: walk source: %w", err)
		}
		if path == realRoot {
			return nil
		}
		rel, err := filepath.Rel(realRoot, path)
		if err != nil {
			return fmt.Errorf("install: walk source: %w", err)
		}
		if excludedNames[d.Name()] || rel == MarkerFile {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("install: walk source: %w", err)
		}
		e := sourceEntry{rel: filepath.ToSlash(rel), path: path, info: info}
		switch mode := info.Mode(); {
		case mode.IsDir(), mode.IsRegular():
		case mode&fs.ModeSymlink != 0:
			if e.target, err = checkSymlink(realRoot, path, e.rel); err != nil {
				return err
			}
		default:
			return patchbay.Errorf(patchbay.EINVALID, "connector file %s is not a regular file, directory or symlink", e.rel)
		}
		return fn(e)
	})
}

// checkSymlink returns the target of the symlink at path, or an error if
// the link could lead outside root: an absolute target, a relative one
// that climbs out, or a chain of links that resolves outside.
func checkSymlink(root, path, rel string) (string, error) {
	target, err := os.Readlink(path)
	if err != nil {
		return "", fmt.Errorf("install: read link %s: %w", rel, err)
	}
	escapes := patchbay.Errorf(patchbay.EINVALID, "connector symlink %s points outside the connector (%s)", rel, target)
	if filepath.IsAbs(target) || !within(root, filepath.Join(filepath.Dir(path), target)) {
		return "", escapes
	}
	// A dangling link is allowed (it may point at a dependency that is
	// only installed later); one that resolves must stay inside.
	if resolved, err := filepath.EvalSymlinks(path); err == nil && !within(root, resolved) {
		return "", escapes
	}
	return target, nil
}

// within reports whether path is root or lies below it, lexically.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
