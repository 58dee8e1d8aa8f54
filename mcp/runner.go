package mcp

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"time"
)

// Runner starts a local connector's process somewhere: on this host
// (LocalRunner), in a sandbox on this host (BwrapRunner) or, later, inside
// a user's container.
type Runner interface {
	// Start launches spec's command with exactly spec's environment and
	// returns once the process runs. It returns an error if the command
	// cannot be found or started; it never runs a shell.
	Start(ctx context.Context, spec Spec) (Process, error)
}

// Process is a running connector: its MCP stdio streams, identity and
// lifetime.
type Process interface {
	// Stdin is written with MCP messages; closing it asks the server to exit.
	Stdin() io.WriteCloser
	// Stdout carries the server's MCP messages.
	Stdout() io.Reader
	// Pid is the process id (also its process group id); 0 if unknown.
	Pid() int
	// Done is closed once the process has exited.
	Done() <-chan struct{}
	// ExitErr describes how the process ended (nil while it runs or after
	// a clean exit), including the tail of its stderr.
	ExitErr() error
	// Stderr returns the kept, redacted tail of the process's stderr.
	Stderr() string
	// Stop closes stdin, waits up to grace, then SIGTERMs and finally
	// SIGKILLs the whole process group. It is safe to call more than once
	// and returns only when the process has exited.
	Stop(grace time.Duration) error
}

// LocalRunner runs connectors as child processes of Patchbay, each in its
// own process group that dies with Patchbay (Pdeathsig) and, where the
// kernel allows, as pid 1 of its own PID namespace so that its
// descendants die with it too.
type LocalRunner struct {
	// StderrLimit bounds the kept stderr; StderrLimit (64 KiB) if zero.
	StderrLimit int
	// Logger is told, once per process, if PID namespaces are unavailable;
	// slog.Default() if nil.
	Logger *slog.Logger
}

// Start implements Runner.
func (r LocalRunner) Start(ctx context.Context, spec Spec) (Process, error) {
	env := spec.stdioEnv()
	path, err := resolveCommand(spec.Command, spec.Dir, env)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, spec.Args...)
	cmd.Args[0] = spec.Command
	cmd.Env = env
	cmd.Dir = spec.Dir
	return startProcess(cmd, spec, r.StderrLimit, r.Logger)
}
