// Package installtest holds test fixtures shared by Patchbay's tests: an
// offline wheel for the Python test connectors, and `npm ci` for the
// npm projects in testdata (the test OpenID Provider, server-everything).
package installtest

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BuildWheel packs the tinypkg package in pypkgDir (testdata/connectors/pypkg)
// into a pure-Python wheel and returns the directory holding it, for pip's
// --find-links. Packing it by hand keeps tests independent of setuptools
// and of the network.
func BuildWheel(t testing.TB, pypkgDir string) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "tinypkg-0.1.0-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	var record strings.Builder
	add := func(name string, data []byte) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(data))
	}
	src, err := os.ReadFile(filepath.Join(pypkgDir, "tinypkg", "__init__.py"))
	if err != nil {
		t.Fatal(err)
	}
	add("tinypkg/__init__.py", src)
	add("tinypkg-0.1.0.dist-info/METADATA", []byte("Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1.0\n"))
	add("tinypkg-0.1.0.dist-info/WHEEL", []byte("Wheel-Version: 1.0\nGenerator: patchbay-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
	record.WriteString("tinypkg-0.1.0.dist-info/RECORD,,\n")
	w, err := zw.Create("tinypkg-0.1.0.dist-info/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// OfflinePipArgs are pip arguments that install only from wheelDir.
func OfflinePipArgs(wheelDir string) []string {
	return []string{"--no-index", "--find-links", wheelDir}
}
