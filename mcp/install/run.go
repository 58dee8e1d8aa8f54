package install

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// waitDelay bounds how long a killed command's output pipes may stay
// open, in case something escaped the process group.
const waitDelay = 5 * time.Second

// runCommand runs argv in dir with exactly env, streaming its combined
// output to sink. The command runs in its own process group, and
// cancelling ctx kills the whole group, so an install's children die
// with it.
func runCommand(ctx context.Context, dir string, env []string, sink *outputSink, argv []string) error {
	if len(argv) == 0 {
		return errors.New("install: empty command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	// The same writer for both makes exec share one pipe, so lines from
	// stdout and stderr interleave in the order they were written.
	cmd.Stdout = sink
	cmd.Stderr = sink
	cmd.WaitDelay = waitDelay
	setProcessGroup(cmd)
	err := cmd.Run()
	sink.Flush()
	return err
}

// commandFailure describes a failed command: why it stopped and the
// tail of its output.
func commandFailure(what string, argv []string, err error, log string) string {
	var why string
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		why = fmt.Sprintf("exited with code %d", exit.ExitCode())
	case errors.As(err, &exit):
		why = "was killed (" + exit.String() + ")"
	default:
		why = err.Error()
	}
	return withTail(fmt.Sprintf("%s: %s %s", what, strings.Join(argv, " "), why), log)
}
