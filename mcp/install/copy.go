package install

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// copySource copies the source entries of src (see walkSource) into the
// existing, empty directory dst, keeping permission bits and symlinks.
func copySource(src, dst string) error {
	return walkSource(src, func(e sourceEntry) error {
		to := filepath.Join(dst, filepath.FromSlash(e.rel))
		switch mode := e.info.Mode(); {
		case mode.IsDir():
			// Owner write is kept so the install can add files and the
			// tree can be removed again.
			if err := os.Mkdir(to, mode.Perm()|0o700); err != nil {
				return fmt.Errorf("install: copy: %w", err)
			}
		case mode&fs.ModeSymlink != 0:
			if err := os.Symlink(e.target, to); err != nil {
				return fmt.Errorf("install: copy: %w", err)
			}
		default:
			if err := copyFile(e.path, to, mode.Perm()); err != nil {
				return fmt.Errorf("install: copy %s: %w", e.rel, err)
			}
		}
		return nil
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// OpenFile's mode is filtered by the umask; set the exact bits so the
	// copy hashes like the source.
	return os.Chmod(to, perm)
}
