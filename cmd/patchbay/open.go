package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"patchbay/db"
)

// newFlagSet returns a flag set with the shared settings bound to cfg.
func newFlagSet(name string, cfg *Config) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	cfg.bindFlags(fs)
	return fs
}

// openStore opens the database (migrating it) and loads the sealing key.
func openStore(ctx context.Context, cfg *Config, getenv func(string) string) (*db.DB, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	d, err := db.Open(ctx, cfg.dbPath(), nil)
	if err != nil {
		return nil, err
	}
	ring, err := loadKeyring(ctx, cfg, getenv, d)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.SetKeyring(ring)
	return d, nil
}
