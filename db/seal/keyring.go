package seal

import (
	"crypto/aes"
	"crypto/cipher"
)

// Keyring is the set of keys Patchbay can open secrets with. The primary
// key seals; every key in it can open. A Keyring is immutable once made,
// so it is safe for concurrent use. A nil or zero Keyring holds no keys:
// Seal fails, Open fails with ErrDecrypt, and nothing panics.
type Keyring struct {
	entries        []entry // primary first, no two with the same id
	fingerprintKey []byte  // derived from the primary; see Fingerprint
}

// entry is one key with its cipher, built once rather than per call.
type entry struct {
	key  Key
	aead cipher.AEAD // nil only if the cipher could not be built
}

// NewKeyring returns a keyring that seals with primary and opens with
// primary and every older key. Each key's ID is re-derived from its
// secret, so a hand-built Key with a wrong ID cannot seal values that no
// key file could later open. Repeated keys are kept once, first wins.
func NewKeyring(primary Key, older ...Key) *Keyring {
	r := &Keyring{fingerprintKey: deriveFingerprintKey(primary.Secret)}
	seen := make(map[string]bool, 1+len(older))
	for _, k := range append([]Key{primary}, older...) {
		k.ID = deriveKeyID(k.Secret)
		if seen[k.ID] {
			continue
		}
		seen[k.ID] = true
		r.entries = append(r.entries, entry{key: k, aead: newAEAD(k.Secret)})
	}
	return r
}

// newAEAD builds AES-256-GCM for secret. Both constructors fail only on a
// wrong key size, which the array type rules out; nil is returned rather
// than panicking, and callers treat it as a failure.
func newAEAD(secret [keySize]byte) cipher.AEAD {
	block, err := aes.NewCipher(secret[:])
	if err != nil {
		return nil
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil
	}
	return aead
}

// Primary returns the key that seals, or the zero Key if r is empty.
func (r *Keyring) Primary() Key {
	if r == nil || len(r.entries) == 0 {
		return Key{}
	}
	return r.entries[0].key
}

// Keys returns every key in r, primary first. The slice is a copy.
func (r *Keyring) Keys() []Key {
	if r == nil {
		return nil
	}
	keys := make([]Key, len(r.entries))
	for i, e := range r.entries {
		keys[i] = e.key
	}
	return keys
}

// lookup returns the entry whose key has id.
func (r *Keyring) lookup(id string) (entry, bool) {
	if r == nil {
		return entry{}, false
	}
	for _, e := range r.entries {
		if e.key.ID == id {
			return e, true
		}
	}
	return entry{}, false
}

// KeyIDOf returns the id of the key that sealed sealed, parsing it without
// decrypting. A malformed value gives an error wrapping ErrDecrypt.
func (r *Keyring) KeyIDOf(sealed string) (string, error) {
	v, err := parseSealed(sealed)
	if err != nil {
		return "", err
	}
	return v.keyID, nil
}

// NeedsReseal reports whether sealed was sealed with a key other than the
// primary, including a key r does not hold (which Open cannot open, so it
// needs attention either way). An unparsable value reports false: there
// is nothing to reseal, and Open will report the real problem.
func (r *Keyring) NeedsReseal(sealed string) bool {
	v, err := parseSealed(sealed)
	if err != nil {
		return false
	}
	return v.keyID != r.Primary().ID
}
