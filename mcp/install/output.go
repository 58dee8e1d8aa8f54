package install

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// logLimit bounds the install output kept in Result.Log.
const logLimit = 256 << 10

// tailLines is how many lines of output an error message carries.
const tailLines = 30

// outputSink receives a command's combined stdout and stderr. It passes
// complete lines to out as they arrive and keeps the last logLimit
// bytes. Write errors from out are ignored: a reader that went away must
// not fail the install.
type outputSink struct {
	mu      sync.Mutex
	out     io.Writer
	partial []byte
	kept    []byte
}

func newOutputSink(out io.Writer) *outputSink {
	if out == nil {
		out = io.Discard
	}
	return &outputSink{out: out}
}

func (s *outputSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keep(p)
	s.partial = append(s.partial, p...)
	if i := bytes.LastIndexByte(s.partial, '\n'); i >= 0 {
		s.out.Write(s.partial[:i+1])
		s.partial = append(s.partial[:0], s.partial[i+1:]...)
	}
	return len(p), nil
}

// Note writes a line of our own (such as the command being run) to both
// out and the log.
func (s *outputSink) Note(line string) {
	s.Write([]byte(line + "\n"))
}

// Flush passes on a final line that had no newline.
func (s *outputSink) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.partial) > 0 {
		s.out.Write(append(s.partial, '\n'))
		s.partial = s.partial[:0]
	}
}

// keep appends p to the kept log, trimming only once it is twice the
// limit so that trimming stays amortised.
func (s *outputSink) keep(p []byte) {
	s.kept = append(s.kept, p...)
	if len(s.kept) > 2*logLimit {
		s.kept = append(s.kept[:0], s.kept[len(s.kept)-logLimit:]...)
	}
}

// String returns the last logLimit bytes of output.
func (s *outputSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.kept) > logLimit {
		return string(s.kept[len(s.kept)-logLimit:])
	}
	return string(s.kept)
}

// tail returns the last n lines of log.
func tail(log string, n int) string {
	log = strings.TrimRight(log, "\n")
	lines := strings.Split(log, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
