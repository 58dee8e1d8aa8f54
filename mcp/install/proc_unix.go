//go:build unix

package install

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes cmd lead a new process group and makes context
// cancellation kill that whole group.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
