package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"patchbay"
)

// apiMe is the caller's identity as the API reports it.
type apiMe struct {
	ID           int64    `json:"id"`
	Email        string   `json:"email"`
	Name         string   `json:"name"`
	Role         string   `json:"role"`
	Capabilities []string `json:"capabilities"`
	Via          string   `json:"via"`
}

func (s *Server) apiShowMe(c echo.Context) error {
	p := principalFrom(c)
	me := apiMe{ID: p.User.ID, Email: p.User.Email, Name: p.User.Name, Role: p.User.Role, Capabilities: []string{}, Via: "session"}
	if p.ViaToken {
		me.Via = "token"
	}
	for _, c := range patchbay.AllCapabilities {
		if p.Can(c) {
			me.Capabilities = append(me.Capabilities, string(c))
		}
	}
	return c.JSON(http.StatusOK, me)
}

type apiUser struct {
	ID       int64      `json:"id"`
	Email    string     `json:"email"`
	Name     string     `json:"name"`
	Role     string     `json:"role"`
	Disabled bool       `json:"disabled"`
	LastSeen *time.Time `json:"last_seen_at"`
	Sessions int        `json:"active_sessions"`
}

func (s *Server) apiListUsers(c echo.Context) error {
	users, err := s.DB.ListUsers(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]apiUser, 0, len(users))
	for _, u := range users {
		out = append(out, apiUser{ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, Disabled: u.Disabled, LastSeen: u.LastSeen, Sessions: u.Sessions})
	}
	return c.JSON(http.StatusOK, map[string]any{"users": out})
}
