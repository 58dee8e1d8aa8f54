//go:build !unix

package install

import "os/exec"

// setProcessGroup is a no-op where there are no process groups; context
// cancellation then kills only the direct child.
func setProcessGroup(cmd *exec.Cmd) {}
