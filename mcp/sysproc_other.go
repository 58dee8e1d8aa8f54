//go:build !linux

package mcp

import "syscall"

// sysProcAttr puts the child in its own process group. Without Linux's
// Pdeathsig, a kill -9 of Patchbay can orphan connectors on this platform.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
