// Command patchbay runs the Patchbay MCP connector portal and its
// maintenance tasks. `patchbay help` lists the subcommands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "patchbay:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

const usage = `Usage: patchbay [command] [flags]

Commands:
  serve        run the portal (default)
  migrate      apply database migrations and exit
  version      print the version
  user add     --email E --role R: add a person (or change their role) before they sign in
  token create --email E --name N: mint a personal access token (printed once)
  catalog add  --dir D: add or update a catalog connector from D/connector.json
  rotate-key   re-seal every stored secret under a new key
  backup       --to FILE: write a consistent, integrity-checked copy of the database

Run 'patchbay <command> -h' for the flags of a command. Every flag has a
PATCHBAY_* environment twin (--oidc-issuer is PATCHBAY_OIDC_ISSUER).
`

// run is the whole program, so tests can boot it in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	// Two-word commands.
	if (cmd == "user" || cmd == "token" || cmd == "catalog") && len(args) > 0 {
		cmd, args = cmd+" "+args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, getenv, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, args, getenv, stdout)
	case "version":
		fmt.Fprintln(stdout, "patchbay", version)
		return nil
	case "user add":
		return runUserAdd(ctx, args, getenv, stdout)
	case "token create":
		return runTokenCreate(ctx, args, getenv, stdout)
	case "catalog add":
		return runCatalogAdd(ctx, args, getenv, stdout)
	case "rotate-key":
		return runRotateKey(ctx, args, getenv, stdout)
	case "backup":
		return runBackup(ctx, args, getenv, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q\n\n%s", cmd, usage)}
}
