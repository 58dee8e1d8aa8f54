package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/db"
	"patchbay/mcp/connectors"
	"patchbay/views"
)

// sharedConnectorsProps builds the admin page of shared connectors; flash
// and errMsg report the last action on the list.
func (s *Server) sharedConnectorsProps(c echo.Context, flash, errMsg string) (views.SharedConnectorsProps, error) {
	ctx := c.Request().Context()
	statuses, err := s.Connectors.GlobalStatuses(ctx)
	if err != nil {
		return views.SharedConnectorsProps{}, err
	}
	catalog, err := s.DB.ListCatalog(ctx)
	if err != nil {
		return views.SharedConnectorsProps{}, err
	}
	roles, err := s.DB.ListRoles(ctx)
	if err != nil {
		return views.SharedConnectorsProps{}, err
	}
	props := views.SharedConnectorsProps{
		Shell: s.shell(c, "Shared connectors", "shared-connectors"), Flash: flash, Error: errMsg,
		CatalogEmpty: len(catalog) == 0,
	}
	for _, st := range statuses {
		grants, err := s.DB.GlobalGrants(ctx, st.ID)
		if err != nil {
			return views.SharedConnectorsProps{}, err
		}
		row := views.SharedConnectorRow{ConnectorRow: connectorRow(st)}
		for _, g := range grants {
			row.Grants = append(row.Grants, views.GrantRow{ID: g.ID, Label: grantLabel(g)})
		}
		props.Connectors = append(props.Connectors, row)
	}
	for _, e := range catalog {
		if e.Scope == db.ScopeGlobal || e.Scope == db.ScopeBoth {
			props.Catalog = append(props.Catalog, views.CatalogChoice{Name: e.Name, Title: e.Title, Kind: e.Kind, Transport: e.Transport})
		}
	}
	for _, r := range roles {
		props.Roles = append(props.Roles, r.Name)
	}
	return props, nil
}

// grantLabel names a grantee for people.
func grantLabel(g db.GlobalGrant) string {
	switch g.Grantee {
	case db.GranteeEveryone:
		return "Everyone"
	case db.GranteeRole:
		return "Role: " + g.Role
	}
	if g.UserEmail != "" {
		return g.UserEmail
	}
	return "A removed user"
}

func (s *Server) showSharedConnectors(c echo.Context) error {
	props, err := s.sharedConnectorsProps(c, "", "")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.SharedConnectorsPage(props))
}

// listSharedConnectors is the list partial the page reloads when told
// that connectors changed.
func (s *Server) listSharedConnectors(c echo.Context) error {
	props, err := s.sharedConnectorsProps(c, "", "")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.SharedConnectorsList(props))
}

// afterSharedAction answers an action on the list: the list with a flash
// for HTMX, a redirect back to the page for a plain form.
func (s *Server) afterSharedAction(c echo.Context, flash string) error {
	if !isHTMX(c) {
		return c.Redirect(http.StatusSeeOther, "/admin/connectors")
	}
	props, err := s.sharedConnectorsProps(c, flash, "")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.SharedConnectorsList(props))
}

// panelNotice answers an action that started no install: a notice in the
// panel (and a list reload) for HTMX, a redirect to the page otherwise.
func (s *Server) panelNotice(c echo.Context, msg string) error {
	if !isHTMX(c) {
		return c.Redirect(http.StatusSeeOther, "/admin/connectors")
	}
	c.Response().Header().Set("HX-Trigger", connectorsChanged)
	return render(c, http.StatusOK, views.PanelNotice(msg))
}

// renderPanel renders a panel component alone for HTMX, or inside its page.
func renderPanel(c echo.Context, partial, page templComponent) error {
	if isHTMX(c) {
		return render(c, http.StatusOK, partial)
	}
	return render(c, http.StatusOK, page)
}

// newSharedConnector is the add form for one catalog entry.
func (s *Server) newSharedConnector(c echo.Context) error {
	name := strings.TrimSpace(c.QueryParam("catalog"))
	if name == "" {
		return patchbay.Errorf(patchbay.EINVALID, "Choose a connector from the catalog.")
	}
	e, err := s.DB.CatalogEntryByName(c.Request().Context(), name)
	if err != nil {
		return err
	}
	if e.Scope != db.ScopeGlobal && e.Scope != db.ScopeBoth {
		return patchbay.Errorf(patchbay.EINVALID, "%s is for people's own activations only; it cannot be shared.", e.Name)
	}
	props := views.ConnectorFormProps{
		Shell:       s.shell(c, "Add a shared connector", "shared-connectors"),
		CatalogName: e.Name, CatalogTitle: e.Title, Description: e.Description,
		Name: e.Name, Inputs: inputFieldsFor(e, "connector-input", nil, false), EnableNow: true,
	}
	return renderPanel(c, views.ConnectorForm(props), views.ConnectorFormPage(props))
}

// createSharedConnector adds a shared connector and, when asked to enable
// it, shows its install's progress.
func (s *Server) createSharedConnector(c echo.Context) error {
	f, err := s.readCatalogForm(c)
	if err != nil {
		return err
	}
	g := db.GlobalServer{
		CatalogID: f.entry.ID, Name: strings.TrimSpace(f.form.Get("name")), Enabled: f.form.Get("enable") != "",
		Config: db.ServerConfig{Inputs: f.inputs},
	}
	g, job, err := s.Connectors.CreateGlobal(c.Request().Context(), principalFrom(c).User.ID, g, f.secrets)
	if err != nil {
		return err
	}
	if job == nil {
		return s.panelNotice(c, "Shared connector "+g.Name+" added. It is disabled: enable it from the list when you are ready.")
	}
	return s.respondInstall(c, job.RunID)
}

// sharedConnector loads the shared connector named by the :id parameter.
func (s *Server) sharedConnector(c echo.Context) (db.GlobalServer, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return db.GlobalServer{}, err
	}
	return s.DB.GlobalServerByID(c.Request().Context(), id)
}

// enableSharedConnector enables a shared connector, which installs and
// connects it.
func (s *Server) enableSharedConnector(c echo.Context) error {
	return s.runSharedJob(c, s.Connectors.EnableGlobal)
}

// refreshSharedConnector reinstalls a shared connector from its source.
func (s *Server) refreshSharedConnector(c echo.Context) error {
	return s.runSharedJob(c, s.Connectors.RefreshGlobal)
}

// runSharedJob runs op on the shared connector the path names and answers
// with the progress of the install it started.
func (s *Server) runSharedJob(c echo.Context, op func(ctx context.Context, actorID, id int64) (*connectors.Job, error)) error {
	g, err := s.sharedConnector(c)
	if err != nil {
		return err
	}
	job, err := op(c.Request().Context(), principalFrom(c).User.ID, g.ID)
	if err != nil {
		return err
	}
	return s.respondInstall(c, job.RunID)
}

func (s *Server) disableSharedConnector(c echo.Context) error {
	g, err := s.sharedConnector(c)
	if err != nil {
		return err
	}
	if err := s.Connectors.DisableGlobal(c.Request().Context(), principalFrom(c).User.ID, g.ID); err != nil {
		return err
	}
	return s.afterSharedAction(c, g.Name+" disabled. Its settings are kept.")
}

func (s *Server) deleteSharedConnector(c echo.Context) error {
	g, err := s.sharedConnector(c)
	if err != nil {
		return err
	}
	if err := s.Connectors.DeleteGlobal(c.Request().Context(), principalFrom(c).User.ID, g.ID); err != nil {
		return err
	}
	return s.afterSharedAction(c, g.Name+" deleted.")
}

// sharedConnectorSettings is the settings form of a shared connector.
// Secrets are never shown: a stored one is marked as kept when blank.
func (s *Server) sharedConnectorSettings(c echo.Context) error {
	g, err := s.sharedConnector(c)
	if err != nil {
		return err
	}
	e, err := s.DB.CatalogEntryByID(c.Request().Context(), g.CatalogID)
	if err != nil {
		return err
	}
	props := views.ConnectorFormProps{
		Shell:  s.shell(c, "Settings of "+g.Name, "shared-connectors"),
		EditID: g.ID, CatalogName: e.Name, CatalogTitle: e.Title, Description: e.Description,
		Name: g.Name, Inputs: inputFieldsFor(e, "connector-input", g.Config.Inputs, g.HasSecrets),
	}
	return renderPanel(c, views.ConnectorForm(props), views.ConnectorFormPage(props))
}

// saveSharedConnectorSettings saves a shared connector's settings; blank
// secret fields keep the stored secrets. An enabled connector restarts
// with them, through an install job whose progress is shown.
func (s *Server) saveSharedConnectorSettings(c echo.Context) error {
	g, err := s.sharedConnector(c)
	if err != nil {
		return err
	}
	form, err := formParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := s.DB.CatalogEntryByID(ctx, g.CatalogID)
	if err != nil {
		return err
	}
	// UpdateGlobal refuses settings that leave a required input without a
	// value (stored secrets included) before it saves anything.
	inputs, secrets := readInputs(form, e)
	job, err := s.Connectors.UpdateGlobal(ctx, principalFrom(c).User.ID, g.ID, inputs, secrets)
	if err != nil {
		return err
	}
	if job == nil {
		return s.panelNotice(c, "Settings of "+g.Name+" saved. It is disabled, so nothing was restarted.")
	}
	return s.respondInstall(c, job.RunID)
}

// sharedConnectorOutput is a shared connector's recent stderr, redacted
// by the supervisor.
func (s *Server) sharedConnectorOutput(c echo.Context) error {
	g, err := s.sharedConnector(c)
	if err != nil {
		return err
	}
	out, err := s.Connectors.GlobalStderr(principalFrom(c), g.Name)
	if err != nil {
		return err
	}
	props := views.ConnectorOutputProps{Shell: s.shell(c, "Output of "+g.Name, "shared-connectors"), ID: g.ID, Name: g.Name, Output: out}
	return renderPanel(c, views.ConnectorOutput(props), views.ConnectorOutputPage(props))
}

// grantSharedConnector gives everyone, a role or one person (by email)
// access to a shared connector.
func (s *Server) grantSharedConnector(c echo.Context) error {
	g, err := s.sharedConnector(c)
	if err != nil {
		return err
	}
	form, err := formParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	me := principalFrom(c).User.ID
	var who string
	switch grantee := form.Get("grantee"); grantee {
	case db.GranteeEveryone:
		_, err = s.DB.GrantGlobal(ctx, me, g.ID, grantee, "", 0)
		who = "everyone"
	case db.GranteeRole:
		role := strings.TrimSpace(form.Get("role"))
		_, err = s.DB.GrantGlobal(ctx, me, g.ID, grantee, role, 0)
		who = "the role " + role
	case db.GranteeUser:
		email := strings.TrimSpace(form.Get("email"))
		if email == "" {
			return patchbay.Errorf(patchbay.EINVALID, "Enter the email of the person to give access to.")
		}
		u, uerr := s.DB.UserByEmail(ctx, email)
		if patchbay.ErrorCode(uerr) == patchbay.ENOTFOUND {
			return patchbay.Errorf(patchbay.EINVALID, "Nobody with the email %s has signed in to Patchbay yet.", email)
		} else if uerr != nil {
			return uerr
		}
		_, err = s.DB.GrantGlobal(ctx, me, g.ID, grantee, "", u.ID)
		who = u.Email
	default:
		return patchbay.Errorf(patchbay.EINVALID, "Choose who gets access: everyone, a role or one person.")
	}
	if err != nil {
		return err
	}
	return s.afterSharedAction(c, g.Name+" is shared with "+who+".")
}

func (s *Server) revokeSharedConnectorGrant(c echo.Context) error {
	g, err := s.sharedConnector(c)
	if err != nil {
		return err
	}
	grantID, err := idParam(c, "grant")
	if err != nil {
		return err
	}
	if err := s.DB.RevokeGlobalGrant(c.Request().Context(), principalFrom(c).User.ID, g.ID, grantID); err != nil {
		return err
	}
	return s.afterSharedAction(c, "Access to "+g.Name+" revoked.")
}
