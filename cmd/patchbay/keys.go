package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"patchbay/db"
	"patchbay/db/seal"
)

// loadKeyring finds the sealing key: PATCHBAY_SECRET_KEY (base64; a comma
// list puts older keys after the primary) or the key file. A key file is
// created on first run only, and the database remembers which key sealed
// it (updated by rotate-key): if the database already holds sealed data,
// a missing key stops start-up instead of silently minting a new one.
func loadKeyring(ctx context.Context, cfg *Config, getenv func(string) string, d *db.DB) (*seal.Keyring, error) {
	sealedWith, err := d.Meta(ctx, db.MetaSealKeyID)
	if err != nil {
		return nil, err
	}
	var ring *seal.Keyring
	if env := getenv("PATCHBAY_SECRET_KEY"); env != "" {
		var keys []seal.Key
		for _, s := range splitList(env) {
			k, err := seal.KeyFromBase64(s)
			if err != nil {
				return nil, fmt.Errorf("PATCHBAY_SECRET_KEY: %w", err)
			}
			keys = append(keys, k)
		}
		ring = seal.NewKeyring(keys[0], keys[1:]...)
	} else {
		ring, err = seal.ReadKeyFile(cfg.keyFile())
		switch {
		case errors.Is(err, fs.ErrNotExist) && sealedWith != "" && holdsSecrets(ctx, d):
			return nil, fmt.Errorf("secret key file %s is missing, but the database holds secrets sealed with key %s: restore the key file or set PATCHBAY_SECRET_KEY", cfg.keyFile(), sealedWith)
		case errors.Is(err, fs.ErrNotExist):
			// Nothing is sealed yet (or ever was): a new key loses nothing.
			sealedWith = ""
			k, err := seal.GenerateKey(nil)
			if err != nil {
				return nil, err
			}
			if err := seal.WriteKeyFile(cfg.keyFile(), []seal.Key{k}); err != nil {
				return nil, err
			}
			ring = seal.NewKeyring(k)
		case err != nil:
			return nil, err
		}
	}
	if sealedWith != "" && !ringHas(ring, sealedWith) {
		if !holdsSecrets(ctx, d) {
			sealedWith = "" // nothing to lose: adopt the configured key
		} else {
			return nil, fmt.Errorf("the secret key does not match: the database was sealed with key %s, which is not among the configured keys", sealedWith)
		}
	}
	if sealedWith == "" {
		if err := d.SetMeta(ctx, db.MetaSealKeyID, ring.Primary().ID); err != nil {
			return nil, err
		}
	}
	return ring, nil
}

func ringHas(r *seal.Keyring, id string) bool {
	for _, k := range r.Keys() {
		if k.ID == id {
			return true
		}
	}
	return false
}

// holdsSecrets reports whether any sealed column has a value. When it
// cannot tell, it says yes: refusing to start beats orphaning secrets.
func holdsSecrets(ctx context.Context, d *db.DB) bool {
	ids, err := d.SealedKeyIDs(ctx)
	return err != nil || len(ids) > 0
}
