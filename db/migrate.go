package db

import (
	"context"
	"fmt"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"patchbay/migrations"
)

func (d *DB) migrator() (*goose.Provider, error) {
	p, err := goose.NewProvider(database.DialectSQLite3, d.write.DB, migrations.FS)
	if err != nil {
		return nil, fmt.Errorf("db: migrations: %w", err)
	}
	return p, nil
}

// Migrate applies every pending migration. It is idempotent.
func (d *DB) Migrate(ctx context.Context) error {
	p, err := d.migrator()
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("db: migrate: %w", err)
	}
	return nil
}

// SchemaVersion returns the newest applied migration's version.
func (d *DB) SchemaVersion(ctx context.Context) (int64, error) {
	p, err := d.migrator()
	if err != nil {
		return 0, err
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("db: schema version: %w", err)
	}
	return v, nil
}

func (d *DB) pendingMigrations(ctx context.Context) (bool, error) {
	p, err := d.migrator()
	if err != nil {
		return false, err
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("db: check migrations: %w", err)
	}
	return pending, nil
}
