package patchbay

import "time"

// User is a person who signs in. Users are keyed by (Issuer, Subject),
// never by email alone.
type User struct {
	ID        int64      `db:"id"`
	Issuer    string     `db:"issuer"`
	Subject   string     `db:"subject"`
	Email     string     `db:"email"`
	Name      string     `db:"name"`
	Role      string     `db:"role"`
	Disabled  bool       `db:"disabled"`
	CreatedAt time.Time  `db:"created_at"`
	LastSeen  *time.Time `db:"last_seen_at"`
}

// Role is a named set of capabilities.
type Role struct {
	Name         string
	BuiltIn      bool
	Capabilities []Capability
}

// Has reports whether the role holds c. The admin role holds every
// capability by construction.
func (r Role) Has(c Capability) bool {
	if r.Name == RoleAdmin {
		return true
	}
	for _, k := range r.Capabilities {
		if k == c {
			return true
		}
	}
	return false
}

// Principal is who is making a request: a user and the capabilities
// their role grants, resolved once per request.
type Principal struct {
	User User
	Role Role
	// SessionID is the server-side session's id, empty for token callers.
	SessionID string
	// CSRFToken is the session's anti-forgery token, empty for token callers.
	CSRFToken string
	// ViaToken is true when the caller authenticated with a bearer token.
	ViaToken bool
}

// Can reports whether the principal holds capability c.
func (p *Principal) Can(c Capability) bool { return p != nil && p.Role.Has(c) }

// APIToken is a personal access token's public record; the secret itself
// is shown once at creation and stored only as a hash.
type APIToken struct {
	ID         int64      `db:"id"`
	UserID     int64      `db:"user_id"`
	Name       string     `db:"name"`
	Prefix     string     `db:"prefix"`
	CreatedAt  time.Time  `db:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
}
