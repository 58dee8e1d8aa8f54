package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"patchbay/db"
	"patchbay/db/seal"
)

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	fs := newFlagSet("migrate", &cfg)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	d, err := openStore(ctx, &cfg, getenv)
	if err != nil {
		return err
	}
	defer d.Close()
	v, err := d.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "database %s is at schema version %d\n", cfg.dbPath(), v)
	return nil
}

func runUserAdd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	fs := newFlagSet("user add", &cfg)
	email := fs.String("email", "", "the person's email (required)")
	role := fs.String("role", "user", "role: admin, user, support or a custom role")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if *email == "" {
		return usageError{errors.New("user add: --email is required")}
	}
	d, err := openStore(ctx, &cfg, getenv)
	if err != nil {
		return err
	}
	defer d.Close()
	u, err := d.AddUser(ctx, *email, *role)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "user %s (id %d) has role %s\n", u.Email, u.ID, u.Role)
	return nil
}

func runTokenCreate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	fs := newFlagSet("token create", &cfg)
	email := fs.String("email", "", "whose token (required)")
	name := fs.String("name", "", "what the token is for (required)")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if *email == "" || *name == "" {
		return usageError{errors.New("token create: --email and --name are required")}
	}
	d, err := openStore(ctx, &cfg, getenv)
	if err != nil {
		return err
	}
	defer d.Close()
	u, err := d.UserByEmail(ctx, *email)
	if err != nil {
		return err
	}
	secret, _, err := d.CreateAPIToken(ctx, u.ID, *name)
	if err != nil {
		return err
	}
	// The only time the secret exists outside the caller's hands.
	fmt.Fprintln(stdout, secret)
	return nil
}

func runBackup(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	fs := newFlagSet("backup", &cfg)
	to := fs.String("to", "", "file to write (must not exist)")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if *to == "" {
		return usageError{errors.New("backup: --to is required")}
	}
	d, err := openStore(ctx, &cfg, getenv)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Backup(ctx, *to); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup written to %s (integrity check ok); the secret key is not in it, keep %s safe too\n", *to, cfg.keyFile())
	return nil
}

// runRotateKey re-seals every secret under a new primary key. With a key
// file, it generates the key, keeps the old one beside it until every
// secret has moved, then drops it. With PATCHBAY_SECRET_KEY ("NEW,OLD"),
// it re-seals under NEW; remove OLD from the variable afterwards.
func runRotateKey(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	fs := newFlagSet("rotate-key", &cfg)
	keepOld := fs.Bool("keep-old", false, "keep the old key in the key file after re-sealing")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	d, err := openStore(ctx, &cfg, getenv)
	if err != nil {
		return err
	}
	defer d.Close()
	ring := d.Keys()
	fromEnv := getenv("PATCHBAY_SECRET_KEY") != ""
	if !fromEnv {
		k, err := seal.GenerateKey(nil)
		if err != nil {
			return err
		}
		keys := append([]seal.Key{k}, ring.Keys()...)
		// The new key is on disk before anything is sealed with it.
		if err := seal.WriteKeyFile(cfg.keyFile(), keys); err != nil {
			return err
		}
		ring = seal.NewKeyring(keys[0], keys[1:]...)
		d.SetKeyring(ring)
	}
	n, err := d.ResealAll(ctx)
	if err != nil {
		return err
	}
	if err := d.SetMeta(ctx, db.MetaSealKeyID, ring.Primary().ID); err != nil {
		return err
	}
	if !fromEnv && !*keepOld {
		if err := seal.WriteKeyFile(cfg.keyFile(), []seal.Key{ring.Primary()}); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "re-sealed %d secrets under key %s\n", n, ring.Primary().ID)
	return nil
}
