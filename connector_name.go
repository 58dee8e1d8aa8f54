package patchbay

import "regexp"

// MaxConnectorName is the longest connector name allowed.
const MaxConnectorName = 64

// connectorName is what a connector name may look like. Tool names are
// exposed as <connector>__<tool>, so a name never holds "__" nor ends in
// "_", which keeps that split unambiguous; and a name is a safe path
// element (no "/", no "..") for the connector's directory.
var connectorName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]|_[A-Za-z0-9-])*$`)

// ValidConnectorName reports whether name can name a connector.
func ValidConnectorName(name string) bool {
	return len(name) <= MaxConnectorName && connectorName.MatchString(name)
}
