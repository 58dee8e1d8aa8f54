package install

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Marker is what an install directory records about how it was made.
type Marker struct {
	// Hash is Hash of the source that was copied in.
	Hash string `json:"hash"`
	// InstalledAt is when the install finished.
	InstalledAt time.Time `json:"installed_at"`
	// Tools maps each installer that ran ("npm", "python") to the
	// version it reported.
	Tools map[string]string `json:"tools,omitempty"`
}

// ReadMarker returns the marker of the install in dir. A missing or
// unreadable marker is an error; Ensure treats either as "not installed".
func ReadMarker(dir string) (Marker, error) {
	var m Marker
	b, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if err != nil {
		return m, fmt.Errorf("install: read marker: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("install: read marker: %w", err)
	}
	return m, nil
}

func writeMarker(dir string, m Marker) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("install: write marker: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("install: write marker: %w", err)
	}
	return nil
}
