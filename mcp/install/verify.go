package install

import (
	"context"
	"errors"
	"fmt"
	"time"

	"patchbay"
)

// Verify runs a connector's verify command in dir, with exactly env as
// its environment (nothing is inherited; build env with PythonPath so
// the verify sees the same dependencies as the server) and no shell. The
// command is killed, with its process group, after timeout. It returns
// the combined output, bounded like Result.Log. A command that fails or
// times out is an EINVALID *patchbay.Error whose message carries the
// exit code and the output's tail; a cancelled ctx is returned wrapped.
func Verify(ctx context.Context, dir string, env map[string]string, command []string, timeout time.Duration) (string, error) {
	if len(command) == 0 {
		return "", patchbay.Errorf(patchbay.EINVALID, "connector verify command is empty")
	}
	runCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	sink := newOutputSink(nil)
	err := runCommand(runCtx, dir, envList(env), sink, command)
	out := sink.String()
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil:
		return out, fmt.Errorf("install: verify: %w", ctx.Err())
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return out, &patchbay.Error{Code: patchbay.EINVALID, Message: withTail(
			fmt.Sprintf("connector verify timed out after %s", timeout), out)}
	default:
		return out, &patchbay.Error{Code: patchbay.EINVALID,
			Message: commandFailure("connector verify failed", command, err, out)}
	}
}

// withTail appends the last lines of log to msg.
func withTail(msg, log string) string {
	if t := tail(log, tailLines); t != "" {
		msg += "; last output:\n" + t
	}
	return msg
}
