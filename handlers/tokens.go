package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"patchbay/views"
)

func (s *Server) tokensProps(c echo.Context, created *views.NewToken) (views.TokensProps, error) {
	me := principalFrom(c)
	toks, err := s.DB.ListAPITokens(c.Request().Context(), me.User.ID)
	if err != nil {
		return views.TokensProps{}, err
	}
	props := views.TokensProps{Shell: s.shell(c, "API tokens", "tokens"), Created: created, BaseURL: s.BaseURL.String()}
	for _, t := range toks {
		props.Tokens = append(props.Tokens, views.TokenRow{
			ID: t.ID, Name: t.Name, Prefix: t.Prefix, Created: formatTime(&t.CreatedAt), LastUsed: formatTime(t.LastUsedAt),
		})
	}
	return props, nil
}

func (s *Server) showTokens(c echo.Context) error {
	props, err := s.tokensProps(c, nil)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.TokensPage(props))
}

// createToken mints a token and shows it exactly once. The response is
// never cached and never kept in htmx history.
func (s *Server) createToken(c echo.Context) error {
	secret, tok, err := s.DB.CreateAPIToken(c.Request().Context(), principalFrom(c).User.ID, c.FormValue("name"))
	if err != nil {
		return err
	}
	noStore(c)
	props, err := s.tokensProps(c, &views.NewToken{Name: tok.Name, Secret: secret})
	if err != nil {
		return err
	}
	props.Shell.NoHistory = true
	if isHTMX(c) {
		return render(c, http.StatusOK, views.TokensPanel(props))
	}
	return render(c, http.StatusOK, views.TokensPage(props))
}

func (s *Server) revokeToken(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.DB.RevokeAPIToken(c.Request().Context(), principalFrom(c).User.ID, id); err != nil {
		return err
	}
	if !isHTMX(c) {
		return c.Redirect(http.StatusSeeOther, "/tokens")
	}
	props, err := s.tokensProps(c, nil)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.TokensPanel(props))
}
