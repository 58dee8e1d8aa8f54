package patchbay

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorCodeAndMessage(t *testing.T) {
	wrapped := fmt.Errorf("db: thing: %w", Errorf(ENOTFOUND, "No such %s.", "user"))
	tests := []struct {
		name      string
		err       error
		code, msg string
	}{
		{"nil", nil, "", ""},
		{"coded", Errorf(EINVALID, "Bad %d.", 1), EINVALID, "Bad 1."},
		{"wrapped coded", wrapped, ENOTFOUND, "No such user."},
		{"plain error never leaks its text", errors.New("disk /secret/path full"), EINTERNAL, "Internal error."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorCode(tt.err); got != tt.code {
				t.Errorf("ErrorCode = %q; want %q", got, tt.code)
			}
			if got := ErrorMessage(tt.err); got != tt.msg {
				t.Errorf("ErrorMessage = %q; want %q", got, tt.msg)
			}
		})
	}
}

func TestAdminRoleHoldsEveryCapability(t *testing.T) {
	admin := Role{Name: RoleAdmin}
	user := Role{Name: RoleUser, Capabilities: []Capability{CapAPITokens}}
	for _, c := range AllCapabilities {
		if !admin.Has(c) {
			t.Errorf("admin.Has(%s) = false; want true", c)
		}
		if got, want := user.Has(c), c == CapAPITokens; got != want {
			t.Errorf("user.Has(%s) = %v; want %v", c, got, want)
		}
	}
	var nobody *Principal
	if nobody.Can(CapAPITokens) {
		t.Error("nil principal can do something; want nothing")
	}
}
