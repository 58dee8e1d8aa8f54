package mcp

import "syscall"

// sysProcAttr puts the child in its own process group, so Stop can signal
// everything it spawned, and has the kernel SIGKILL it if Patchbay dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
