package mcp

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// fallbackLogged makes the "no PID namespace" warning appear once per
// process rather than once per connector start.
var fallbackLogged sync.Once

// startProcess starts cmd (its Path, Args, Env and Dir already set) as a
// connector of spec: in its own process group, in its own PID namespace if
// the kernel allows, with stderr drained into a redacting ring.
func startProcess(cmd *exec.Cmd, spec Spec, limit int, logger *slog.Logger) (*localProcess, error) {
	if limit <= 0 {
		limit = StderrLimit
	}
	attr, pidNS, cause := sysProcAttr()
	if cause != nil {
		fallbackLogged.Do(func() {
			if logger == nil {
				logger = slog.Default()
			}
			logger.Warn("mcp: connectors run without their own PID namespace; a kill -9 of Patchbay can orphan their grandchildren", "err", cause)
		})
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

	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = attr
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
		pidNS:  pidNS,
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
	pid    int // as seen from Patchbay, even inside a PID namespace
	// pidNS: the process is init of its own PID namespace, so the kernel
	// has killed all its descendants by the time it is reaped.
	pidNS bool

	mu      sync.Mutex
	exitErr error
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

// Stop implements Process. A namespace init ignores a SIGTERM it has no
// handler for, so SIGTERM may change nothing; the SIGKILL after the second
// grace always works from Patchbay's namespace, which bounds Stop.
func (p *localProcess) Stop(grace time.Duration) error {
	_ = p.stdin.Close()
	if !p.waitDone(grace) {
		_ = syscall.Kill(-p.pid, syscall.SIGTERM)
		if !p.waitDone(grace) {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			<-p.done
		}
	}
	if !p.pidNS {
		// The leader is gone; anything it left in its group goes with it.
		// (In a PID namespace the kernel already did this, and the group id
		// may be free for reuse.)
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
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
