package handlers

import (
	"github.com/labstack/echo/v4"

	"patchbay"
)

// Access is what a route requires of its caller. Every route declares one;
// a test walks the router and fails on any route without it.
type Access struct {
	kind accessKind
	cap  patchbay.Capability
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
func Cap(c patchbay.Capability) Access { return Access{kind: accessCapability, cap: c} }

// String describes the access rule, for the route listing and test output.
func (a Access) String() string {
	switch a.kind {
	case accessPublic:
		return "public"
	case accessSignedIn:
		return "signed-in"
	case accessCapability:
		return "cap:" + string(a.cap)
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
				if a.kind == accessCapability && !p.Can(a.cap) {
					return patchbay.Errorf(patchbay.EFORBIDDEN, "You do not have permission to do that.")
				}
				return next(c)
			}
			// A route that forgot to declare access is closed, never open.
			return patchbay.Errorf(patchbay.EFORBIDDEN, "This route declares no access rule.")
		}
	}
}
