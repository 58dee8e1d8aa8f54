package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkEnsureNoop measures the up-to-date check for a connector
// whose source and install both hold a node_modules of 20,000 small
// files; compare BenchmarkEnsureNoopNoModules. The check hashes only
// source, so the two should be close.
func BenchmarkEnsureNoop(b *testing.B) {
	benchmarkNoop(b, 20000)
}

// BenchmarkEnsureNoopNoModules is BenchmarkEnsureNoop without
// node_modules.
func BenchmarkEnsureNoopNoModules(b *testing.B) {
	benchmarkNoop(b, 0)
}

func benchmarkNoop(b *testing.B, modules int) {
	root := b.TempDir()
	src := filepath.Join(root, "src")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(fixtures, "nodeconn"))); err != nil {
		b.Fatal(err)
	}
	writeModules(b, src, modules)
	// Build the install by hand: the benchmark is about the no-op path,
	// not npm.
	dest := filepath.Join(root, "dest")
	if err := os.Mkdir(dest, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := copySource(src, dest); err != nil {
		b.Fatal(err)
	}
	writeModules(b, dest, modules)
	hash, err := Hash(src)
	if err != nil {
		b.Fatal(err)
	}
	if err := writeMarker(dest, Marker{Hash: hash}); err != nil {
		b.Fatal(err)
	}
	r := &Reconciler{}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := r.Ensure(ctx, src, dest, Options{}, nil)
		if err != nil || res.Changed {
			b.Fatalf("got %+v, %v; want a no-op", res, err)
		}
	}
}

// writeModules fills dir/node_modules with n small files, 100 a package.
func writeModules(b *testing.B, dir string, n int) {
	b.Helper()
	for i := 0; i < n; i++ {
		pkg := filepath.Join(dir, "node_modules", fmt.Sprintf("pkg%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(pkg, fmt.Sprintf("f%03d.js", i%100)), []byte("module.exports = 1;\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
