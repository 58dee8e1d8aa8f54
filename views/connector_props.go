package views

// Connector phases a ConnectorRow can show. The first five are the
// supervisor's; the others come from the connector's row and its jobs.
const (
	PhaseReady      = "ready"
	PhaseStarting   = "starting"
	PhaseRestarting = "restarting"
	PhaseFailed     = "failed"
	PhaseStopped    = "stopped"
	PhaseDisabled   = "disabled"
	PhaseInstalling = "installing"
	PhaseNotRunning = "not running"
)

// Install run statuses an InstallProps can show.
const (
	InstallRunning   = "running"
	InstallSucceeded = "succeeded"
	InstallUnchanged = "unchanged"
	InstallFailed    = "failed"
)

// ConnectorRow is one connector as a list shows it: its state, never its
// settings or secrets.
type ConnectorRow struct {
	// ID is the shared connector's or the activation's row id.
	ID        int64
	Name      string
	Title     string
	Kind      string
	Transport string
	Enabled   bool
	// Phase is one of the Phase constants.
	Phase string
	// Attempt is the restart attempt while restarting.
	Attempt int
	// LastError says why it is failed; "" for a shared connector seen by
	// a user, whose errors may describe the host.
	LastError string
	Tools     []string
	// Shared marks a connector an administrator shares with the viewer;
	// otherwise it is the viewer's own and they may deactivate it.
	Shared bool
	// InstallRunID is the latest install run (0 if none), InstallStatus
	// its status.
	InstallRunID  int64
	InstallStatus string
}

// GrantRow is who may use a shared connector: "Everyone", "Role: x" or a
// person's email.
type GrantRow struct {
	ID    int64
	Label string
}

// SharedConnectorRow is a shared connector with who may use it.
type SharedConnectorRow struct {
	ConnectorRow
	Grants []GrantRow
}

// CatalogChoice is a catalog entry offered in the add-a-shared-connector
// picker.
type CatalogChoice struct {
	Name, Title, Kind, Transport string
}

// SharedConnectorsProps is the admin page of shared connectors and its
// list partial.
type SharedConnectorsProps struct {
	Shell      Shell
	Connectors []SharedConnectorRow
	// Catalog lists the entries that may be shared (scope global or both);
	// CatalogEmpty says the catalog has no entries at all.
	Catalog      []CatalogChoice
	CatalogEmpty bool
	// Roles are the choices of the grant form's role select.
	Roles []string
	// Flash and Error report the last action on the list.
	Flash string
	Error string
}

// InputField is one value a catalog entry asks for, as a form field. A
// secret is a password field that is never prefilled.
type InputField struct {
	// ID is the element id, unique on the page; Name the form field name.
	ID, Name    string
	Label       string
	Description string
	Secret      bool
	Required    bool
	// Value prefills a non-secret field; it is always "" for a secret.
	Value string
	// Stored says a secret is already stored, so blank keeps it.
	Stored bool
}

// ConnectorFormProps is the form that adds a shared connector from a
// catalog entry or, with EditID set, edits one's settings.
type ConnectorFormProps struct {
	Shell Shell
	// EditID is the shared connector being edited; 0 when adding.
	EditID       int64
	CatalogName  string
	CatalogTitle string
	Description  string
	// Name is the new connector's name (adding) or its name (editing).
	Name      string
	Inputs    []InputField
	EnableNow bool
}

// InstallProps is one install run: its status and its output so far.
type InstallProps struct {
	// Shell is used by the full page only.
	Shell     Shell
	ID        int64
	Connector string
	// Shared marks a shared connector's install.
	Shared   bool
	Reason   string
	Status   string
	Error    string
	Started  string
	Finished string
	Log      string
	// BackURL and BackLabel link to the list the run belongs to.
	BackURL   string
	BackLabel string
}

// Running reports whether the run has not finished, so the panel keeps
// polling.
func (p InstallProps) Running() bool { return p.Status == InstallRunning }

// ConnectorOutputProps is a shared connector's recent stderr, redacted.
type ConnectorOutputProps struct {
	Shell  Shell
	ID     int64
	Name   string
	Output string
	// Own marks one of the viewer's own connectors (the page then belongs
	// to Connectors rather than Shared connectors).
	Own bool
}

// MarketplaceEntry is one catalog entry a user may activate.
type MarketplaceEntry struct {
	Name, Title, Description, Kind, Transport string
	// Unsupported says why it cannot be activated here; "" if it can.
	Unsupported string
	// ActiveAs are the names the viewer already runs it under.
	ActiveAs []string
	Inputs   []InputField
}

// TestConnectionProps is the outcome of a "Test connection": the tools
// the connector offers, or why it did not connect. It never holds what
// the form's secret fields said.
type TestConnectionProps struct {
	Tools []string
	// Error says why the connector did not connect; "" when it did.
	Error string
}
