package seal

import (
	cryptorand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// keySize is the AES-256 key length in bytes.
const keySize = 32

// keyIDLabel separates key-id hashing from any other use of SHA-256 over
// a key, so an id can never be mistaken for another digest of the secret.
const keyIDLabel = "patchbay-seal-key-id\x00"

// keyIDLen is the length of a key id in hex characters (64 bits), enough
// to tell a handful of keys apart while revealing nothing useful.
const keyIDLen = 16

// Key is one 32-byte AES-256 key with its id. The id is derived from the
// secret (see GenerateKey), so it can be checked wherever the key is read.
type Key struct {
	ID     string
	Secret [keySize]byte
}

// GenerateKey returns a new key whose secret is read from rand, or from
// crypto/rand when rand is nil. Its ID is the first 16 hex characters of
// sha256("patchbay-seal-key-id\x00" + secret).
func GenerateKey(rand io.Reader) (Key, error) {
	if rand == nil {
		rand = cryptorand.Reader
	}
	var k Key
	if _, err := io.ReadFull(rand, k.Secret[:]); err != nil {
		return Key{}, fmt.Errorf("seal: generate key: %w", err)
	}
	k.ID = deriveKeyID(k.Secret)
	return k, nil
}

// keyEncodings are the base64 forms KeyFromBase64 accepts. Strict decoding
// rejects non-zero padding bits, so each key has one spelling per alphabet.
var keyEncodings = []*base64.Encoding{
	base64.StdEncoding.Strict(),
	base64.URLEncoding.Strict(),
	base64.RawStdEncoding.Strict(),
	base64.RawURLEncoding.Strict(),
}

// KeyFromBase64 parses a key from standard or URL base64, padded or not,
// ignoring surrounding whitespace (keys often arrive with a trailing
// newline). It must decode to exactly 32 bytes. Errors never quote s.
func KeyFromBase64(s string) (Key, error) {
	k, err := decodeKey(s)
	if err != nil {
		return Key{}, fmt.Errorf("seal: %w", err)
	}
	return k, nil
}

// decodeKey is KeyFromBase64 without the package prefix on its errors, so
// the key file reader can add its own context without repeating it.
func decodeKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Key{}, errors.New("key is empty")
	}
	var raw []byte
	var err error
	for _, enc := range keyEncodings {
		if raw, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	if err != nil {
		return Key{}, errors.New("key is not valid base64 (standard or URL alphabet)")
	}
	if len(raw) != keySize {
		return Key{}, fmt.Errorf("key decodes to %d bytes; want %d", len(raw), keySize)
	}
	var k Key
	copy(k.Secret[:], raw)
	k.ID = deriveKeyID(k.Secret)
	return k, nil
}

// Base64 returns the secret in standard, padded base64: the form written
// to key files and accepted by KeyFromBase64.
func (k Key) Base64() string {
	return base64.StdEncoding.EncodeToString(k.Secret[:])
}

// deriveKeyID returns the id that belongs to secret.
func deriveKeyID(secret [keySize]byte) string {
	h := sha256.New()
	h.Write([]byte(keyIDLabel))
	h.Write(secret[:])
	return hex.EncodeToString(h.Sum(nil))[:keyIDLen]
}

// validKeyID reports whether id has the shape deriveKeyID produces, so a
// parser can reject anything else before looking it up.
func validKeyID(id string) bool {
	if len(id) != keyIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
