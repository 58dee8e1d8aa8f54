package handlers

import (
	"strings"

	"github.com/labstack/echo/v4"

	"patchbay"
)

// Access is what a route requires of its caller. Every route declares one;
// a test walks the router and fails on any route without it.
type Access struct {
	kind accessKind
	// caps are the capabilities that each open the route: any one will do.
	caps []patchbay.Capability
}

type accessKind int

const (
	accessUnset accessKind = iota
	accessPublic
	accessSignedIn
	accessCapability
)

var (
	// Public routes need no sign-in: sign-in itself, health checks, static
	// files and the development identity provider.
	Public = Access{kind: accessPublic}
	// SignedIn routes need a signed-in person and no particular capability:
	// their own portal home, their identity, sign-out.
	SignedIn = Access{kind: accessSignedIn}
)

// Cap returns the Access that requires capability c.
func Cap(c patchbay.Capability) Access { return AnyCap(c) }

// AnyCap returns the Access that requires at least one of caps, for a
// route that serves several kinds of thing, each under its own
// capability (the marketplace: local and remote connectors); the handler
// checks the capability of the particular thing.
func AnyCap(caps ...patchbay.Capability) Access {
	return Access{kind: accessCapability, caps: caps}
}

// grantedTo reports whether a person with role r passes the rule (a
// signed-in one, for non-public routes).
func (a Access) grantedTo(r patchbay.Role) bool {
	switch a.kind {
	case accessPublic, accessSignedIn:
		return true
	case accessCapability:
		for _, c := range a.caps {
			if r.Has(c) {
				return true
			}
		}
	}
	return false
}

// String describes the access rule, for the route listing and test output.
func (a Access) String() string {
	switch a.kind {
	case accessPublic:
		return "public"
	case accessSignedIn:
		return "signed-in"
	case accessCapability:
		names := make([]string, len(a.caps))
		for i, c := range a.caps {
			names[i] = string(c)
		}
		return "cap:" + strings.Join(names, "|")
	}
	return "UNDECLARED"
}

// Declared reports whether the route stated its access rule.
func (a Access) Declared() bool { return a.kind != accessUnset }

// requireCap is the one gate every route passes through. It checks the
// principal that loadPrincipal attached to the request against the route's
// declared Access.
func requireCap(a Access) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			switch a.kind {
			case accessPublic:
				return next(c)
			case accessSignedIn, accessCapability:
				p := principalFrom(c)
				if p == nil {
					return patchbay.Errorf(patchbay.EUNAUTHORIZED, "Please sign in.")
				}
				if !a.grantedTo(p.Role) {
					return patchbay.Errorf(patchbay.EFORBIDDEN, "You do not have permission to do that.")
				}
				return next(c)
			}
			// A route that forgot to declare access is closed, never open.
			return patchbay.Errorf(patchbay.EFORBIDDEN, "This route declares no access rule.")
		}
	}
}
