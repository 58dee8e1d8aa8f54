//go:build linux

package realop

import (
	"os/exec"
	"runtime"
	"syscall"
)

// setProcAttr puts the provider in its own process group, so that stop can
// signal everything it started at once, and has the kernel SIGKILL it if the
// test binary dies without running its cleanups.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
}

// signalGroup sends SIGTERM, or SIGKILL when kill is set, to the provider's
// process group. Errors are ignored: the group may already be gone.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	// With Setpgid the group id is the leader's pid; negative means group.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

func lockThread()   { runtime.LockOSThread() }
func unlockThread() { runtime.UnlockOSThread() }
