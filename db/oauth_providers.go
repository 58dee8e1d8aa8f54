package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"patchbay"
)

var providerSecretColumn = SealedColumns[0]

// OAuthProvider is a connector sign-in provider as admins register it.
// ClientSecret is write-only: it is never read back into a page.
type OAuthProvider struct {
	ID            int64     `db:"id"`
	Name          string    `db:"name"`
	DisplayName   string    `db:"display_name"`
	AuthURL       string    `db:"auth_url"`
	TokenURL      string    `db:"token_url"`
	RevocationURL string    `db:"revocation_url"`
	Issuer        string    `db:"issuer"`
	ClientID      string    `db:"client_id"`
	RedirectURI   string    `db:"redirect_uri"`
	ExtraParams   string    `db:"extra_params_json"`
	CreatedAt     time.Time `db:"created_at"`
	UpdatedAt     time.Time `db:"updated_at"`
	// HasSecret reports whether a client secret is stored.
	HasSecret bool `db:"has_secret"`
}

const providerColumns = `id, name, display_name, auth_url, token_url, revocation_url, issuer, client_id,
	redirect_uri, extra_params_json, created_at, updated_at, client_secret_sealed <> '' AS has_secret`

// SaveOAuthProvider creates or updates a provider by name. An empty
// clientSecret keeps the stored one, so editing a provider never requires
// retyping (or re-showing) its secret.
func (d *DB) SaveOAuthProvider(ctx context.Context, actorID int64, p OAuthProvider, clientSecret string) (OAuthProvider, error) {
	p.Name = strings.TrimSpace(p.Name)
	if p.Name == "" || p.AuthURL == "" || p.TokenURL == "" || p.ClientID == "" {
		return p, patchbay.Errorf(patchbay.EINVALID, "A provider needs a name, authorization URL, token URL and client id.")
	}
	if p.ExtraParams == "" {
		p.ExtraParams = "{}"
	}
	var out OAuthProvider
	err := d.writeTx(ctx, func(tx *sqlx.Tx) error {
		now := d.now()
		_, err := tx.ExecContext(ctx, `INSERT INTO oauth_providers
			(name, display_name, auth_url, token_url, revocation_url, issuer, client_id, redirect_uri, extra_params_json, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET display_name = excluded.display_name, auth_url = excluded.auth_url,
				token_url = excluded.token_url, revocation_url = excluded.revocation_url, issuer = excluded.issuer,
				client_id = excluded.client_id, redirect_uri = excluded.redirect_uri,
				extra_params_json = excluded.extra_params_json, updated_at = excluded.updated_at`,
			p.Name, p.DisplayName, p.AuthURL, p.TokenURL, p.RevocationURL, p.Issuer, p.ClientID, p.RedirectURI, p.ExtraParams, now, now)
		if err != nil {
			return fmt.Errorf("db: save provider: %w", err)
		}
		var id int64
		if err := tx.GetContext(ctx, &id, `SELECT id FROM oauth_providers WHERE name = ?`, p.Name); err != nil {
			return fmt.Errorf("db: save provider: %w", err)
		}
		if clientSecret != "" {
			sealed, err := d.sealValue(providerSecretColumn, id, clientSecret)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE oauth_providers SET client_secret_sealed = ? WHERE id = ?`, sealed, id); err != nil {
				return fmt.Errorf("db: save provider: %w", err)
			}
		}
		if err := tx.GetContext(ctx, &out, `SELECT `+providerColumns+` FROM oauth_providers WHERE id = ?`, id); err != nil {
			return fmt.Errorf("db: save provider: %w", err)
		}
		return audit(ctx, tx, now, actorID, "provider.save", "provider:"+p.Name, "")
	})
	return out, err
}

// OAuthProviderByName returns a provider without its secret.
func (d *DB) OAuthProviderByName(ctx context.Context, name string) (OAuthProvider, error) {
	var p OAuthProvider
	err := d.read.GetContext(ctx, &p, `SELECT `+providerColumns+` FROM oauth_providers WHERE name = ?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return p, patchbay.Errorf(patchbay.ENOTFOUND, "No sign-in provider named %q.", name)
	} else if err != nil {
		return p, fmt.Errorf("db: provider: %w", err)
	}
	return p, nil
}

// OAuthProviderSecret opens a provider's client secret, for the one place
// that sends it to the provider's token endpoint.
func (d *DB) OAuthProviderSecret(ctx context.Context, name string) (string, error) {
	var row struct {
		ID     int64  `db:"id"`
		Sealed string `db:"client_secret_sealed"`
	}
	err := d.read.GetContext(ctx, &row, `SELECT id, client_secret_sealed FROM oauth_providers WHERE name = ?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", patchbay.Errorf(patchbay.ENOTFOUND, "No sign-in provider named %q.", name)
	} else if err != nil {
		return "", fmt.Errorf("db: provider secret: %w", err)
	}
	return d.openValue(providerSecretColumn, row.ID, row.Sealed)
}
