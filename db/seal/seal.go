package seal

import (
	cryptorand "crypto/rand"
	"fmt"
	"io"
)

// Seal encrypts plaintext with the primary key, bound to aad, and returns
// the sealed text. The nonce is read from rand, or crypto/rand when rand
// is nil; tests may pass a fixed reader, production code should pass nil.
// aad must name a table and a column: a value bound to nowhere in
// particular could be moved anywhere.
func (r *Keyring) Seal(plaintext []byte, aad AAD, rand io.Reader) (string, error) {
	if r == nil || len(r.entries) == 0 {
		return "", errNoKeys
	}
	if aad.Table == "" || aad.Column == "" {
		return "", errIncompleteAAD
	}
	p := r.entries[0]
	if p.aead == nil {
		return "", fmt.Errorf("seal: primary key %s has no cipher", p.key.ID)
	}
	if rand == nil {
		rand = cryptorand.Reader
	}
	out := make([]byte, nonceSize, nonceSize+len(plaintext)+tagSize)
	if _, err := io.ReadFull(rand, out); err != nil {
		return "", fmt.Errorf("seal: read nonce: %w", err)
	}
	out = p.aead.Seal(out, out[:nonceSize], plaintext, additionalData(formatVersion, p.key.ID, aad))
	return formatSealed(p.key.ID, out), nil
}

// Open decrypts a value made by Seal with any key in r, checking that it
// was sealed for aad. Every failure wraps ErrDecrypt. An empty plaintext
// opens as a non-nil empty slice.
func (r *Keyring) Open(sealed string, aad AAD) ([]byte, error) {
	v, err := parseSealed(sealed)
	if err != nil {
		return nil, err
	}
	e, ok := r.lookup(v.keyID)
	if !ok || e.aead == nil {
		return nil, errUnknownKey
	}
	plaintext, err := e.aead.Open(nil, v.nonce, v.payload, additionalData(formatVersion, v.keyID, aad))
	if err != nil {
		return nil, errAuthFailed
	}
	if plaintext == nil {
		plaintext = []byte{}
	}
	return plaintext, nil
}
