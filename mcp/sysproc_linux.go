package mcp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// Each connector runs as pid 1 of its own PID namespace when the kernel
// allows it: when a namespace's init dies the kernel SIGKILLs everything in
// it, so Pdeathsig on the connector also takes its grandchildren (npx →
// node, sh → server &), which a process group alone cannot do on a kill -9
// of Patchbay. Where the clone is refused (no CAP_SYS_ADMIN and no user
// namespaces, seccomp), connectors fall back to a plain process group.
//
// One gap remains: Go's child checks for a parent that died before
// Pdeathsig was set by comparing getppid with the parent's pid, but inside a
// new PID namespace getppid is 0 and the SIGKILL it then sends itself is
// ignored (a namespace init cannot be killed from inside). So a kill -9
// landing in the microseconds between clone and prctl can still orphan
// that one connector.

var pidns struct {
	once  sync.Once
	attr  *syscall.SysProcAttr // namespace flags that worked, or nil
	cause error                // why namespaces are not used
}

// pidNamespaceAttr returns the clone flags and id maps that put a child in
// its own PID namespace, or nil and the reason they cannot be used here.
// It probes once per process.
func pidNamespaceAttr() (*syscall.SysProcAttr, error) {
	pidns.once.Do(func() {
		var errs []error
		for _, a := range pidNamespaceCandidates() {
			err := probeClone(a)
			if err == nil {
				pidns.attr, pidns.cause = a, nil
				return
			}
			errs = append(errs, err)
		}
		pidns.cause = errors.Join(errs...)
	})
	return pidns.attr, pidns.cause
}

// pidNamespaceCandidates lists the ways to get a PID namespace, cheapest
// first. A new user namespace lets a process without CAP_SYS_ADMIN create
// one; it maps only the current ids so the connector keeps its identity
// and gains no privilege on the host.
func pidNamespaceCandidates() []*syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	withUser := &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWPID | syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
	if uid == 0 {
		return []*syscall.SysProcAttr{{Cloneflags: syscall.CLONE_NEWPID}, withUser}
	}
	return []*syscall.SysProcAttr{withUser}
}

// probeClone reports whether a child can be cloned with a's namespace
// flags. It execs a path that cannot exist: clone (and the id maps) fail in
// the parent with EPERM, EINVAL, ENOSPC or EUSERS, while an exec failure
// (ENOENT) is reported by a child that was created — so nothing runs and no
// binary on the host is needed.
func probeClone(a *syscall.SysProcAttr) error {
	cmd := exec.Command("/proc/self/patchbay-pidns-probe")
	cmd.SysProcAttr = withProcessGroup(a)
	err := cmd.Start()
	if err == nil {
		_ = cmd.Wait()
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("clone flags %#x: %w", a.Cloneflags, err)
}

// withProcessGroup copies a (namespace settings, or nil) and adds what
// every connector gets: its own process group, so Stop can signal all it
// spawned, and SIGKILL when Patchbay dies.
func withProcessGroup(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	out := &syscall.SysProcAttr{}
	if a != nil {
		*out = *a
	}
	out.Setpgid = true
	out.Pdeathsig = syscall.SIGKILL
	return out
}

// sysProcAttr returns the attributes for a connector process and whether
// it gets its own PID namespace; cause says why not, once per process.
func sysProcAttr() (attr *syscall.SysProcAttr, pidNS bool, cause error) {
	a, err := pidNamespaceAttr()
	return withProcessGroup(a), a != nil, err
}
