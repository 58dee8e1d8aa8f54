// Package static serves Patchbay's vendored scripts and stylesheet from
// the binary.
package static

import (
	"embed"
	"net/http"
)

// FS holds the files. htmx is vendored at a pinned version; the version is
// in its file name, so a new version is a new URL and caches can keep the
// old one forever.
//
//go:embed *.js *.css
var FS embed.FS

// HTMX is the path of the vendored htmx script.
const HTMX = "/static/htmx-2.0.11.min.js"

// Handler serves FS under /static/ with long-lived cache headers for the
// versioned script and a short one for the stylesheet.
func Handler() http.Handler {
	files := http.StripPrefix("/static/", http.FileServerFS(FS))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == HTMX {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "public, max-age=3600")
		}
		files.ServeHTTP(w, r)
	})
}
