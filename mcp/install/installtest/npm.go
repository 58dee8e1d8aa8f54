package installtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// NPMCI runs `npm ci` in dir unless marker (a file the install creates)
// exists, so `go test ./...` works on a fresh clone. Test binaries run in
// parallel, so installs are serialised with a lock file in dir and the
// check is repeated once the lock is held.
func NPMCI(dir, marker string) error {
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("install lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("install lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return nil
}
