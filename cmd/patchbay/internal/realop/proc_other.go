//go:build !linux

package realop

import (
	"os"
	"os/exec"
)

// setProcAttr does nothing here: process groups and Pdeathsig are set up on
// Linux only, where CI runs. node still exits when its stdin closes.
func setProcAttr(*exec.Cmd) {}

// signalGroup signals the provider process alone.
func signalGroup(cmd *exec.Cmd, kill bool) {
	if kill {
		_ = cmd.Process.Kill()
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
}

func lockThread()   {}
func unlockThread() {}
