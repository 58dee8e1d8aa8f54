package views

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/a-h/templ"
)

// connectorPanelSwap shows a swapped-in form, progress or output at the
// top of the viewport, where the panel is.
const connectorPanelSwap = "innerHTML show:#connector-panel:top"

// installPath is the page and polling endpoint of one install run.
func installPath(id int64) string { return fmt.Sprintf("/installs/%d", id) }

func installURL(id int64) templ.SafeURL { return templ.URL(installPath(id)) }

// installElementID is the id of an install's progress panel.
func installElementID(id int64) string { return fmt.Sprintf("install-%d", id) }

// sharedPath is an action route of one shared connector, such as
// /admin/connectors/7/enable.
func sharedPath(id int64, action string) string {
	return fmt.Sprintf("/admin/connectors/%d/%s", id, action)
}

func sharedURL(id int64, action string) templ.SafeURL { return templ.URL(sharedPath(id, action)) }

// grantRevokePath is the revoke route of one grant.
func grantRevokePath(id, grantID int64) string {
	return fmt.Sprintf("/admin/connectors/%d/grants/%d/revoke", id, grantID)
}

// deactivatePath is the deactivate route of one of the viewer's
// connectors. Names are validated connector names: letters, digits, '-'
// and '_', safe in a path.
func deactivatePath(name string) string { return "/connectors/" + name + "/deactivate" }

// ownOutputPath is where one of the viewer's own connectors shows its
// stderr.
func ownOutputPath(name string) string { return "/connectors/" + name + "/output" }

// phaseLabel is what a status badge says.
func phaseLabel(phase string, attempt int) string {
	switch phase {
	case PhaseRestarting:
		if attempt > 0 {
			return fmt.Sprintf("restarting (attempt %d)", attempt)
		}
	case "":
		return PhaseNotRunning
	}
	return phase
}

// phaseClass colours a status badge.
func phaseClass(phase string) string {
	switch phase {
	case PhaseReady:
		return "badge-ok"
	case PhaseFailed:
		return "badge-error"
	case PhaseStarting, PhaseRestarting, PhaseInstalling:
		return "badge-busy"
	}
	return "badge-muted"
}

// installClass colours an install status badge.
func installClass(status string) string {
	switch status {
	case InstallSucceeded, InstallUnchanged:
		return "badge-ok"
	case InstallFailed:
		return "badge-error"
	case InstallRunning:
		return "badge-busy"
	}
	return "badge-muted"
}

// installHeading names what an install run is doing or did.
func installHeading(p InstallProps) string {
	verb := map[string]string{
		"enable": "Installing", "refresh": "Reinstalling", "update": "Updating",
		"activate": "Activating", "start": "Preparing",
	}[p.Reason]
	if verb == "" {
		verb = "Installing"
	}
	return verb + " " + p.Connector
}

// kindLabel is a connector's kind and transport, e.g. "local · stdio".
func kindLabel(kind, transport string) string {
	switch {
	case kind == "":
		return transport
	case transport == "":
		return kind
	}
	return kind + " · " + transport
}

// entryTitle is a catalog entry's title, or its name without one.
func entryTitle(title, name string) string {
	if title != "" {
		return title
	}
	return name
}

// orDash shows an em dash for an empty value.
func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// connectorFormAction is where the add or settings form posts.
func connectorFormAction(p ConnectorFormProps) string {
	if p.EditID != 0 {
		return sharedPath(p.EditID, "settings")
	}
	return "/admin/connectors"
}

func connectorFormHeading(p ConnectorFormProps) string {
	if p.EditID != 0 {
		return "Settings of " + p.Name
	}
	return "Add " + entryTitle(p.CatalogTitle, p.CatalogName)
}

// deleteConfirm is the question before deleting a shared connector.
func deleteConfirm(name string) string {
	return "Delete " + name + "? Its settings, secrets and grants are removed."
}

// joinNames lists names for a sentence.
func joinNames(names []string) string { return strings.Join(names, ", ") }

// fieldID builds a form element id from parts.
func fieldID(parts ...string) string { return strings.Join(parts, "-") }

// itoa64 formats an id for an element id.
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// connectorTestResultID is the result area of the add or settings form's
// Test connection button.
const connectorTestResultID = "connector-test-result"

// activateTestResultID is the result area of one marketplace entry's
// Test connection button.
func activateTestResultID(name string) string { return fieldID("activate", name, "test-result") }

// toolsSummary counts and names a connector's tools for a sentence:
// "2 tools: search, fetch".
func toolsSummary(tools []string) string {
	switch len(tools) {
	case 0:
		return "no tools"
	case 1:
		return "1 tool: " + tools[0]
	}
	return fmt.Sprintf("%d tools: %s", len(tools), strings.Join(tools, ", "))
}
