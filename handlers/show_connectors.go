package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/db"
	"patchbay/mcp/connectors"
	"patchbay/views"
)

func (s *Server) showHome(c echo.Context) error {
	return c.Redirect(http.StatusSeeOther, "/connectors")
}

// connectorsProps builds the viewer's connectors page: their own
// activations and the shared connectors granted to them.
func (s *Server) connectorsProps(c echo.Context, flash string) (views.ConnectorsProps, error) {
	me := principalFrom(c)
	statuses, err := s.Connectors.UserStatuses(c.Request().Context(), me.User)
	if err != nil {
		return views.ConnectorsProps{}, err
	}
	props := views.ConnectorsProps{
		Shell:                s.shell(c, "Connectors", "connectors"),
		CanBrowseMarketplace: me.Can(patchbay.CapRegisterLocalFromCatalog) || me.Can(patchbay.CapRegisterRemote),
		Flash:                flash,
	}
	for _, st := range statuses {
		props.Connectors = append(props.Connectors, connectorRow(st))
	}
	return props, nil
}

// showConnectors is the viewer's connectors. Opening it starts their
// runtime, so their connectors are up by the time they are used.
func (s *Server) showConnectors(c echo.Context) error {
	s.Connectors.WarmUser(principalFrom(c).User.ID)
	props, err := s.connectorsProps(c, "")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ConnectorsPage(props))
}

// listConnectors is the list partial the page reloads when told that
// connectors changed.
func (s *Server) listConnectors(c echo.Context) error {
	props, err := s.connectorsProps(c, "")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ConnectorsList(props))
}

// showMarketplace lists the catalog entries the viewer may activate for
// themselves, with a form for each.
func (s *Server) showMarketplace(c echo.Context) error {
	ctx := c.Request().Context()
	me := principalFrom(c)
	catalog, err := s.DB.ListCatalog(ctx)
	if err != nil {
		return err
	}
	mine, err := s.DB.UserServers(ctx, me.User.ID)
	if err != nil {
		return err
	}
	props := views.MarketplaceProps{Shell: s.shell(c, "Marketplace", "marketplace")}
	for _, e := range catalog {
		if e.Scope != db.ScopeUser && e.Scope != db.ScopeBoth {
			continue
		}
		entry := views.MarketplaceEntry{Name: e.Name, Title: e.Title, Description: e.Description, Kind: e.Kind, Transport: e.Transport}
		switch {
		case e.AuthType == "oauth" || e.AuthType == "qr":
			entry.Unsupported = "Sign-in activation arrives in a later release."
		case e.Kind == db.KindRemote && !me.Can(patchbay.CapRegisterRemote):
			entry.Unsupported = "Your role may not activate remote connectors."
		default:
			entry.Inputs = inputFieldsFor(e, "activate-"+e.Name+"-input", nil, false)
		}
		for _, u := range mine {
			if u.CatalogName == e.Name {
				entry.ActiveAs = append(entry.ActiveAs, u.Name)
			}
		}
		props.Entries = append(props.Entries, entry)
	}
	return render(c, http.StatusOK, views.MarketplacePage(props))
}

// activateConnector activates a catalog connector for the viewer and
// shows the install's progress. Runtimes.Activate checks the capability
// its kind needs; nothing is kept if the install or the first start
// fails.
func (s *Server) activateConnector(c echo.Context) error {
	f, err := s.readCatalogForm(c)
	if err != nil {
		return err
	}
	job, err := s.Connectors.Activate(c.Request().Context(), principalFrom(c), connectors.Activation{
		CatalogName: f.entry.Name, Name: strings.TrimSpace(f.form.Get("name")), Inputs: f.inputs, Secrets: f.secrets,
	})
	if err != nil {
		return err
	}
	return s.respondInstall(c, job.RunID)
}

// deactivateConnector removes one of the viewer's own connectors. Names
// are looked up among the viewer's own, so another person's is not found.
func (s *Server) deactivateConnector(c echo.Context) error {
	name := c.Param("name")
	if err := s.Connectors.Deactivate(c.Request().Context(), principalFrom(c).User.ID, name); err != nil {
		return err
	}
	if !isHTMX(c) {
		return c.Redirect(http.StatusSeeOther, "/connectors")
	}
	props, err := s.connectorsProps(c, name+" deactivated.")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ConnectorsList(props))
}

// showOwnConnectorOutput shows the redacted stderr of one of the viewer's
// own connectors. Names are looked up among the viewer's own, so another
// person's connector is not found.
func (s *Server) showOwnConnectorOutput(c echo.Context) error {
	me := principalFrom(c).User
	row, err := s.DB.UserServerByName(c.Request().Context(), me.ID, c.Param("name"))
	if err != nil {
		return err
	}
	props := views.ConnectorOutputProps{
		Shell: s.shell(c, "Output of "+row.Name, "connectors"), ID: row.ID, Name: row.Name,
		Output: s.Connectors.UserStderr(me.ID, row.Name), Own: true,
	}
	return renderPanel(c, views.ConnectorOutput(props), views.ConnectorOutputPage(props))
}
