// Package patchbay holds Patchbay's domain types and its one error type.
// It imports no adapter: db, mcp and handlers depend on it, never the
// other way round.
package patchbay

import (
	"errors"
	"fmt"
)

// Error codes. Handlers map them to HTTP statuses; everything else only
// compares them.
const (
	EINVALID      = "invalid"
	ENOTFOUND     = "not_found"
	EFORBIDDEN    = "forbidden"
	EUNAUTHORIZED = "unauthorized"
	ECONFLICT     = "conflict"
	ERATELIMIT    = "rate_limited"
	EINTERNAL     = "internal"
)

// Error is an error with a code and a message that is safe to show to
// the person who caused it. Err, when set, is the underlying cause and is
// only ever logged.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or
// EINTERNAL for any other non-nil error.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the user-facing message of err. Errors that are not
// an *Error never leak their text: they are reported as an internal error.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}
