//go:build !linux

package mcp

import (
	"errors"
	"syscall"
)

// sysProcAttr puts the child in its own process group. Without Linux's
// Pdeathsig and PID namespaces, a kill -9 of Patchbay can orphan connectors
// on this platform.
func sysProcAttr() (attr *syscall.SysProcAttr, pidNS bool, cause error) {
	return &syscall.SysProcAttr{Setpgid: true}, false, errors.New("PID namespaces need Linux")
}
