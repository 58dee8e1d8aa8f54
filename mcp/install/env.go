package install

import (
	"os"
	"path/filepath"
	"sort"
)

// PyDepsDir is the directory, inside an install directory, that pip
// installs a connector's Python dependencies into.
const PyDepsDir = ".pydeps"

// PythonPath returns a copy of declaredEnv with PYTHONPATH set to
// destDir's .pydeps, but only when the declared env does not set
// PYTHONPATH itself (an explicit one is the author's) and .pydeps
// exists. Both the server launch and Verify must use it: a verify that
// lacks it rejects a connector for a dependency installed one directory
// away.
func PythonPath(destDir string, declaredEnv map[string]string) map[string]string {
	env := make(map[string]string, len(declaredEnv)+1)
	for k, v := range declaredEnv {
		env[k] = v
	}
	if _, ok := env["PYTHONPATH"]; ok {
		return env
	}
	deps := filepath.Join(destDir, PyDepsDir)
	if fi, err := os.Stat(deps); err == nil && fi.IsDir() {
		if abs, err := filepath.Abs(deps); err == nil {
			deps = abs
		}
		env["PYTHONPATH"] = deps
	}
	return env
}

// envList turns env into a sorted KEY=VALUE list, for exec.Cmd.Env.
func envList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list
}
