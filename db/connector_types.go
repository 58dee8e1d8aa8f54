package db

import "time"

// Connector kinds, scopes and transports as the catalog stores them.
const (
	KindLocal  = "local"
	KindRemote = "remote"

	ScopeUser   = "user"
	ScopeGlobal = "global"
	ScopeBoth   = "both"
)

// CatalogEntry is one admin-vetted connector template. It holds only the
// schema of what an activation must supply (Inputs), never credentials.
type CatalogEntry struct {
	ID          int64
	Name        string
	Title       string
	Description string
	Kind        string // KindLocal or KindRemote
	Scope       string // ScopeUser, ScopeGlobal or ScopeBoth
	Transport   string // "stdio", "streamable-http" or "sse"

	// Local: the command and arguments, run without a shell in the
	// connector's own directory, and declared non-secret environment.
	Command string
	Args    []string
	Env     map[string]string
	// Remote: the server URL.
	URL string

	// Inputs are what an activation supplies: API keys, settings.
	Inputs []CatalogInput

	AuthType      string // "none", "api_key", "oauth" or "qr"
	OAuthProvider string
	OAuthScopes   []string
	// Deliver says how an OAuth credential reaches the server (JSON).
	Deliver string
	// Verify is an optional command run after install; nil if none.
	Verify *VerifySpec
	// InstallScripts lets npm run the dependency tree's lifecycle
	// scripts; off unless the manifest opts in.
	InstallScripts bool

	Version            int64
	VersionString      string
	VersionReleaseDate string
	// Source is the directory holding the connector's source files (local
	// kind); the reconciler installs from it.
	Source      string
	SourceRef   string
	ContentHash string
	ToolDigest  string

	CreatedAt time.Time
	UpdatedAt time.Time
}

// CatalogInput is one value an activation supplies. For a local connector
// it is delivered as the environment variable Name; for a remote one as
// the HTTP header Header (formatted with Format, "{}" standing for the
// value) when Header is set.
type CatalogInput struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Secret      bool   `json:"secret,omitempty"`
	Required    bool   `json:"required,omitempty"`
	Default     string `json:"default,omitempty"`
	Header      string `json:"header,omitempty"`
	Format      string `json:"format,omitempty"`
}

// VerifySpec is a connector's post-install check: a command (argv, no
// shell) and a timeout in seconds (0 means the default).
type VerifySpec struct {
	Command        []string `json:"command"`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty"`
}

// ServerConfig is the non-secret configuration of one global server or
// user activation: values for the catalog's non-secret inputs. Secret
// values are sealed separately and never appear here.
type ServerConfig struct {
	Inputs map[string]string `json:"inputs,omitempty"`
}

// GlobalServer is a shared connector that runs on the host for everyone
// granted it. Its secrets are sealed and read only by GlobalServerSecrets.
type GlobalServer struct {
	ID        int64
	CatalogID int64
	Name      string
	Enabled   bool
	Config    ServerConfig
	// HasSecrets reports whether any secret is stored.
	HasSecrets bool
	// InstalledHash is the source hash last installed for it.
	InstalledHash string
	LastError     string
	CreatedBy     int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Grantee kinds for mcp_global_access.
const (
	GranteeEveryone = "everyone"
	GranteeRole     = "role"
	GranteeUser     = "user"
)

// GlobalGrant lets everyone, a role or one user use a global connector.
type GlobalGrant struct {
	ID        int64
	GlobalID  int64
	Grantee   string // GranteeEveryone, GranteeRole or GranteeUser
	Role      string
	UserID    int64
	UserEmail string // for display; "" unless Grantee is GranteeUser
	CreatedAt time.Time
}

// Auth states of a user activation.
const (
	AuthNone        = "none"
	AuthPending     = "pending"
	AuthReady       = "ready"
	AuthNeedsSignIn = "needs_signin"
	AuthFailed      = "failed"
)

// UserServer is one user's own activation of a catalog connector.
// CatalogName, OAuthProvider and Deliver are snapshots taken at
// activation, so a catalog edit never silently changes it.
type UserServer struct {
	ID            int64
	UserID        int64
	CatalogID     int64 // 0 once the catalog entry is gone
	CatalogName   string
	Name          string
	Kind          string
	Transport     string
	Config        ServerConfig
	HasCredential bool
	AuthState     string
	OAuthProvider string
	Deliver       string
	InstalledHash string
	LastError     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Install run scopes, reasons and statuses.
const (
	InstallScopeGlobal = "global"
	InstallScopeUser   = "user"

	InstallRunning   = "running"
	InstallSucceeded = "succeeded"
	InstallUnchanged = "unchanged"
	InstallFailed    = "failed"
)

// InstallRun is one run of the dependency reconciler for a connector,
// kept so its output can be read while it runs and afterwards.
type InstallRun struct {
	ID        int64
	Scope     string // InstallScopeGlobal or InstallScopeUser
	UserID    int64  // 0 for global
	Connector string
	// Reason says which path ran it: "enable", "refresh", "activate",
	// "start".
	Reason     string
	Status     string
	Hash       string
	Log        string
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
}
