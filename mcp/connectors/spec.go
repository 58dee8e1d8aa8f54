package connectors

import (
	"regexp"
	"sort"
	"strings"

	"patchbay"
	"patchbay/db"
	"patchbay/mcp"
	"patchbay/mcp/install"
)

// envName is what a local connector's input name must look like, since it
// becomes an environment variable.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// GlobalSpec builds the Spec of a global connector from its row, its
// catalog entry, its opened secrets and its install directory.
func GlobalSpec(e db.CatalogEntry, g db.GlobalServer, secrets map[string]string, dir string) (mcp.Spec, error) {
	return buildSpec(g.Name, e, g.Config, secrets, dir)
}

// UserSpec builds the Spec of a user's activation from its row, its
// catalog entry, its opened credential and its install directory.
func UserSpec(e db.CatalogEntry, u db.UserServer, credential map[string]string, dir string) (mcp.Spec, error) {
	return buildSpec(u.Name, e, u.Config, credential, dir)
}

// buildSpec is the one place a Spec is assembled: the catalog entry says
// what runs and which inputs it takes, cfg and secrets supply them. For a
// local connector, non-secret inputs become declared environment
// variables and secret ones Spec.Secrets (so they are redacted from its
// stderr); .pydeps goes on PYTHONPATH unless the manifest set one. For a
// remote connector, inputs with a Header become request headers.
func buildSpec(name string, e db.CatalogEntry, cfg db.ServerConfig, secrets map[string]string, dir string) (mcp.Spec, error) {
	values, err := resolveInputs(e, cfg, secrets)
	if err != nil {
		return mcp.Spec{}, err
	}
	spec := mcp.Spec{Name: name, Transport: mcp.Transport(e.Transport)}
	switch e.Kind {
	case db.KindLocal:
		env := make(map[string]string, len(e.Env)+len(values))
		for k, v := range e.Env {
			env[k] = v
		}
		spec.Secrets = map[string]string{}
		for _, in := range e.Inputs {
			v, ok := values[in.Name]
			if !ok {
				continue
			}
			if in.Secret {
				spec.Secrets[in.Name] = v
			} else {
				env[in.Name] = v
			}
		}
		spec.Command = e.Command
		spec.Args = append([]string(nil), e.Args...)
		spec.Env = install.PythonPath(dir, env)
		spec.Dir = dir
	case db.KindRemote:
		spec.URL = e.URL
		spec.Headers = map[string]string{}
		for _, in := range e.Inputs {
			if v, ok := values[in.Name]; ok && in.Header != "" {
				spec.Headers[in.Header] = formatInput(in.Format, v)
			}
		}
	default:
		return mcp.Spec{}, patchbay.Errorf(patchbay.EINVALID, "Connector %s has an unknown kind %q.", e.Name, e.Kind)
	}
	if err := spec.Validate(); err != nil {
		return mcp.Spec{}, err
	}
	return spec, nil
}

// resolveInputs returns the value of every input that has one (supplied
// or default) and an EINVALID error naming every required input that has
// none, so a user learns all that is missing at once.
func resolveInputs(e db.CatalogEntry, cfg db.ServerConfig, secrets map[string]string) (map[string]string, error) {
	values := map[string]string{}
	var missing []string
	for _, in := range e.Inputs {
		if e.Kind == db.KindLocal && !envName.MatchString(in.Name) {
			return nil, patchbay.Errorf(patchbay.EINVALID, "Connector %s declares input %q, which is not a valid environment variable name.", e.Name, in.Name)
		}
		var v string
		if in.Secret {
			v = secrets[in.Name]
		} else {
			v = cfg.Inputs[in.Name]
		}
		if v == "" {
			v = in.Default
		}
		if v == "" {
			if in.Required {
				missing = append(missing, inputLabel(in))
			}
			continue
		}
		values[in.Name] = v
	}
	if len(missing) > 0 {
		return nil, patchbay.Errorf(patchbay.EINVALID, "%s needs: %s.", e.Name, strings.Join(missing, ", "))
	}
	return values, nil
}

// CheckInputs reports what resolveInputs would refuse, without building
// anything; activation calls it before touching disk or database.
func CheckInputs(e db.CatalogEntry, cfg db.ServerConfig, secrets map[string]string) error {
	_, err := resolveInputs(e, cfg, secrets)
	return err
}

func inputLabel(in db.CatalogInput) string {
	if in.Title != "" {
		return in.Title
	}
	return in.Name
}

// formatInput renders a header value: format with "{}" standing for v,
// or v itself when there is no format.
func formatInput(format, v string) string {
	if format == "" {
		return v
	}
	return strings.ReplaceAll(format, "{}", v)
}

// processEnv is the exact environment a local connector runs with, as a
// map, for running its verify command the same way.
func processEnv(spec mcp.Spec) map[string]string {
	all := make(map[string]string, len(spec.Env)+len(spec.Secrets))
	for k, v := range spec.Env {
		all[k] = v
	}
	for k, v := range spec.Secrets {
		all[k] = v
	}
	env := map[string]string{}
	for _, kv := range mcp.BuildStdioEnv(all, spec.Dir) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// secretValues lists a spec's secret values, longest first, for
// redacting install and verify output.
func secretValues(secrets map[string]string) []string {
	var out []string
	for _, v := range secrets {
		if len(v) >= 4 {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}
