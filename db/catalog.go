package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"patchbay"
)

// Transports a connector may use.
const (
	transportStdio          = "stdio"
	transportStreamableHTTP = "streamable-http"
	transportSSE            = "sse"
)

// checkConnectorName reports an EINVALID error unless name is a valid
// connector name.
func checkConnectorName(name string) error {
	if !patchbay.ValidConnectorName(name) {
		return patchbay.Errorf(patchbay.EINVALID, "%q is not a valid connector name: use 1 to %d letters, digits, '-' and '_', "+
			"starting with a letter or digit, with no '__' and no '_' at the end.", name, patchbay.MaxConnectorName)
	}
	return nil
}

// checkKindTransport reports an EINVALID error unless kind is local or
// remote and transport suits it: stdio for local, streamable-http or sse
// for remote.
func checkKindTransport(kind, transport string) error {
	switch kind {
	case KindLocal:
		if transport != transportStdio {
			return patchbay.Errorf(patchbay.EINVALID, "A local connector runs over stdio, not %q.", transport)
		}
	case KindRemote:
		if transport != transportStreamableHTTP && transport != transportSSE {
			return patchbay.Errorf(patchbay.EINVALID, "A remote connector uses the streamable-http or sse transport, not %q.", transport)
		}
	default:
		return patchbay.Errorf(patchbay.EINVALID, "A connector's kind is local or remote, not %q.", kind)
	}
	return nil
}

// checkJSONObject reports an EINVALID error unless s is a JSON object.
func checkJSONObject(what, s string) error {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return patchbay.Errorf(patchbay.EINVALID, "%s must be a JSON object.", what)
	}
	return nil
}

// jsonColumn marshals v for a JSON column, writing empty for a nil or
// empty value so the column never holds "null".
func jsonColumn(v any, empty string) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("db: marshal: %w", err)
	}
	if s := string(b); s != "null" && s != "[]" && s != "{}" {
		return s, nil
	}
	return empty, nil
}

// fromJSONColumn unmarshals a JSON column into v, naming the column (but
// never its contents) when it does not parse.
func fromJSONColumn(s, column string, rowID int64, v any) error {
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("db: %s of row %d: %w", column, rowID, err)
	}
	return nil
}

// nullID turns the Go convention "0 means none" into SQL NULL.
func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// catalogRow is one mcp_catalog row as stored.
type catalogRow struct {
	ID                 int64     `db:"id"`
	Name               string    `db:"name"`
	Title              string    `db:"title"`
	Description        string    `db:"description"`
	Kind               string    `db:"kind"`
	Scope              string    `db:"scope"`
	Transport          string    `db:"transport"`
	Command            string    `db:"command"`
	ArgsJSON           string    `db:"args_json"`
	EnvJSON            string    `db:"env_json"`
	URL                string    `db:"url"`
	InputsJSON         string    `db:"inputs_json"`
	AuthType           string    `db:"auth_type"`
	OAuthProvider      string    `db:"oauth_provider"`
	OAuthScopesJSON    string    `db:"oauth_scopes_json"`
	Deliver            string    `db:"deliver_json"`
	VerifyJSON         string    `db:"verify_json"`
	InstallScripts     bool      `db:"install_scripts"`
	Version            int64     `db:"version"`
	VersionString      string    `db:"version_string"`
	VersionReleaseDate string    `db:"version_release_date"`
	Source             string    `db:"source"`
	SourceRef          string    `db:"source_ref"`
	ContentHash        string    `db:"content_hash"`
	ToolDigest         string    `db:"tool_digest"`
	CreatedAt          time.Time `db:"created_at"`
	UpdatedAt          time.Time `db:"updated_at"`
}

const catalogColumns = `id, name, title, description, kind, scope, transport, command, args_json, env_json, url,
	inputs_json, auth_type, oauth_provider, oauth_scopes_json, deliver_json, verify_json, install_scripts,
	version, version_string, version_release_date, source, source_ref, content_hash, tool_digest, created_at, updated_at`

func (r catalogRow) entry() (CatalogEntry, error) {
	e := CatalogEntry{
		ID: r.ID, Name: r.Name, Title: r.Title, Description: r.Description, Kind: r.Kind, Scope: r.Scope,
		Transport: r.Transport, Command: r.Command, URL: r.URL, AuthType: r.AuthType, OAuthProvider: r.OAuthProvider,
		Deliver: r.Deliver, InstallScripts: r.InstallScripts, Version: r.Version, VersionString: r.VersionString,
		VersionReleaseDate: r.VersionReleaseDate, Source: r.Source, SourceRef: r.SourceRef, ContentHash: r.ContentHash,
		ToolDigest: r.ToolDigest, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if err := fromJSONColumn(r.ArgsJSON, "mcp_catalog.args_json", r.ID, &e.Args); err != nil {
		return e, err
	}
	if err := fromJSONColumn(r.EnvJSON, "mcp_catalog.env_json", r.ID, &e.Env); err != nil {
		return e, err
	}
	if err := fromJSONColumn(r.InputsJSON, "mcp_catalog.inputs_json", r.ID, &e.Inputs); err != nil {
		return e, err
	}
	if err := fromJSONColumn(r.OAuthScopesJSON, "mcp_catalog.oauth_scopes_json", r.ID, &e.OAuthScopes); err != nil {
		return e, err
	}
	if r.VerifyJSON != "" {
		e.Verify = new(VerifySpec)
		if err := fromJSONColumn(r.VerifyJSON, "mcp_catalog.verify_json", r.ID, e.Verify); err != nil {
			return e, err
		}
	}
	// Empty collections read back as nil, as they were most likely saved.
	if len(e.Args) == 0 {
		e.Args = nil
	}
	if len(e.Env) == 0 {
		e.Env = nil
	}
	if len(e.Inputs) == 0 {
		e.Inputs = nil
	}
	if len(e.OAuthScopes) == 0 {
		e.OAuthScopes = nil
	}
	return e, nil
}

// checkCatalogEntry validates e and fills in its defaults.
func checkCatalogEntry(e *CatalogEntry) error {
	e.Name = strings.TrimSpace(e.Name)
	if err := checkConnectorName(e.Name); err != nil {
		return err
	}
	if e.Scope == "" {
		e.Scope = ScopeUser
	}
	switch e.Scope {
	case ScopeUser, ScopeGlobal, ScopeBoth:
	default:
		return patchbay.Errorf(patchbay.EINVALID, "A connector's scope is user, global or both, not %q.", e.Scope)
	}
	if err := checkKindTransport(e.Kind, e.Transport); err != nil {
		return err
	}
	switch e.Kind {
	case KindLocal:
		if strings.TrimSpace(e.Command) == "" {
			return patchbay.Errorf(patchbay.EINVALID, "The local connector %q needs a command to run.", e.Name)
		}
	case KindRemote:
		u, err := url.Parse(e.URL)
		if e.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return patchbay.Errorf(patchbay.EINVALID, "The remote connector %q needs an http or https URL.", e.Name)
		}
	}
	if e.AuthType == "" {
		e.AuthType = "none"
	}
	switch e.AuthType {
	case "none", "api_key", "oauth", "qr":
	default:
		return patchbay.Errorf(patchbay.EINVALID, "A connector's auth type is none, api_key, oauth or qr, not %q.", e.AuthType)
	}
	seen := map[string]bool{}
	for _, in := range e.Inputs {
		if strings.TrimSpace(in.Name) == "" {
			return patchbay.Errorf(patchbay.EINVALID, "Every input of %q needs a name.", e.Name)
		}
		if seen[in.Name] {
			return patchbay.Errorf(patchbay.EINVALID, "%q has two inputs named %q.", e.Name, in.Name)
		}
		seen[in.Name] = true
	}
	if e.Verify != nil && (len(e.Verify.Command) == 0 || e.Verify.Command[0] == "" || e.Verify.TimeoutSeconds < 0) {
		return patchbay.Errorf(patchbay.EINVALID, "The verify step of %q needs a command and a timeout of zero or more seconds.", e.Name)
	}
	if e.Deliver == "" {
		e.Deliver = "{}"
	}
	return checkJSONObject(fmt.Sprintf("The delivery settings of %q", e.Name), e.Deliver)
}

// SaveCatalogEntry creates or updates a catalog entry by name. An entry
// that a global connector uses cannot lose its global availability.
func (d *DB) SaveCatalogEntry(ctx context.Context, actorID int64, e CatalogEntry) (CatalogEntry, error) {
	if err := checkCatalogEntry(&e); err != nil {
		return e, err
	}
	args, err := jsonColumn(e.Args, "[]")
	if err != nil {
		return e, err
	}
	env, err := jsonColumn(e.Env, "{}")
	if err != nil {
		return e, err
	}
	inputs, err := jsonColumn(e.Inputs, "[]")
	if err != nil {
		return e, err
	}
	scopes, err := jsonColumn(e.OAuthScopes, "[]")
	if err != nil {
		return e, err
	}
	verify := ""
	if e.Verify != nil {
		b, err := json.Marshal(e.Verify)
		if err != nil {
			return e, fmt.Errorf("db: marshal: %w", err)
		}
		verify = string(b)
	}
	var out CatalogEntry
	err = d.writeTx(ctx, func(tx *sqlx.Tx) error {
		if e.Scope == ScopeUser {
			var users []string
			if err := tx.SelectContext(ctx, &users, `SELECT g.name FROM mcp_global_servers g JOIN mcp_catalog c ON c.id = g.catalog_id
				WHERE c.name = ? ORDER BY g.name LIMIT 1`, e.Name); err != nil {
				return fmt.Errorf("db: save catalog entry: %w", err)
			}
			if len(users) > 0 {
				return patchbay.Errorf(patchbay.ECONFLICT, "The global connector %q uses %q, so its scope must stay global or both.", users[0], e.Name)
			}
		}
		now := d.now()
		_, err := tx.ExecContext(ctx, `INSERT INTO mcp_catalog
			(name, title, description, kind, scope, transport, command, args_json, env_json, url, inputs_json,
			 auth_type, oauth_provider, oauth_scopes_json, deliver_json, verify_json, install_scripts,
			 version, version_string, version_release_date, source, source_ref, content_hash, tool_digest, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET title = excluded.title, description = excluded.description,
				kind = excluded.kind, scope = excluded.scope, transport = excluded.transport, command = excluded.command,
				args_json = excluded.args_json, env_json = excluded.env_json, url = excluded.url,
				inputs_json = excluded.inputs_json, auth_type = excluded.auth_type, oauth_provider = excluded.oauth_provider,
				oauth_scopes_json = excluded.oauth_scopes_json, deliver_json = excluded.deliver_json,
				verify_json = excluded.verify_json, install_scripts = excluded.install_scripts, version = excluded.version,
				version_string = excluded.version_string, version_release_date = excluded.version_release_date,
				source = excluded.source, source_ref = excluded.source_ref, content_hash = excluded.content_hash,
				tool_digest = excluded.tool_digest, updated_at = excluded.updated_at`,
			e.Name, e.Title, e.Description, e.Kind, e.Scope, e.Transport, e.Command, args, env, e.URL, inputs,
			e.AuthType, e.OAuthProvider, scopes, e.Deliver, verify, e.InstallScripts,
			e.Version, e.VersionString, e.VersionReleaseDate, e.Source, e.SourceRef, e.ContentHash, e.ToolDigest, now, now)
		if err != nil {
			return fmt.Errorf("db: save catalog entry: %w", err)
		}
		var row catalogRow
		if err := tx.GetContext(ctx, &row, `SELECT `+catalogColumns+` FROM mcp_catalog WHERE name = ?`, e.Name); err != nil {
			return fmt.Errorf("db: save catalog entry: %w", err)
		}
		if out, err = row.entry(); err != nil {
			return err
		}
		return audit(ctx, tx, now, actorID, "catalog.save", "catalog:"+e.Name,
			fmt.Sprintf("kind=%s scope=%s version=%d", e.Kind, e.Scope, e.Version))
	})
	return out, err
}

// CatalogEntryByName returns one catalog entry.
func (d *DB) CatalogEntryByName(ctx context.Context, name string) (CatalogEntry, error) {
	var row catalogRow
	err := d.read.GetContext(ctx, &row, `SELECT `+catalogColumns+` FROM mcp_catalog WHERE name = ?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return CatalogEntry{}, patchbay.Errorf(patchbay.ENOTFOUND, "No connector named %q in the catalog.", name)
	} else if err != nil {
		return CatalogEntry{}, fmt.Errorf("db: catalog entry: %w", err)
	}
	return row.entry()
}

// CatalogEntryByID returns one catalog entry.
func (d *DB) CatalogEntryByID(ctx context.Context, id int64) (CatalogEntry, error) {
	var row catalogRow
	err := d.read.GetContext(ctx, &row, `SELECT `+catalogColumns+` FROM mcp_catalog WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return CatalogEntry{}, patchbay.Errorf(patchbay.ENOTFOUND, "No such connector in the catalog.")
	} else if err != nil {
		return CatalogEntry{}, fmt.Errorf("db: catalog entry: %w", err)
	}
	return row.entry()
}

// ListCatalog returns every catalog entry, sorted by name.
func (d *DB) ListCatalog(ctx context.Context) ([]CatalogEntry, error) {
	var rows []catalogRow
	if err := d.read.SelectContext(ctx, &rows, `SELECT `+catalogColumns+` FROM mcp_catalog ORDER BY name`); err != nil {
		return nil, fmt.Errorf("db: list catalog: %w", err)
	}
	out := make([]CatalogEntry, 0, len(rows))
	for _, r := range rows {
		e, err := r.entry()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// DeleteCatalogEntry removes a catalog entry. It refuses while a global
// connector uses it; user activations keep running from their snapshot.
func (d *DB) DeleteCatalogEntry(ctx context.Context, actorID, id int64) error {
	return d.writeTx(ctx, func(tx *sqlx.Tx) error {
		var name string
		err := tx.GetContext(ctx, &name, `SELECT name FROM mcp_catalog WHERE id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return patchbay.Errorf(patchbay.ENOTFOUND, "No such connector in the catalog.")
		} else if err != nil {
			return fmt.Errorf("db: delete catalog entry: %w", err)
		}
		var users []string
		if err := tx.SelectContext(ctx, &users, `SELECT name FROM mcp_global_servers WHERE catalog_id = ? ORDER BY name LIMIT 1`, id); err != nil {
			return fmt.Errorf("db: delete catalog entry: %w", err)
		}
		if len(users) > 0 {
			return patchbay.Errorf(patchbay.ECONFLICT, "The global connector %q still uses %q; delete it before removing %q from the catalog.", users[0], name, name)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_catalog WHERE id = ?`, id); err != nil {
			return fmt.Errorf("db: delete catalog entry: %w", err)
		}
		return audit(ctx, tx, d.now(), actorID, "catalog.delete", "catalog:"+name, "")
	})
}
