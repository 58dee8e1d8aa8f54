package seal

import (
	"errors"
	"fmt"
)

// ErrDecrypt is wrapped by every Open failure: wrong key, wrong AAD,
// tampering, truncation, an unknown key id or a malformed value. Callers
// need only errors.Is(err, ErrDecrypt); the message never echoes the input,
// which may be a secret pasted in the wrong place.
var ErrDecrypt = errors.New("seal: cannot open sealed value")

// The reasons below are fixed strings, so an error can say why a value
// did not open without quoting any of it.
var (
	errMalformed  = fmt.Errorf("%w: malformed value", ErrDecrypt)
	errVersion    = fmt.Errorf("%w: unsupported format version", ErrDecrypt)
	errUnknownKey = fmt.Errorf("%w: sealed with a key not in the keyring", ErrDecrypt)
	errAuthFailed = fmt.Errorf("%w: authentication failed (wrong key or AAD, or tampered)", ErrDecrypt)
)

// Seal's own failures; they do not wrap ErrDecrypt because nothing was
// being opened.
var (
	errNoKeys        = errors.New("seal: keyring has no keys")
	errIncompleteAAD = errors.New("seal: AAD needs a table and a column")
)
