package seal

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestFingerprint(t *testing.T) {
	a, b := NewKeyring(testKey(t, 1)), NewKeyring(testKey(t, 2))
	// Each secret holds non-hex characters, so a 12-hex fingerprint can
	// only contain it by leaking it.
	secrets := []struct {
		name, secret string
	}{
		{"empty secret", ""},
		{"short password", "hunter2"},
		{"GitHub-style token", "ghp_0123456789abcdefghijklmnopqrstuvwxyz"},
		{"API key", "sk-live-not-a-real-key"},
	}
	for _, tt := range secrets {
		t.Run(tt.name, func(t *testing.T) {
			fp := a.Fingerprint(tt.secret)
			t.Run("is 12 hex characters", func(t *testing.T) {
				if len(fp) != 12 {
					t.Fatalf("len(Fingerprint) = %d; want 12", len(fp))
				}
				if _, err := hex.DecodeString(fp); err != nil {
					t.Fatalf("Fingerprint = %q; want hex", fp)
				}
			})
			t.Run("does not contain the secret", func(t *testing.T) {
				if tt.secret != "" && strings.Contains(fp, tt.secret) {
					t.Fatalf("Fingerprint = %q; contains the secret", fp)
				}
			})
			t.Run("is deterministic for the same key", func(t *testing.T) {
				if got := NewKeyring(testKey(t, 1)).Fingerprint(tt.secret); got != fp {
					t.Fatalf("Fingerprint = %q; want %q", got, fp)
				}
			})
			t.Run("differs across keys", func(t *testing.T) {
				if got := b.Fingerprint(tt.secret); got == fp {
					t.Fatalf("Fingerprint under another key = %q; want not %q", got, fp)
				}
			})
		})
	}
	t.Run("differs across secrets", func(t *testing.T) {
		seen := map[string]string{}
		for _, tt := range secrets {
			fp := a.Fingerprint(tt.secret)
			if prev, ok := seen[fp]; ok {
				t.Fatalf("Fingerprint(%q) = Fingerprint(%q) = %q; want different", tt.secret, prev, fp)
			}
			seen[fp] = tt.secret
		}
	})
	t.Run("uses the primary key only", func(t *testing.T) {
		withOlder := NewKeyring(testKey(t, 1), testKey(t, 2))
		if got, want := withOlder.Fingerprint("hunter2"), a.Fingerprint("hunter2"); got != want {
			t.Fatalf("Fingerprint = %q; want %q", got, want)
		}
	})
}
