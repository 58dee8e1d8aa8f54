package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/db"
	"patchbay/mcp/connectors"
	"patchbay/views"
)

// connectorsChanged is the event a response announces (HX-Trigger) when
// a connector list on the page should reload: an install finished or a
// connector was added.
const connectorsChanged = "connectors-changed"

// Form field prefixes of a catalog entry's inputs. Only the inputs the
// entry declares are read, so a form cannot add variables of its own.
const (
	inputPrefix  = "input."
	secretPrefix = "secret."
)

// connectorRow is what a list shows of one connector's status.
func connectorRow(st connectors.Status) views.ConnectorRow {
	return views.ConnectorRow{
		ID: st.ID, Name: st.Name, Title: st.Title, Kind: st.Kind, Transport: st.Transport,
		Enabled: st.Enabled, Phase: st.Phase, Attempt: st.Attempt, LastError: st.LastError,
		Tools: st.Tools, Shared: st.Scope == db.InstallScopeGlobal,
		InstallRunID: st.InstallRunID, InstallStatus: st.InstallStatus,
	}
}

// inputFieldsFor turns a catalog entry's inputs into form fields with ids
// under idPrefix. values prefill non-secret fields (their defaults when
// absent); secrets are never prefilled, and storedSecrets marks them as
// kept when left blank.
func inputFieldsFor(e db.CatalogEntry, idPrefix string, values map[string]string, storedSecrets bool) []views.InputField {
	var out []views.InputField
	for _, in := range e.Inputs {
		f := views.InputField{
			ID:          idPrefix + "-" + in.Name,
			Label:       in.Title,
			Description: in.Description,
			Secret:      in.Secret,
			Required:    in.Required && in.Default == "",
		}
		if f.Label == "" {
			f.Label = in.Name
		}
		if in.Secret {
			f.Name = secretPrefix + in.Name
			f.Stored = storedSecrets
			f.Required = f.Required && !storedSecrets
		} else {
			f.Name = inputPrefix + in.Name
			v, ok := values[in.Name]
			if !ok {
				v = in.Default
			}
			f.Value = v
		}
		out = append(out, f)
	}
	return out
}

// readInputs reads the values of a catalog entry's declared inputs from a
// form: non-secret ones that were sent, and secret ones that are not
// blank.
func readInputs(form url.Values, e db.CatalogEntry) (inputs, secrets map[string]string) {
	inputs, secrets = map[string]string{}, map[string]string{}
	for _, in := range e.Inputs {
		if in.Secret {
			if v := strings.TrimSpace(form.Get(secretPrefix + in.Name)); v != "" {
				secrets[in.Name] = v
			}
		} else if vs, ok := form[inputPrefix+in.Name]; ok && len(vs) > 0 {
			inputs[in.Name] = strings.TrimSpace(vs[0])
		}
	}
	return inputs, secrets
}

// catalogForm is a posted form that names a catalog entry ("catalog") and
// carries values for its declared inputs.
type catalogForm struct {
	form            url.Values
	entry           db.CatalogEntry
	inputs, secrets map[string]string
}

// readCatalogForm reads a catalogForm; an unknown entry is not found.
func (s *Server) readCatalogForm(c echo.Context) (catalogForm, error) {
	form, err := formParams(c)
	if err != nil {
		return catalogForm{}, err
	}
	e, err := s.DB.CatalogEntryByName(c.Request().Context(), strings.TrimSpace(form.Get("catalog")))
	if err != nil {
		return catalogForm{}, err
	}
	inputs, secrets := readInputs(form, e)
	return catalogForm{form: form, entry: e, inputs: inputs, secrets: secrets}, nil
}

// formParams reads a posted form.
func formParams(c echo.Context) (url.Values, error) {
	form, err := c.FormParams()
	if err != nil {
		return nil, patchbay.Errorf(patchbay.EINVALID, "Could not read the form.")
	}
	return form, nil
}

// formatInstant renders a time to the second, for install runs.
func formatInstant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// installProps describes an install run for the viewer, with a link back
// to the list it belongs to.
func (s *Server) installProps(c echo.Context, run db.InstallRun) views.InstallProps {
	p := views.InstallProps{
		ID: run.ID, Connector: run.Connector, Shared: run.Scope == db.InstallScopeGlobal,
		Reason: run.Reason, Status: run.Status, Error: run.Error, Log: run.Log,
		Started: formatInstant(run.StartedAt), Finished: formatInstant(run.FinishedAt),
	}
	me := principalFrom(c)
	switch {
	case p.Shared:
		p.BackURL, p.BackLabel = "/admin/connectors", "Back to shared connectors"
	case run.UserID == me.User.ID:
		p.BackURL, p.BackLabel = "/connectors", "Back to your connectors"
	case me.Can(patchbay.CapInspectLogins):
		p.BackURL, p.BackLabel = "/support", "Back to support"
	}
	return p
}

// respondInstall answers a request that started an install job: with
// HTMX, the job's progress panel (which then polls) and the event that
// reloads the lists; without, a redirect to the run's page.
func (s *Server) respondInstall(c echo.Context, runID int64) error {
	if !isHTMX(c) {
		return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/installs/%d", runID))
	}
	run, err := s.Connectors.InstallRun(c.Request().Context(), principalFrom(c), runID)
	if err != nil {
		return err
	}
	c.Response().Header().Set("HX-Trigger", connectorsChanged)
	return render(c, http.StatusOK, views.InstallProgress(s.installProps(c, run)))
}

// showInstall is an install run: the progress panel for HTMX (polling
// included), a page otherwise. Runtimes.InstallRun decides who may read
// it; to anyone else it does not exist. A finished run tells the page's
// lists to reload, which is how they learn that an install ended.
func (s *Server) showInstall(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	run, err := s.Connectors.InstallRun(c.Request().Context(), principalFrom(c), id)
	if err != nil {
		return err
	}
	props := s.installProps(c, run)
	if isHTMX(c) {
		if run.Status != db.InstallRunning {
			c.Response().Header().Set("HX-Trigger", connectorsChanged)
		}
		return render(c, http.StatusOK, views.InstallProgress(props))
	}
	title := "Install of " + run.Connector
	active := "connectors"
	if props.Shared {
		active = "shared-connectors"
	}
	props.Shell = s.shell(c, title, active)
	return render(c, http.StatusOK, views.InstallPage(props))
}
