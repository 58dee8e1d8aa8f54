package patchbay

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
)

// sensitiveKeys are attribute names whose values are never logged.
var sensitiveKeys = []string{"token", "secret", "password", "authorization", "cookie", "credential", "api_key", "apikey", "code_verifier", "refresh", "bearer", "sealed"}

// Redacted is what a removed secret is replaced with.
const Redacted = "[REDACTED]"

// secretPatterns find secrets inside otherwise harmless strings, such as
// an error message that quotes a header. Each keeps its label ($1) and
// drops the secret.
var secretPatterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`pbt_[A-Za-z0-9_-]{8,}`), Redacted},                                   // our API tokens
	{regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`), Redacted}, // JWTs
	{regexp.MustCompile(`v1\.[0-9a-f]{16}\.[A-Za-z0-9_-]{16,}`), Redacted},                    // sealed values
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`), "$1 " + Redacted},
	{regexp.MustCompile(`(?i)\b((?:access|refresh|id)_token|client_secret|code_verifier|code|state)=[^&\s"]+`), "$1=" + Redacted},
}

// RedactString removes anything that looks like a secret from s.
func RedactString(s string) string {
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return s
}

// RedactingHandler wraps a slog.Handler so that sensitive attributes and
// secret-shaped substrings never reach the log.
type RedactingHandler struct{ next slog.Handler }

// NewRedactingHandler returns a handler that redacts before passing on.
func NewRedactingHandler(next slog.Handler) *RedactingHandler { return &RedactingHandler{next: next} }

// Enabled implements slog.Handler.
func (h *RedactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (h *RedactingHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, RedactString(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h *RedactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redactAttr(a)
	}
	return &RedactingHandler{next: h.next.WithAttrs(red)}
}

// WithGroup implements slog.Handler.
func (h *RedactingHandler) WithGroup(name string) slog.Handler {
	return &RedactingHandler{next: h.next.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	k := strings.ToLower(a.Key)
	for _, s := range sensitiveKeys {
		if strings.Contains(k, s) {
			return slog.String(a.Key, Redacted)
		}
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = redactAttr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindString:
		return slog.String(a.Key, RedactString(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, RedactString(err.Error()))
		}
		return slog.String(a.Key, RedactString(v.String()))
	}
	return a
}
