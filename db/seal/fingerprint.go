package seal

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// fingerprintLabel is the HKDF info that derives the fingerprint subkey,
// so fingerprints never use the sealing key itself.
const fingerprintLabel = "patchbay-seal fingerprint v1"

// fingerprintLen is the fingerprint length in hex characters: enough to
// match log lines up, too short to be worth treating as a secret.
const fingerprintLen = 12

// deriveFingerprintKey derives the HMAC key for Fingerprint from secret.
func deriveFingerprintKey(secret [keySize]byte) []byte {
	k, err := hkdf.Key(sha256.New, secret[:], nil, fingerprintLabel, sha256.Size)
	if err != nil {
		return nil // cannot happen for these sizes; Fingerprint then returns ""
	}
	return k
}

// Fingerprint returns 12 hex characters of HMAC-SHA256(secret) under a
// subkey of the primary key, so logs can tell whether two secrets are the
// same without revealing either. Because it is keyed, a low-entropy secret
// cannot be recovered by hashing guesses without the key file. It changes
// when the primary key changes. An empty keyring returns "".
func (r *Keyring) Fingerprint(secret string) string {
	if r == nil || r.fingerprintKey == nil {
		return ""
	}
	m := hmac.New(sha256.New, r.fingerprintKey)
	m.Write([]byte(secret))
	return hex.EncodeToString(m.Sum(nil))[:fingerprintLen]
}
