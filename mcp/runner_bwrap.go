package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// BwrapRunner runs each connector like LocalRunner (own process group and
// PID namespace, same stop sequence and stderr ring) but inside a
// bubblewrap sandbox: the connector sees its own directory read-write, the
// system directories and the few /etc files programs need read-only, a
// fresh /tmp, /proc and /dev, and nothing else of the host's files. It
// keeps the network, since connectors call remote APIs. The environment
// is cleared and set to exactly the spec's (BuildStdioEnv).
type BwrapRunner struct {
	// Bwrap is the bwrap binary; "bwrap" on Patchbay's PATH if empty.
	Bwrap string
	// StderrLimit bounds the kept stderr; StderrLimit (64 KiB) if zero.
	StderrLimit int
	// Logger is told, once per process, if PID namespaces are unavailable;
	// slog.Default() if nil.
	Logger *slog.Logger
}

// bwrapSystemDirs are bound read-only where they exist; on merged-/usr
// systems the top-level ones are symlinks and are recreated as such.
var bwrapSystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// bwrapEtc is what node, python and Go binaries read from /etc: name
// resolution, TLS roots, users, time zone, the loader cache and Debian's
// alternatives symlinks. Not all of /etc, which holds /etc/shadow.
var bwrapEtc = []string{
	"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf",
	"/etc/services", "/etc/protocols", "/etc/ssl", "/etc/ca-certificates", "/etc/pki",
	"/etc/crypto-policies", "/etc/passwd", "/etc/group", "/etc/localtime", "/etc/timezone",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/mime.types", "/etc/os-release",
}

// Start implements Runner.
func (r BwrapRunner) Start(ctx context.Context, spec Spec) (Process, error) {
	bw := r.Bwrap
	if bw == "" {
		bw = "bwrap"
	}
	bwPath, err := exec.LookPath(bw)
	if err != nil {
		return nil, fmt.Errorf("bwrap runner: %w", err)
	}
	if spec.Dir == "" {
		return nil, errors.New("bwrap runner: the connector has no directory")
	}
	dir, err := filepath.Abs(spec.Dir)
	if err != nil {
		return nil, err
	}
	spec.Dir = dir
	env := spec.stdioEnv()
	path, err := resolveCommand(spec.Command, dir, env)
	if err != nil {
		return nil, err
	}

	// The arguments, which carry the secrets (--setenv), go through a pipe
	// (--args): a command line is readable by every user on the host.
	argR, argW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// bwrap takes only options from --args; the command follows on the
	// command line (as it would for LocalRunner).
	argv := append([]string{"--args", "3", "--"}, unsetPWD(env)...)
	cmd := exec.Command(bwPath, append(append(argv, path), spec.Args...)...)
	cmd.Env = []string{} // bwrap itself needs nothing; the connector gets --setenv
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{argR}
	p, err := startProcess(cmd, spec, r.StderrLimit, r.Logger)
	argR.Close()
	if err != nil {
		argW.Close()
		return nil, err
	}
	go func() {
		// bwrap reads its arguments at once; if it died first the write
		// fails and the process's exit says why.
		_, _ = argW.Write(nulJoin(bwrapOptions(dir, path, env)))
		argW.Close()
	}()
	return p, nil
}

// bwrapOptions builds the sandbox for command (resolved on the host) in dir.
func bwrapOptions(dir, command string, env []string) []string {
	a := []string{
		"--die-with-parent", "--new-session",
		"--unshare-all", "--share-net",
		// Root in the sandbox's user namespace would otherwise keep every
		// capability there (a no-op when Patchbay is not root).
		"--cap-drop", "ALL",
	}
	for _, d := range bwrapSystemDirs {
		if target, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", target, d)
		} else {
			a = append(a, "--ro-bind-try", d, d)
		}
	}
	for _, f := range bwrapEtc {
		a = append(a, "--ro-bind-try", f, f)
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	// After the system binds, so a dir below /usr or /tmp is still its own.
	a = append(a, "--bind", dir, dir)
	// The executable may live outside everything bound (a binary built
	// elsewhere); bind just that file, read-only.
	if !underAny(command, append([]string{dir}, bwrapSystemDirs...)) {
		a = append(a, "--ro-bind", command, command)
	}
	a = append(a, "--chdir", dir, "--clearenv")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	return a
}

// unsetPWD returns the prefix that removes the PWD bwrap always sets (to
// the directory, after --setenv), so the connector's environment is exactly
// the spec's: `env -u PWD`, if env is installed. A spec that declares PWD
// gets bwrap's.
func unsetPWD(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "PWD=") {
			return nil
		}
	}
	path, err := resolveCommand("env", "/", nil)
	if err != nil {
		return nil
	}
	return []string{path, "-u", "PWD"}
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if rel, err := filepath.Rel(d, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

func nulJoin(args []string) []byte {
	var b []byte
	for _, s := range args {
		b = append(b, s...)
		b = append(b, 0)
	}
	return b
}

var bwrapProbe struct {
	once sync.Once
	err  error
}

// BwrapAvailable reports whether bwrap is installed and can build a
// sandbox here (user namespaces allowed), by running
// `bwrap --ro-bind / / true` once per process.
func BwrapAvailable() bool { return bwrapUsable() == nil }

// bwrapUsable is BwrapAvailable with the reason.
func bwrapUsable() error {
	bwrapProbe.once.Do(func() {
		path, err := exec.LookPath("bwrap")
		if err != nil {
			bwrapProbe.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, "--ro-bind", "/", "/", "true")
		cmd.Env = []string{"PATH=" + BasePath}
		if out, err := cmd.CombinedOutput(); err != nil {
			bwrapProbe.err = fmt.Errorf("%s: %w: %s", path, err, strings.TrimSpace(string(out)))
		}
	})
	return bwrapProbe.err
}
