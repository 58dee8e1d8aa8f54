package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"patchbay/db"
)

// ManifestFile is the file `patchbay catalog add DIR` reads from DIR.
const ManifestFile = "connector.json"

// manifest is a connector's description as `catalog add` reads it. The
// marketplace feed lands entries through the same db.SaveCatalogEntry.
type manifest struct {
	Name           string            `json:"name"`
	Title          string            `json:"title"`
	Description    string            `json:"description"`
	Kind           string            `json:"kind"`
	Scope          string            `json:"scope"`
	Transport      string            `json:"transport"`
	Command        string            `json:"command"`
	Args           []string          `json:"args"`
	Env            map[string]string `json:"env"`
	URL            string            `json:"url"`
	Inputs         []db.CatalogInput `json:"inputs"`
	AuthType       string            `json:"auth_type"`
	Verify         *db.VerifySpec    `json:"verify"`
	InstallScripts bool              `json:"install_scripts"`
	Version        int64             `json:"version"`
	VersionString  string            `json:"version_string"`
}

// runCatalogAdd adds or updates a catalog entry from --dir's connector.json.
// A local connector's source files are DIR itself: they are installed
// from there (never run in place) whenever an admin enables, refreshes
// or a user activates it.
func runCatalogAdd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	fs := newFlagSet("catalog add", &cfg)
	from := fs.String("dir", "", "the connector's directory, holding "+ManifestFile+" (required)")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if *from == "" {
		return usageError{errors.New("catalog add: --dir is required")}
	}
	dir, err := filepath.Abs(*from)
	if err != nil {
		return err
	}
	entry, err := readManifest(dir)
	if err != nil {
		return err
	}
	d, err := openStore(ctx, &cfg, getenv)
	if err != nil {
		return err
	}
	defer d.Close()
	saved, err := d.SaveCatalogEntry(ctx, 0, entry)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "catalog entry %s (%s/%s, scope %s) saved\n", saved.Name, saved.Kind, saved.Transport, saved.Scope)
	return nil
}

func readManifest(dir string) (db.CatalogEntry, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return db.CatalogEntry{}, fmt.Errorf("catalog add: %w", err)
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return db.CatalogEntry{}, fmt.Errorf("catalog add: %s: %w", ManifestFile, err)
	}
	e := db.CatalogEntry{
		Name: m.Name, Title: m.Title, Description: m.Description, Kind: m.Kind, Scope: m.Scope,
		Transport: m.Transport, Command: m.Command, Args: m.Args, Env: m.Env, URL: m.URL,
		Inputs: m.Inputs, AuthType: m.AuthType, Verify: m.Verify, InstallScripts: m.InstallScripts,
		Version: m.Version, VersionString: m.VersionString, SourceRef: dir,
	}
	if e.Kind == db.KindLocal {
		e.Source = dir
	}
	return e, nil
}
