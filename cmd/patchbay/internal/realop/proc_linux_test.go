package realop

import (
	"errors"
	"syscall"
	"testing"
)

// TestCleanupLeavesNoProcess checks that the cleanup Start registers ends the
// provider's whole process group.
func TestCleanupLeavesNoProcess(t *testing.T) {
	Require(t)
	var pid int
	t.Run("start", func(t *testing.T) {
		op := Start(t, "http://127.0.0.1:1/callback")
		pid = op.proc.cmd.Process.Pid
	})
	if pid == 0 {
		t.Fatal("the provider did not start")
	}
	// The subtest's cleanups have run by now. Signal 0 only checks for
	// existence; the group id is the provider's pid (Setpgid).
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still exists after cleanup (kill -0: %v)", pid, err)
	}
}
