package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
)

func init() {
	register(command{name: "keys", summary: "create, list and revoke API keys (directly in the database)", run: runKeys})
}

// keys works on the database rather than through the API: the first admin
// key has to come from somewhere, and whoever can open the database can
// already do anything.
func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := func() {
		fmt.Fprintln(stderr, "usage: crewcast keys create --scope admin|send|read [--name NAME] [--db PATH|URL]")
		fmt.Fprintln(stderr, "       crewcast keys list [--db PATH|URL]")
		fmt.Fprintln(stderr, "       crewcast keys revoke ID [--db PATH|URL]")
	}
	if len(args) == 0 {
		usage()
		return errUsage
	}
	switch args[0] {
	case "create":
		return keysCreate(ctx, args[1:], stdout, stderr)
	case "list":
		return keysList(ctx, args[1:], stdout, stderr)
	case "revoke":
		return keysRevoke(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		usage()
		return flag.ErrHelp
	}
	fmt.Fprintf(stderr, "crewcast keys: unknown subcommand %q\n", args[0])
	usage()
	return errUsage
}

func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", envOr("CREWCAST_DB", "./crewcast.db"), "SQLite path or postgres:// URL (CREWCAST_DB)")
}

func openKeyStore(ctx context.Context, db string) (store.Store, error) {
	st, err := server.OpenStore(ctx, db, "", time.Now, nil)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return st, nil
}

func keysCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keys create", stderr)
	db := dbFlag(fs)
	scope := fs.String("scope", "", "admin, send or read (required; each includes the ones after it)")
	name := fs.String("name", "", "a label to recognise the key by")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, pos, 0, "no arguments"); err != nil {
		return err
	}
	s, err := apikey.ParseScope(*scope)
	if err != nil {
		fmt.Fprintf(stderr, "crewcast keys create: --scope: %v\n", err)
		return errUsage
	}
	st, err := openKeyStore(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	plaintext, rec, err := apikey.Create(ctx, st, *name, []apikey.Scope{s}, time.Now())
	if err != nil {
		return err
	}
	// The key alone on stdout, so scripts can capture it; the rest on
	// stderr.
	fmt.Fprintln(stdout, plaintext)
	fmt.Fprintf(stderr, "created %s key %s; it is shown only now, keep it safe\n", s, rec.ID)
	return nil
}

func keysList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keys list", stderr)
	db := dbFlag(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, pos, 0, "no arguments"); err != nil {
		return err
	}
	st, err := openKeyStore(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := st.ListKeys(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPES\tCREATED\tLAST USED\tREVOKED")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, dash(k.Name), k.Prefix, strings.Join(k.Scopes, ","),
			fmtZero(k.CreatedAt), fmtZero(k.LastUsedAt), fmtZero(k.RevokedAt))
	}
	return tw.Flush()
}

func keysRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keys revoke", stderr)
	db := dbFlag(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, pos, 1, "one key ID (see 'crewcast keys list')"); err != nil {
		return err
	}
	st, err := openKeyStore(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.RevokeKey(ctx, pos[0], time.Now()); err != nil {
		if errors.Is(err, actor.ErrNotFound) {
			return fmt.Errorf("no key with ID %q", pos[0])
		}
		return err
	}
	fmt.Fprintf(stdout, "revoked %s\n", pos[0])
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtZero(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmtTime(&t)
}
