package install

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"patchbay"
)

// fixedNow is the install time every test reconciler reports.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newReconciler() *Reconciler {
	return &Reconciler{Now: func() time.Time { return fixedNow }}
}

// installPython installs a fresh copy of the pyconn fixture and returns
// its source dir, its install dir and the options that install it.
func installPython(t *testing.T) (src, dest string, opts Options) {
	t.Helper()
	needTools(t, "python3")
	src = copyFixture(t, "pyconn")
	dest = filepath.Join(t.TempDir(), "installs", "pyconn")
	opts = offlinePip(buildWheel(t))
	res, err := newReconciler().Ensure(context.Background(), src, dest, opts, nil)
	if err != nil {
		t.Fatalf("first Ensure: %v", err)
	}
	if !res.Changed {
		t.Fatal("first Ensure: got Changed false; want true")
	}
	return src, dest, opts
}

func TestEnsurePython(t *testing.T) {
	t.Run("installs requirements into .pydeps and records the hash", func(t *testing.T) {
		t.Parallel()
		src, dest, _ := installPython(t)
		m, err := ReadMarker(dest)
		if err != nil {
			t.Fatal(err)
		}
		if want := mustHash(t, src); m.Hash != want {
			t.Errorf("got marker hash %s; want %s", m.Hash, want)
		}
		if !m.InstalledAt.Equal(fixedNow) {
			t.Errorf("got installed_at %v; want %v", m.InstalledAt, fixedNow)
		}
		if !strings.HasPrefix(m.Tools["python"], "Python 3") {
			t.Errorf("got python version %q; want Python 3.x", m.Tools["python"])
		}
		if !exists(filepath.Join(dest, ".pydeps", "tinypkg", "__init__.py")) {
			t.Error("tinypkg is not installed in .pydeps")
		}
		if got := names(t, filepath.Dir(dest)); len(got) != 1 || got[0] != "pyconn" {
			t.Errorf("got %v next to the install; want only [pyconn]", got)
		}
	})

	t.Run("verify imports the dependency with PythonPath and fails without it", func(t *testing.T) {
		t.Parallel()
		_, dest, _ := installPython(t)
		cmd := []string{"python3", "-c", "import tinypkg; print(tinypkg.ANSWER)"}
		out, err := Verify(context.Background(), dest, PythonPath(dest, baseEnv()), cmd, 30*time.Second)
		if err != nil || strings.TrimSpace(out) != "42" {
			t.Errorf("with PythonPath: got %q, %v; want 42, nil", out, err)
		}
		out, err = Verify(context.Background(), dest, baseEnv(), cmd, 30*time.Second)
		if err == nil || !strings.Contains(err.Error(), "ModuleNotFoundError") || !strings.Contains(err.Error(), "exited with code 1") {
			t.Errorf("without PythonPath: got %q, %v; want exit code 1 and ModuleNotFoundError", out, err)
		}
		// The server itself runs the same way.
		out, err = Verify(context.Background(), dest, PythonPath(dest, baseEnv()), []string{"python3", "server.py"}, 30*time.Second)
		if err != nil || strings.TrimSpace(out) != "answer=42" {
			t.Errorf("server.py: got %q, %v; want answer=42", out, err)
		}
	})

	t.Run("a declared PYTHONPATH is the author's", func(t *testing.T) {
		t.Parallel()
		_, dest, _ := installPython(t)
		declared := baseEnv()
		declared["PYTHONPATH"] = t.TempDir()
		env := PythonPath(dest, declared)
		if env["PYTHONPATH"] != declared["PYTHONPATH"] {
			t.Errorf("got PYTHONPATH %q; want the declared %q", env["PYTHONPATH"], declared["PYTHONPATH"])
		}
		if _, err := Verify(context.Background(), dest, env, []string{"python3", "-c", "import tinypkg"}, 30*time.Second); err == nil {
			t.Error("got nil error; want the import to fail under the declared PYTHONPATH")
		}
		if got := PythonPath(t.TempDir(), baseEnv()); got["PYTHONPATH"] != "" {
			t.Errorf("without .pydeps: got PYTHONPATH %q; want none", got["PYTHONPATH"])
		}
	})

	t.Run("same hash is a no-op that touches nothing", func(t *testing.T) {
		t.Parallel()
		src, dest, opts := installPython(t)
		parent := filepath.Dir(dest)
		before := snapshot(t, parent)
		var out bytes.Buffer
		res, err := newReconciler().Ensure(context.Background(), src, dest, opts, &out)
		if err != nil {
			t.Fatal(err)
		}
		if res.Changed || res.Log != "" || out.Len() != 0 {
			t.Errorf("got Changed %v, log %q, output %q; want false and nothing", res.Changed, res.Log, out.String())
		}
		if res.Hash != mustHash(t, src) {
			t.Errorf("got hash %s; want the source hash", res.Hash)
		}
		// The parent is in the snapshot too, so a staging directory made
		// and removed again would show as a changed mtime.
		if diff := diffSnapshots(before, snapshot(t, parent)); len(diff) > 0 {
			t.Errorf("no-op Ensure touched %v; want nothing", diff)
		}
	})

	t.Run("a changed source reinstalls", func(t *testing.T) {
		t.Parallel()
		src, dest, opts := installPython(t)
		old, _ := ReadMarker(dest)
		writeFile(t, filepath.Join(src, "extra.py"), "X = 1\n")
		res, err := newReconciler().Ensure(context.Background(), src, dest, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ReadMarker(dest)
		if !res.Changed || m.Hash == old.Hash || m.Hash != mustHash(t, src) || res.Hash != m.Hash {
			t.Errorf("got Changed %v, marker %s (was %s); want true and the new source hash", res.Changed, m.Hash, old.Hash)
		}
		if !exists(filepath.Join(dest, "extra.py")) || !exists(filepath.Join(dest, ".pydeps", "tinypkg")) {
			t.Error("reinstall lacks the new file or the dependency")
		}
	})

	t.Run("a failed install keeps the previous install", func(t *testing.T) {
		t.Parallel()
		src, dest, opts := installPython(t)
		parent := filepath.Dir(dest)
		before := snapshot(t, dest)
		writeFile(t, filepath.Join(src, "requirements.txt"), "tinypkg==0.1.0\nno-such-package-patchbay==9.9\n")
		res, err := newReconciler().Ensure(context.Background(), src, dest, opts, nil)
		if patchbay.ErrorCode(err) != patchbay.EINVALID {
			t.Fatalf("got %v; want an EINVALID error", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "no-such-package-patchbay") || !strings.Contains(msg, "exited with code") {
			t.Errorf("got error %q; want the exit code and the pip output tail", msg)
		}
		if res.Changed || !strings.Contains(res.Log, "No matching distribution") {
			t.Errorf("got Changed %v, log %q; want false and pip's complaint", res.Changed, res.Log)
		}
		if diff := diffSnapshots(before, snapshot(t, dest)); len(diff) > 0 {
			t.Errorf("failed install changed the previous install: %v", diff)
		}
		if got := names(t, parent); len(got) != 1 {
			t.Errorf("got %v next to the install; want only the install (no staging, home or old dirs)", got)
		}
	})

	t.Run("a first install that fails leaves nothing behind", func(t *testing.T) {
		t.Parallel()
		needTools(t, "python3")
		src := copyFixture(t, "pyconn")
		writeFile(t, filepath.Join(src, "requirements.txt"), "no-such-package-patchbay==9.9\n")
		parent := t.TempDir()
		_, err := newReconciler().Ensure(context.Background(), src, filepath.Join(parent, "pyconn"), offlinePip(t.TempDir()), nil)
		if err == nil {
			t.Fatal("got nil error; want the install to fail")
		}
		if got := names(t, parent); len(got) != 0 {
			t.Errorf("got %v; want an empty parent", got)
		}
	})
}

func TestEnsureNode(t *testing.T) {
	t.Run("npm ci installs the locked dependency", func(t *testing.T) {
		t.Parallel()
		needTools(t, "npm", "node")
		src := copyFixture(t, "nodeconn")
		dest := filepath.Join(t.TempDir(), "nodeconn")
		rec := &lineRecorder{}
		res, err := newReconciler().Ensure(context.Background(), src, dest, Options{}, rec)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Changed || !strings.Contains(res.Log, "npm ci --omit=dev --no-audit --no-fund --ignore-scripts") || !strings.Contains(res.Log, "added 1 package") {
			t.Errorf("got Changed %v, log %q; want true and npm's report", res.Changed, res.Log)
		}
		if got := rec.String(); got != res.Log {
			t.Errorf("got streamed output %q; want it equal to Result.Log %q", got, res.Log)
		}
		out, err := Verify(context.Background(), dest, baseEnv(), []string{"node", "-e", "console.log(require('tinydep').answer)"}, 30*time.Second)
		if err != nil || strings.TrimSpace(out) != "42" {
			t.Errorf("require from the install: got %q, %v; want 42", out, err)
		}
		if m, _ := ReadMarker(dest); m.Tools["npm"] == "" || m.Tools["npm"] == "unknown" {
			t.Errorf("got npm version %q in the marker; want npm's version", m.Tools["npm"])
		}
	})

	t.Run("a package.json without a lockfile is rejected", func(t *testing.T) {
		src := copyFixture(t, "nodeconn")
		os.Remove(filepath.Join(src, "package-lock.json"))
		parent := t.TempDir()
		_, err := newReconciler().Ensure(context.Background(), src, filepath.Join(parent, "nodeconn"), Options{}, nil)
		if patchbay.ErrorCode(err) != patchbay.EINVALID || !strings.Contains(patchbay.ErrorMessage(err), "package-lock.json") {
			t.Errorf("got %v; want an EINVALID error naming the missing lockfile", err)
		}
		if got := names(t, parent); len(got) != 0 {
			t.Errorf("got %v; want nothing created", got)
		}
	})
}

func TestEnsureStreamsOutputWhileRunning(t *testing.T) {
	// The fake npm prints a line and then blocks until the test has seen
	// that line, so buffering the output until exit would deadlock
	// (bounded by the context below) instead of passing.
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	npm := writeScript(t, "npm", `[ "$1" = --version ] && { echo 0.0.0-fake; exit 0; }
echo "first line"
read reply < `+fifo+`
echo "second line after $reply"
`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := &lineRecorder{onLine: func(line string) {
		if line == "first line" {
			go func() {
				if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
					t.Error(err)
				}
			}()
		}
	}}
	r := newReconciler()
	r.NPM = npm
	res, err := r.Ensure(ctx, copyFixture(t, "nodeconn"), filepath.Join(t.TempDir(), "nodeconn"), Options{}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec.String(), "second line after go\n") || !strings.Contains(res.Log, "second line after go") {
		t.Errorf("got streamed %q and log %q; want both to hold the second line", rec.String(), res.Log)
	}
	if res.Marker.Tools["npm"] != "0.0.0-fake" {
		t.Errorf("got npm version %q; want 0.0.0-fake", res.Marker.Tools["npm"])
	}
}

func TestEnsureCancelKillsInstall(t *testing.T) {
	// The fake npm waits on a child in its process group; only killing
	// the group (not just the shell) closes the output pipe promptly.
	npm := writeScript(t, "npm", `sleep 300 &
echo started
wait
`)
	src := copyFixture(t, "nodeconn")
	parent := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &lineRecorder{onLine: func(line string) {
		if line == "started" {
			cancel()
		}
	}}
	r := newReconciler()
	r.NPM = npm
	start := time.Now()
	_, err := r.Ensure(ctx, src, filepath.Join(parent, "nodeconn"), Options{}, rec)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v; want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed >= waitDelay {
		t.Errorf("Ensure took %v; want the process group killed well before the %v wait delay", elapsed, waitDelay)
	}
	if got := names(t, parent); len(got) != 0 {
		t.Errorf("got %v; want the staging dir removed", got)
	}
}

func TestEnsureInstallEnvironmentHasNoSecrets(t *testing.T) {
	t.Setenv("PATCHBAY_TEST_SECRET", "hunter2")
	npm := writeScript(t, "npm", `[ "$1" = --version ] && { echo 0; exit 0; }
env
`)
	r := newReconciler()
	r.NPM = npm
	dest := filepath.Join(t.TempDir(), "nodeconn")
	res, err := r.Ensure(context.Background(), copyFixture(t, "nodeconn"), dest, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Log, "hunter2") {
		t.Errorf("install environment leaked the parent's secret: %s", res.Log)
	}
	if !strings.Contains(res.Log, "HOME="+dest+".home-") {
		t.Errorf("got log %q; want HOME in a temporary home next to the install", res.Log)
	}
}

func TestVerify(t *testing.T) {
	t.Run("reports the exit code and output tail", func(t *testing.T) {
		_, err := Verify(context.Background(), t.TempDir(), baseEnv(), []string{"sh", "-c", "echo checking; echo broken >&2; exit 3"}, 10*time.Second)
		if patchbay.ErrorCode(err) != patchbay.EINVALID || !strings.Contains(err.Error(), "exited with code 3") || !strings.Contains(err.Error(), "checking\nbroken") {
			t.Errorf("got %v; want EINVALID with exit code 3 and the output", err)
		}
	})
	t.Run("times out", func(t *testing.T) {
		_, err := Verify(context.Background(), t.TempDir(), baseEnv(), []string{"sh", "-c", "echo waiting; exec sleep 300"}, 200*time.Millisecond)
		if patchbay.ErrorCode(err) != patchbay.EINVALID || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "waiting") {
			t.Errorf("got %v; want EINVALID timed out with the output", err)
		}
	})
	t.Run("gets exactly the given environment", func(t *testing.T) {
		t.Setenv("PATCHBAY_TEST_SECRET", "hunter2")
		out, err := Verify(context.Background(), t.TempDir(), map[string]string{"PATH": os.Getenv("PATH"), "ONLY": "this"}, []string{"env"}, 10*time.Second)
		if err != nil || strings.Contains(out, "hunter2") || !strings.Contains(out, "ONLY=this") {
			t.Errorf("got %q, %v; want only the given variables", out, err)
		}
	})
}

// lineRecorder is an io.Writer that records what it receives and calls
// onLine for each complete line, as it arrives.
type lineRecorder struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	onLine func(string)
}

func (w *lineRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	w.mu.Unlock()
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if strings.HasSuffix(line, "\n") && w.onLine != nil {
			w.onLine(strings.TrimSuffix(line, "\n"))
		}
	}
	return len(p), nil
}

func (w *lineRecorder) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestEnsureCheckGuardsTheSwap(t *testing.T) {
	t.Parallel()
	src, dest, opts := installPython(t)
	before := snapshot(t, dest)
	if err := os.WriteFile(filepath.Join(src, "server.py"), []byte("# changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var sawStaging string
	opts.Check = func(ctx context.Context, dir string, out io.Writer) error {
		sawStaging = dir
		if !exists(filepath.Join(dir, ".pydeps", "tinypkg", "__init__.py")) {
			t.Errorf("check ran before dependencies were installed in %s", dir)
		}
		io.WriteString(out, "verify says no\n")
		return patchbay.Errorf(patchbay.EINVALID, "verify failed")
	}
	res, err := newReconciler().Ensure(context.Background(), src, dest, opts, nil)
	if patchbay.ErrorCode(err) != patchbay.EINVALID {
		t.Fatalf("got %v; want the check's EINVALID error", err)
	}
	if sawStaging == dest || sawStaging == "" {
		t.Errorf("check ran in %q; want a staging directory, not the live install", sawStaging)
	}
	if !strings.Contains(res.Log, "verify says no") {
		t.Errorf("install log lacks the check's output:\n%s", res.Log)
	}
	if d := diffSnapshots(before, snapshot(t, dest)); len(d) > 0 {
		t.Errorf("a failed check changed the live install: %v", d)
	}

	opts.Check = func(ctx context.Context, dir string, out io.Writer) error { return nil }
	res, err = newReconciler().Ensure(context.Background(), src, dest, opts, nil)
	if err != nil || !res.Changed {
		t.Fatalf("Ensure with a passing check: changed=%v err=%v", res.Changed, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "server.py")); string(b) != "# changed\n" {
		t.Errorf("live install not updated after a passing check: %q", b)
	}
}

// Two Ensures of one directory at once run one after the other (the
// second finds the first's install and does nothing), and no lock outlives
// its users.
func TestEnsureSerialisesOneDirectoryAndForgetsItsLock(t *testing.T) {
	t.Parallel()
	needTools(t, "python3")
	src := copyFixture(t, "pyconn")
	dest := filepath.Join(t.TempDir(), "installs", "pyconn")
	opts := offlinePip(buildWheel(t))
	r := newReconciler()
	results := make([]Result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = r.Ensure(context.Background(), src, dest, opts, nil)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("Ensure: %v, %v", errs[0], errs[1])
	}
	if results[0].Changed == results[1].Changed {
		t.Errorf("changed: %v and %v; want exactly one install and one no-op", results[0].Changed, results[1].Changed)
	}
	if n := r.locks.Len(); n != 0 {
		t.Errorf("%d install locks left after both finished; want none", n)
	}
}
