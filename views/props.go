// Package views renders Patchbay's HTML with templ. Every component takes a
// small props struct built for it by a handler: never a database row, never
// a map, and never a secret except the one-time token shown on creation.
// Components that HTMX swaps are exported so that the page and the partial
// endpoint render the same markup.
package views

// Nav says which top-level sections the viewer may open. Handlers set a flag
// from the viewer's capabilities; the view only hides links, it never grants.
type Nav struct {
	Connectors, Marketplace, Users, Support, Tokens bool
	// SharedConnectors is the admin page of shared (global) connectors.
	SharedConnectors bool
}

// Viewer is the signed-in person as the header shows them.
type Viewer struct {
	Name, Email, Role string
}

// Shell is what every full page needs.
type Shell struct {
	// Title is the page title, shown before " · Patchbay".
	Title string
	// Active is the current section: "connectors", "marketplace",
	// "shared-connectors", "users", "support" or "tokens". Its nav link
	// gets aria-current="page".
	Active string
	// Viewer is nil when signed out.
	Viewer *Viewer
	Nav    Nav
	// CSRFToken goes on <body hx-headers> for HTMX requests and in a hidden
	// csrf_token input in every POST form, so forms also work without JS.
	CSRFToken string
	// DevSignIn shows a banner warning that anyone on this machine can sign
	// in as anyone.
	DevSignIn bool
	// NoHistory marks pages that hold a one-time secret with
	// hx-history="false", so HTMX never snapshots them.
	NoHistory bool
}

// SignInProps is the sign-in page.
type SignInProps struct {
	Shell Shell
	// DevSignIn explains that development sign-in lets you choose who to be.
	DevSignIn bool
	// Error, when set, is shown in an alert box.
	Error string
	// Next is the local path to return to after sign-in; it is passed to
	// /auth/login as ?next= and validated there.
	Next string
}

// ConnectorsProps is the viewer's connectors page and its list partial.
type ConnectorsProps struct {
	Shell Shell
	// CanBrowseMarketplace points the empty state at /marketplace instead
	// of telling the viewer to ask an admin.
	CanBrowseMarketplace bool
	// Connectors are the viewer's own connectors and the shared ones
	// granted to them.
	Connectors []ConnectorRow
	// Flash reports the last action on the list.
	Flash string
}

// MarketplaceProps is the marketplace page: the catalog entries the viewer
// may activate for themselves.
type MarketplaceProps struct {
	Shell   Shell
	Entries []MarketplaceEntry
}

// ErrorProps is an error shown as a full page or as an HTMX fragment.
// Message must be safe to show to the viewer; it is rendered as text.
type ErrorProps struct {
	Shell   Shell
	Status  int
	Title   string
	Message string
}

// UserRow is one person in the users table.
type UserRow struct {
	ID       int64
	Name     string
	Email    string
	Role     string
	Disabled bool
	// IsSelf hides the disable button: nobody may lock themselves out.
	IsSelf   bool
	LastSeen string
	Sessions int
}

// CapabilityRow is one capability with a human description. In RoleRow it
// says whether the role holds it; in UsersProps.AllCapabilities Held is the
// default state of the create-role checkbox (the self-service capabilities).
type CapabilityRow struct {
	Name        string
	Description string
	Held        bool
}

// RoleRow is one role in the roles section.
type RoleRow struct {
	Name         string
	BuiltIn      bool
	Capabilities []CapabilityRow
	Members      int
}

// UsersProps is the users page and its two swappable partials.
type UsersProps struct {
	Shell Shell
	Users []UserRow
	Roles []RoleRow
	// RoleNames are the choices in each user's role select.
	RoleNames []string
	// AllCapabilities are the create-role checkboxes; Held pre-checks one.
	AllCapabilities []CapabilityRow
	// Flash and Error report the last users-table action.
	Flash string
	Error string
	// RolesFlash and RolesError report the last roles-section action. They
	// are separate from Flash and Error because the two partials are
	// swapped independently and both appear on the full page.
	RolesFlash string
	RolesError string
}

// SupportRow is one person as support staff see them: read-only, no secrets.
type SupportRow struct {
	Name       string
	Email      string
	Role       string
	Disabled   bool
	LastSeen   string
	Sessions   int
	Connectors int
}

// SupportProps is the read-only support page.
type SupportProps struct {
	Shell  Shell
	People []SupportRow
}

// TokenRow is a personal access token's public record.
type TokenRow struct {
	ID       int64
	Name     string
	Prefix   string
	Created  string
	LastUsed string
}

// NewToken is a token just created. Secret is shown exactly once.
type NewToken struct {
	Name   string
	Secret string
}

// TokensProps is the tokens page and its swappable panel.
type TokensProps struct {
	Shell  Shell
	Tokens []TokenRow
	// Created is non-nil only in the response that created a token.
	Created *NewToken
	Error   string
	// BaseURL is the server's external URL for the curl example, e.g.
	// "https://patchbay.example.com". When empty the example uses
	// $PATCHBAY_URL instead.
	BaseURL string
}
