package mcp

import (
	"strings"
	"sync"
)

// StderrLimit is how many bytes of a connector's most recent stderr are kept.
const StderrLimit = 64 << 10

// redactedMark replaces a secret value in kept stderr.
const redactedMark = "[REDACTED]"

// stderrRing keeps the last limit bytes written to it, with known secret
// values replaced before anything is kept. Because a secret may arrive
// split across two writes, an end of the output that could be the start
// of a secret is held back until more output (or the end of the stream)
// settles it.
type stderrRing struct {
	mu      sync.Mutex
	limit   int
	secrets []string
	hold    int
	pending []byte
	buf     []byte
	closed  bool
}

func newStderrRing(limit int, secrets []string) *stderrRing {
	r := &stderrRing{limit: limit}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		r.secrets = append(r.secrets, s)
		if len(s)-1 > r.hold {
			r.hold = len(s) - 1
		}
	}
	return r
}

// Write implements io.Writer; it never fails so the drain never stops.
func (r *stderrRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, p...)
	r.flush(false)
	return len(p), nil
}

// Close flushes what was held back; the stream has ended.
func (r *stderrRing) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.flush(true)
	return nil
}

func (r *stderrRing) flush(all bool) {
	s := string(r.pending)
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, redactedMark)
	}
	cut := len(s)
	if !all {
		// Hold back only an end of s that could be the start of a secret;
		// any secret starting before cut ends inside s and was replaced.
		cut -= r.partialSecretSuffix(s)
	}
	r.buf = append(r.buf, s[:cut]...)
	r.pending = append(r.pending[:0], s[cut:]...)
	if over := len(r.buf) - r.limit; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
}

// partialSecretSuffix returns the length of the longest end of s that is
// a proper prefix of a secret.
func (r *stderrRing) partialSecretSuffix(s string) int {
	for k := min(len(s), r.hold); k > 0; k-- {
		tail := s[len(s)-k:]
		for _, sec := range r.secrets {
			if strings.HasPrefix(sec, tail) {
				return k
			}
		}
	}
	return 0
}

// String returns the kept, redacted output.
func (r *stderrRing) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf)
}

// Tail returns at most n bytes of the end of the kept output.
func (r *stderrRing) Tail(n int) string {
	s := r.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
