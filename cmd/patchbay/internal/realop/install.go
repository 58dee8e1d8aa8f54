package realop

import (
	"fmt"
	"path/filepath"

	"patchbay/mcp/install/installtest"
)

// ensureInstalled runs `npm ci` in the provider's directory when its
// node_modules is missing, so `go test ./...` works on a fresh clone.
func ensureInstalled(dir string) error {
	marker := filepath.Join(dir, "node_modules", "oidc-provider", "package.json")
	if err := installtest.NPMCI(dir, marker); err != nil {
		return fmt.Errorf("realop: %w", err)
	}
	return nil
}
