// Package migrations embeds Patchbay's numbered SQL migrations. They are
// applied in order at start-up and by `patchbay migrate`.
package migrations

import "embed"

// FS holds every migration file, named NNNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
