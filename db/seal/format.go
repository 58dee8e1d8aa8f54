package seal

import (
	"encoding/base64"
	"strings"
)

const (
	// formatVersion is the first field of every sealed value; a new
	// layout gets a new version so old values stay readable.
	formatVersion = "v1"
	// nonceSize is the standard GCM nonce length; nonces are random.
	nonceSize = 12
	// tagSize is the GCM authentication tag length.
	tagSize = 16
)

// payloadEncoding is base64url without padding: it needs no escaping in
// SQL, URLs or grep patterns. Strict rejects non-zero padding bits, so a
// payload has exactly one spelling.
var payloadEncoding = base64.RawURLEncoding.Strict()

// sealedValue is a parsed, not yet authenticated, sealed string.
type sealedValue struct {
	keyID   string
	nonce   []byte
	payload []byte // ciphertext followed by the GCM tag
}

// formatSealed renders v1.<keyid>.<base64url(nonce||ciphertext)>.
func formatSealed(keyID string, nonceAndCiphertext []byte) string {
	return formatVersion + "." + keyID + "." + payloadEncoding.EncodeToString(nonceAndCiphertext)
}

// parseSealed splits s into its parts and checks their shape. Every
// error wraps ErrDecrypt and quotes nothing from s.
func parseSealed(s string) (sealedValue, error) {
	version, rest, ok := strings.Cut(s, ".")
	if !ok {
		return sealedValue{}, errMalformed
	}
	if version != formatVersion {
		return sealedValue{}, errVersion
	}
	keyID, body, ok := strings.Cut(rest, ".")
	if !ok || !validKeyID(keyID) || !isBase64URL(body) {
		return sealedValue{}, errMalformed
	}
	raw, err := payloadEncoding.DecodeString(body)
	if err != nil || len(raw) < nonceSize+tagSize {
		return sealedValue{}, errMalformed
	}
	return sealedValue{keyID: keyID, nonce: raw[:nonceSize], payload: raw[nonceSize:]}, nil
}

// isBase64URL reports whether s uses only the base64url alphabet. The
// decoder alone would skip embedded newlines, letting one value have many
// spellings.
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}
