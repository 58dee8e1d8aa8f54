package db

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
)

// randSource is where session ids, CSRF tokens and API tokens come from;
// tests may replace it.
var randSource io.Reader = rand.Reader

func randomToken(nbytes int) (string, error) {
	b := make([]byte, nbytes)
	if _, err := io.ReadFull(randSource, b); err != nil {
		return "", fmt.Errorf("db: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// hashToken is how bearer secrets are stored: a copy of the database must
// not let anyone sign in. The secrets have 256 bits of entropy, so a plain
// SHA-256 is enough; no slow hash is needed.
func hashToken(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}
