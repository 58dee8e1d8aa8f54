package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/views"
)

// testSharedConnector is the Test connection button of the add and
// settings forms of shared connectors: it connects the catalog entry
// with the values typed so far, lists its tools and keeps nothing. In
// the settings form (which sends the connector's id) a blank secret
// field stands for the stored secret, as when saving.
func (s *Server) testSharedConnector(c echo.Context) error {
	form, err := formParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	me := principalFrom(c)
	if idText := strings.TrimSpace(form.Get("id")); idText != "" {
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil || id <= 0 {
			return patchbay.Errorf(patchbay.EINVALID, "That is not a shared connector.")
		}
		g, err := s.DB.GlobalServerByID(ctx, id)
		if err != nil {
			return err
		}
		e, err := s.DB.CatalogEntryByID(ctx, g.CatalogID)
		if err != nil {
			return err
		}
		inputs, secrets := readInputs(form, e)
		tools, err := s.Connectors.TestGlobalConnection(ctx, me, g.ID, inputs, secrets)
		return renderTestResult(c, tools, err)
	}
	f, err := s.readCatalogForm(c)
	if err != nil {
		return err
	}
	tools, err := s.Connectors.TestConnection(ctx, me, f.entry.Name, f.inputs, f.secrets)
	return renderTestResult(c, tools, err)
}

// testConnector is the Test connection button of a marketplace entry's
// activate form. Runtimes.TestConnection checks the capability the
// entry's kind needs, as activating does.
func (s *Server) testConnector(c echo.Context) error {
	f, err := s.readCatalogForm(c)
	if err != nil {
		return err
	}
	tools, err := s.Connectors.TestConnection(c.Request().Context(), principalFrom(c), f.entry.Name, f.inputs, f.secrets)
	return renderTestResult(c, tools, err)
}

// renderTestResult answers a test: the tools, or why the connector did
// not connect (an EINVALID error, whose message Runtimes wrote for
// people with the typed secrets redacted), in the result fragment. Any
// other error (not allowed, no such entry) is answered like any error.
func renderTestResult(c echo.Context, tools []string, err error) error {
	if err != nil && patchbay.ErrorCode(err) != patchbay.EINVALID {
		return err
	}
	props := views.TestConnectionProps{Tools: tools}
	if err != nil {
		props.Error = patchbay.ErrorMessage(err)
	}
	return render(c, http.StatusOK, views.TestConnectionResult(props))
}
