package patchbay

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestRedactString(t *testing.T) {
	tests := []struct {
		name, in, secret string
	}{
		{"api token", "used token pbt_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "pbt_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
		{"jwt", "id_token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlc2lnbmF0dXJl", "eyJzdWIiOiJhbGljZSJ9"},
		{"bearer header", "Authorization: Bearer s3cr3tvalue-xyz", "s3cr3tvalue-xyz"},
		{"basic header", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="},
		{"sealed value", "cell v1.0123456789abcdef.QUJDREVGR0hJSktMTU5PUFFSU1RVVldY", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"},
		{"query code", "GET /auth/callback?code=abc123&state=xyz789", "abc123"},
		{"query state", "GET /auth/callback?code=abc123&state=xyz789", "xyz789"},
		{"form secret", "client_secret=hunter2&grant_type=authorization_code", "hunter2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RedactString(tt.in)
			if strings.Contains(got, tt.secret) {
				t.Errorf("RedactString(%q) = %q; still contains %q", tt.in, got, tt.secret)
			}
			if !strings.Contains(got, Redacted) {
				t.Errorf("RedactString(%q) = %q; want a %s marker", tt.in, got, Redacted)
			}
		})
	}
	t.Run("harmless text is unchanged", func(t *testing.T) {
		in := "user 42 signed in from 127.0.0.1 at /connectors"
		if got := RedactString(in); got != in {
			t.Errorf("RedactString(%q) = %q; want it unchanged", in, got)
		}
	})
}

func TestRedactingHandler(t *testing.T) {
	const canary = "pbt_CANARYcanaryCANARYcanary0123"
	var buf bytes.Buffer
	log := slog.New(NewRedactingHandler(slog.NewJSONHandler(&buf, nil)))
	log.Info("minted "+canary,
		"token", "plain-value-under-a-sensitive-key",
		"client_secret", "another",
		"err", errors.New("exchange failed: Bearer "+canary),
		slog.Group("req", "authorization", "Basic Zm9vOmJhcg==", "path", "/tokens"),
	)
	log.With("refresh_token", "rt-canary").Warn("with attrs")
	out := buf.String()
	for _, secret := range []string{canary, "plain-value-under-a-sensitive-key", "another", "Zm9vOmJhcg==", "rt-canary"} {
		if strings.Contains(out, secret) {
			t.Errorf("log output contains %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, `"path":"/tokens"`) {
		t.Errorf("log output lost a harmless attribute:\n%s", out)
	}
}
