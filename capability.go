package patchbay

// Capability names one thing a role may do. Routes declare the capability
// they need; roles hold capabilities in the role_capabilities table.
type Capability string

// The capabilities Patchbay knows. The admin role holds all of them by
// construction, whatever role_capabilities says.
const (
	CapRegisterRemote           Capability = "mcp.register_remote"
	CapRegisterLocalFromCatalog Capability = "mcp.register_local_from_catalog"
	CapRegisterLocalScript      Capability = "mcp.register_local_script"
	CapManageCatalog            Capability = "mcp.manage_catalog"
	CapInspectLogins            Capability = "mcp.inspect_logins"
	CapUsersManage              Capability = "users.manage"
	// CapAPITokens lets a person mint personal access tokens for the API.
	CapAPITokens Capability = "api.tokens"
)

// AllCapabilities lists every capability in display order.
var AllCapabilities = []Capability{
	CapRegisterLocalFromCatalog,
	CapRegisterRemote,
	CapRegisterLocalScript,
	CapManageCatalog,
	CapInspectLogins,
	CapUsersManage,
	CapAPITokens,
}

// SelfServiceCapabilities are seeded on every newly created role.
var SelfServiceCapabilities = []Capability{
	CapRegisterLocalFromCatalog,
	CapRegisterRemote,
	CapAPITokens,
}

// Describe returns a one-line explanation of c for the roles page.
func (c Capability) Describe() string {
	switch c {
	case CapRegisterRemote:
		return "Activate remote (HTTP) connectors for themselves"
	case CapRegisterLocalFromCatalog:
		return "Activate local connectors from the admin-vetted catalog"
	case CapRegisterLocalScript:
		return "Register local scripts that run on this host"
	case CapManageCatalog:
		return "Curate the catalog, global connectors and sign-in providers"
	case CapInspectLogins:
		return "See everyone's connector states, read-only, without secrets"
	case CapUsersManage:
		return "Manage people and roles"
	case CapAPITokens:
		return "Create personal access tokens for the API"
	}
	return string(c)
}

// Valid reports whether c is a capability Patchbay knows.
func (c Capability) Valid() bool {
	for _, k := range AllCapabilities {
		if k == c {
			return true
		}
	}
	return false
}

// Built-in role names.
const (
	RoleAdmin   = "admin"
	RoleUser    = "user"
	RoleSupport = "support"
)
