package handlers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"

	"patchbay"
	"patchbay/db"
	"patchbay/handlers/devidp"
)

// DevSignIn builds the in-process development OpenID Provider for base
// and points oidcCfg at it (issuer, client id, a random client secret).
// The admin people are returned as extra admin emails; the support people
// are pre-added with the support role unless they already exist, so an
// admin's later role change sticks across restarts.
func DevSignIn(ctx context.Context, d *db.DB, base *url.URL, oidcCfg *OIDCConfig, people []devidp.Person) (http.Handler, []string, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, nil, err
	}
	oidcCfg.Issuer = base.JoinPath(devIDPMount).String()
	oidcCfg.ClientID = "patchbay-dev"
	oidcCfg.ClientSecret = base64.RawURLEncoding.EncodeToString(secret)
	idp, err := devidp.New(devidp.Config{
		Issuer: oidcCfg.Issuer, ClientID: oidcCfg.ClientID, ClientSecret: oidcCfg.ClientSecret,
		RedirectURIs: []string{oidcCfg.RedirectURL}, People: people, StylesheetURL: "/static/style.css",
	})
	if err != nil {
		return nil, nil, err
	}
	var admins []string
	for _, p := range people {
		switch p.Role {
		case patchbay.RoleAdmin:
			admins = append(admins, p.Email)
		case patchbay.RoleSupport:
			if _, err := d.UserByEmail(ctx, p.Email); patchbay.ErrorCode(err) == patchbay.ENOTFOUND {
				if _, err := d.AddUser(ctx, p.Email, p.Role); err != nil {
					return nil, nil, err
				}
			} else if err != nil {
				return nil, nil, err
			}
		}
	}
	return idp, admins, nil
}
