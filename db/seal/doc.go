// Package seal is Patchbay's one place that encrypts ("seals") secrets
// stored at rest. It uses AES-256-GCM from the standard library only.
//
// A sealed value is text, so it fits in a TEXT column and is easy to grep:
//
//	v1.<key id>.<base64url, no padding, of nonce || ciphertext>
//
// The GCM additional data binds each value to the format version, key id,
// table, column and row id it was sealed for, so a value copied to another
// row, column or table does not open.
//
// A Keyring seals with its primary key and opens with any of its keys.
// That is how keys rotate: make a new key primary, keep the old one in the
// ring while NeedsReseal still finds values sealed with it, then drop it.
package seal
