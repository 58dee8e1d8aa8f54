package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Runner starts a local connector's process somewhere: on this host
// (LocalRunner) or, later, inside a user's container.
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
// own process group that dies with Patchbay (Pdeathsig).
type LocalRunner struct {
	// StderrLimit bounds the kept stderr; StderrLimit (64 KiB) if zero.
	StderrLimit int
}

// Start implements Runner.
func (r LocalRunner) Start(ctx context.Context, spec Spec) (Process, error) {
	env := spec.stdioEnv()
	path, err := resolveCommand(spec.Command, spec.Dir, env)
	if err != nil {
		return nil, err
	}
	limit := r.StderrLimit
	if limit <= 0 {
		limit = StderrLimit
	}

	// Plain os.Pipes rather than cmd.StdoutPipe: the MCP reader may still be
	// reading when the process is reaped, which StdoutPipe forbids.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}

	cmd := exec.Command(path, spec.Args...)
	cmd.Args[0] = spec.Command
	cmd.Env = env
	cmd.Dir = spec.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Command, err)
	}

	p := &localProcess{
		cmd:    cmd,
		stdin:  inW,
		stdout: outR,
		ring:   newStderrRing(limit, spec.secretValues()),
		done:   make(chan struct{}),
		pid:    cmd.Process.Pid,
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(p.ring, errR)
		errR.Close()
		p.ring.Close()
	}()
	go func() {
		werr := cmd.Wait()
		// Give the drain a moment so the exit error carries the last words,
		// without letting a grandchild that holds stderr open stall us.
		select {
		case <-drained:
		case <-time.After(200 * time.Millisecond):
		}
		p.mu.Lock()
		if werr != nil {
			p.exitErr = exitError(spec.Command, werr, p.ring.Tail(512))
		}
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func exitError(command string, werr error, tail string) error {
	msg := werr.Error()
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			msg = "killed by signal " + ws.Signal().String()
		} else {
			msg = fmt.Sprintf("exit code %d", ee.ExitCode())
		}
	}
	if tail != "" {
		return fmt.Errorf("%s exited: %s; stderr: %s", command, msg, tail)
	}
	return fmt.Errorf("%s exited: %s", command, msg)
}

type localProcess struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	ring   *stderrRing
	done   chan struct{}
	pid    int

	mu      sync.Mutex
	exitErr error
	stopped bool
}

func (p *localProcess) Stdin() io.WriteCloser { return p.stdin }
func (p *localProcess) Stdout() io.Reader     { return p.stdout }
func (p *localProcess) Pid() int              { return p.pid }
func (p *localProcess) Done() <-chan struct{} { return p.done }
func (p *localProcess) Stderr() string        { return p.ring.String() }

func (p *localProcess) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Stop implements Process.
func (p *localProcess) Stop(grace time.Duration) error {
	_ = p.stdin.Close()
	if !p.waitDone(grace) {
		_ = syscall.Kill(-p.pid, syscall.SIGTERM)
		if !p.waitDone(grace) {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			<-p.done
		}
	}
	// The leader is gone; anything it left in its group goes with it.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	_ = p.stdout.Close()
	return nil
}

func (p *localProcess) waitDone(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}
