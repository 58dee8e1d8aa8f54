package install

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"patchbay"
	"patchbay/mcp/keylock"
)

// Options tune one Ensure call.
type Options struct {
	// AllowScripts lets npm run package lifecycle scripts. Off by
	// default: install scripts are arbitrary code from the dependency
	// tree.
	AllowScripts bool
	// PipArgs are appended to the pip install command, e.g.
	// "--no-index", "--find-links", dir.
	PipArgs []string
	// Check, when set, runs in the staging directory after dependencies
	// are installed and before the swap (a connector's verify command).
	// Its error fails the install, so a copy that does not pass never
	// replaces a working one. out receives its output for the log.
	Check func(ctx context.Context, stagingDir string, out io.Writer) error
}

// Result describes what Ensure did.
type Result struct {
	// Changed is true when Ensure installed a new copy, false when the
	// install directory was already up to date and nothing was touched.
	Changed bool
	// Hash is the source hash now installed.
	Hash string
	// Marker is the install directory's marker.
	Marker Marker
	// Log is the install output, the last 256 KiB of it. Empty for a
	// no-op.
	Log string
}

// Reconciler keeps connector install directories in step with their
// source. Its zero value is usable; it must not be copied after first
// use.
type Reconciler struct {
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
	// Rand supplies the random suffix of staging directories;
	// crypto/rand when nil.
	Rand io.Reader
	// NPM is the npm executable; "npm" when empty.
	NPM string
	// Python is the Python interpreter that runs pip; "python3" when
	// empty.
	Python string
	// Env lists extra KEY=VALUE pairs for install commands, such as an
	// HTTPS_PROXY. Install commands otherwise get only PATH, HOME and
	// LANG; never put secrets here.
	Env []string
	// Log, when set, receives one message per decision, with slog-style
	// key-value pairs.
	Log func(msg string, args ...any)

	locks keylock.Locks
}

// Ensure makes destDir an install of the connector source in srcDir
// with its dependencies installed, and is the one way connector files
// land on disk.
//
// When destDir's marker records the current Hash(srcDir), Ensure writes
// nothing and returns Changed false. Otherwise it copies the source into
// a sibling staging directory, installs dependencies there (npm ci for a
// package.json, which must come with a lockfile; pip install --target
// .pydeps for a requirements.txt), writes the marker and swaps the
// staging directory into place. Install output goes line by line to out
// (which may be nil) and into Result.Log.
//
// On any failure the previous install is left as it was and the staging
// directory is removed. An unusable connector (no lockfile, an escaping
// symlink, a failing install) is an EINVALID *patchbay.Error whose
// message ends with the tail of the install output; a cancelled ctx
// kills the install and is returned wrapped.
func (r *Reconciler) Ensure(ctx context.Context, srcDir, destDir string, opts Options, out io.Writer) (Result, error) {
	destDir, err := filepath.Abs(destDir)
	if err != nil {
		return Result{}, fmt.Errorf("install: %w", err)
	}
	// Two installs into one directory would race on the swap; other
	// directories are not held up.
	unlock, err := r.locks.Lock(ctx, destDir)
	if err != nil {
		return Result{}, fmt.Errorf("install: waiting for %s: %w", destDir, err)
	}
	defer unlock()

	want, m, upToDate, err := Status(srcDir, destDir)
	if err != nil {
		return Result{}, err
	}
	if upToDate {
		r.log("install: up to date", "dest", destDir, "hash", want)
		return Result{Hash: want, Marker: m}, nil
	}
	if err := checkLockfile(srcDir); err != nil {
		return Result{}, err
	}
	r.log("install: installing", "dest", destDir, "hash", want)
	sink := newOutputSink(out)
	m, err = r.install(ctx, srcDir, destDir, opts, sink)
	res := Result{Log: sink.String()}
	if err != nil {
		r.log("install: failed", "dest", destDir, "err", err)
		return res, err
	}
	res.Changed, res.Hash, res.Marker = true, m.Hash, m
	return res, nil
}

// Status reports whether destDir holds an install of srcDir's current
// source: the source hash, destDir's marker (zero if none) and whether
// they match. It writes nothing; Ensure uses it to decide on a no-op, and
// callers use it to skip recording a run that would change nothing.
func Status(srcDir, destDir string) (hash string, m Marker, upToDate bool, err error) {
	hash, err = Hash(srcDir)
	if err != nil {
		return "", Marker{}, false, err
	}
	m, err = ReadMarker(destDir)
	if err != nil {
		return hash, Marker{}, false, nil
	}
	return hash, m, m.Hash == hash, nil
}

// checkLockfile rejects a node connector without a lockfile: npm ci
// needs one, and without it the dependency tree would be whatever the
// registry serves today.
func checkLockfile(srcDir string) error {
	if !exists(filepath.Join(srcDir, "package.json")) {
		return nil
	}
	for _, name := range []string{"package-lock.json", "npm-shrinkwrap.json"} {
		if exists(filepath.Join(srcDir, name)) {
			return nil
		}
	}
	return patchbay.Errorf(patchbay.EINVALID,
		"connector has a package.json but no package-lock.json or npm-shrinkwrap.json; commit a lockfile (npm install --package-lock-only)")
}

// install builds a fresh install in a staging directory next to destDir
// and swaps it in, returning the new marker.
func (r *Reconciler) install(ctx context.Context, srcDir, destDir string, opts Options, sink *outputSink) (Marker, error) {
	if err := os.MkdirAll(filepath.Dir(destDir), 0o755); err != nil {
		return Marker{}, fmt.Errorf("install: %w", err)
	}
	suffix, err := r.suffix()
	if err != nil {
		return Marker{}, err
	}
	staging := destDir + ".staging-" + suffix
	home := destDir + ".home-" + suffix
	// After a successful swap staging no longer exists, so removing it
	// unconditionally only ever cleans up a failure.
	defer os.RemoveAll(staging)
	defer os.RemoveAll(home)
	if err := os.Mkdir(staging, 0o755); err != nil {
		return Marker{}, fmt.Errorf("install: %w", err)
	}
	if err := os.Mkdir(home, 0o700); err != nil {
		return Marker{}, fmt.Errorf("install: %w", err)
	}
	if err := copySource(srcDir, staging); err != nil {
		return Marker{}, err
	}
	// The marker records the hash of what was copied, not of what was
	// hashed a moment earlier, so a source edited mid-copy reinstalls
	// next time.
	hash, err := Hash(staging)
	if err != nil {
		return Marker{}, err
	}

	env := r.env(home)
	tools := map[string]string{}
	if exists(filepath.Join(staging, "package.json")) {
		npm := orDefault(r.NPM, "npm")
		argv := []string{npm, "ci", "--omit=dev", "--no-audit", "--no-fund"}
		if !opts.AllowScripts {
			argv = append(argv, "--ignore-scripts")
		}
		if err := r.step(ctx, staging, env, sink, argv); err != nil {
			return Marker{}, err
		}
		tools["npm"] = r.version(ctx, staging, env, npm, "--version")
	}
	if exists(filepath.Join(staging, "requirements.txt")) {
		python := orDefault(r.Python, "python3")
		argv := []string{python, "-m", "pip", "install", "--target", PyDepsDir, "-r", "requirements.txt"}
		argv = append(argv, opts.PipArgs...)
		if err := r.step(ctx, staging, env, sink, argv); err != nil {
			return Marker{}, err
		}
		tools["python"] = r.version(ctx, staging, env, python, "--version")
	}

	if opts.Check != nil {
		sink.Note("$ verify")
		if err := opts.Check(ctx, staging, sink); err != nil {
			return Marker{}, err
		}
	}

	m := Marker{Hash: hash, InstalledAt: r.now().UTC(), Tools: tools}
	if err := writeMarker(staging, m); err != nil {
		return Marker{}, err
	}
	if err := ctx.Err(); err != nil {
		return Marker{}, fmt.Errorf("install: %w", err)
	}
	if err := r.swap(staging, destDir, suffix); err != nil {
		return Marker{}, err
	}
	return m, nil
}

// step runs one install command in the staging directory.
func (r *Reconciler) step(ctx context.Context, dir string, env []string, sink *outputSink, argv []string) error {
	sink.Note("$ " + strings.Join(argv, " "))
	err := runCommand(ctx, dir, env, sink, argv)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("install: %s: %w", filepath.Base(argv[0]), ctx.Err())
	case errors.Is(err, exec.ErrNotFound):
		return &patchbay.Error{Code: patchbay.EINTERNAL,
			Message: filepath.Base(argv[0]) + " is not installed on this host", Err: err}
	default:
		return &patchbay.Error{Code: patchbay.EINVALID,
			Message: commandFailure("connector dependency install failed", argv, err, sink.String())}
	}
}

// version returns what tool reports for arg, for the marker; "unknown"
// when it will not say.
func (r *Reconciler) version(ctx context.Context, dir string, env []string, tool, arg string) string {
	sink := newOutputSink(nil)
	if err := runCommand(ctx, dir, env, sink, []string{tool, arg}); err != nil {
		return "unknown"
	}
	return strings.TrimSpace(tail(sink.String(), 1))
}

// swap replaces destDir with staging: the old install is renamed aside,
// the new one renamed in, and only then is the old one removed. If the
// second rename fails, the old install is put back.
func (r *Reconciler) swap(staging, destDir, suffix string) error {
	old := destDir + ".old-" + suffix
	hadOld := true
	if err := os.Rename(destDir, old); errors.Is(err, fs.ErrNotExist) {
		hadOld = false
	} else if err != nil {
		return fmt.Errorf("install: swap: %w", err)
	}
	if err := os.Rename(staging, destDir); err != nil {
		if hadOld {
			if err := os.Rename(old, destDir); err != nil {
				r.log("install: could not restore previous install", "dest", destDir, "old", old, "err", err)
			}
		}
		return fmt.Errorf("install: swap: %w", err)
	}
	if hadOld {
		if err := os.RemoveAll(old); err != nil {
			r.log("install: could not remove previous install", "old", old, "err", err)
		}
	}
	return nil
}

// env is the whole environment of an install command: enough to find
// the tools and write caches, and none of the parent's secrets.
func (r *Reconciler) env(home string) []string {
	lang := os.Getenv("LANG")
	if lang == "" {
		lang = "C.UTF-8"
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"LANG=" + lang,
		"TMPDIR=" + home,
		"NO_UPDATE_NOTIFIER=1",
		"PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PIP_NO_INPUT=1",
	}
	return append(env, r.Env...)
}

func (r *Reconciler) suffix() (string, error) {
	src := r.Rand
	if src == nil {
		src = rand.Reader
	}
	b := make([]byte, 8)
	if _, err := io.ReadFull(src, b); err != nil {
		return "", fmt.Errorf("install: random suffix: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) log(msg string, args ...any) {
	if r.Log != nil {
		r.Log(msg, args...)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
