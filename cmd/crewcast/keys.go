package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
)

func init() {
	register(command{name: "keys", summary: "create, list and revoke API keys (through the API, or --db to bootstrap)", run: runKeys})
}

// keys goes through the API with an admin key, like every client command.
// With an explicit --db it works on the database file instead: the first
// admin key of a fresh server has to come from somewhere, and whoever can
// open the database can already do anything.
func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := func() {
		fmt.Fprint(stderr, `Usage:
  crewcast keys create --scope admin|send|read [--name NAME] [--expires 30d|12h|90m|RFC3339]
  crewcast keys list
  crewcast keys revoke ID

Through the server's API at CREWCAST_URL (--url) with an admin key in
CREWCAST_KEY (--key). With --db PATH|URL instead, the key is written straight
into that database (to make the first admin key before the server has one);
it says which database it wrote.

--expires ends the key at that time (refused with 401 after it). A key made
through the API belongs to the user behind the admin key or session that made
it (CREATED BY): refused while that user is disabled, revoked when deleted.

Flags (every subcommand):
  --url URL    crewcast server URL (env CREWCAST_URL; default http://127.0.0.1:8080)
  --key KEY    an admin API key (env CREWCAST_KEY)
  --db PATH    work on this SQLite file or postgres:// URL instead of the API
`)
	}
	return runSubcommand(ctx, "keys", args, stdout, stderr, usage, map[string]subcommandFunc{
		"create": keysCreate,
		"list":   keysList,
		"revoke": keysRevoke,
	})
}

// keyFlags are the flags of every keys subcommand: the API client's, and
// --db for working on a database directly.
type keyFlags struct {
	client *clientFlags
	db     string
}

func bindKeyFlags(fs *flag.FlagSet) *keyFlags {
	f := &keyFlags{client: bindClientFlags(fs)}
	fs.StringVar(&f.db, "db", "", "work on this SQLite file or postgres:// URL directly instead of through the API")
	return f
}

// keyRow is a key as GET /v1/keys lists it.
type keyRow struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  *time.Time `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	CreatedBy  *string    `json:"created_by"`
	ExpiresAt  *time.Time `json:"expires_at"`
}

// openKeyStore opens the database for --db, saying whether the SQLite
// file existed before.
func openKeyStore(ctx context.Context, db string) (store.Store, string, error) {
	where := dbLabel(db)
	if !isPostgres(db) {
		if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
			where = "a new database " + where
		} else {
			where = "database " + where
		}
	}
	st, err := server.OpenStore(ctx, db, "", time.Now, nil)
	if err != nil {
		return nil, "", fmt.Errorf("open database %s: %w", dbLabel(db), err)
	}
	return st, where, nil
}

func keysCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keys create", stderr)
	kf := bindKeyFlags(fs)
	scope := fs.String("scope", "", "admin, send or read (required; each includes the ones after it)")
	name := fs.String("name", "", "a label to recognise the key by")
	expiresFlag := fs.String("expires", "", "when the key stops working: 30d, 12h, 90m from now, or an RFC 3339 time (default: never)")
	if _, err := positionals(fs, args, 0, "flags only"); err != nil {
		return err
	}
	s, err := apikey.ParseScope(*scope)
	if err != nil {
		return usagef("--scope: %v", err)
	}
	var expires time.Time
	if *expiresFlag != "" {
		if expires, err = parseExpires(*expiresFlag, time.Now()); err != nil {
			return usagef("--expires: %v", err)
		}
	}
	var plaintext, id, where string
	if kf.db != "" {
		st, w, err := openKeyStore(ctx, kf.db)
		if err != nil {
			return err
		}
		defer st.Close()
		// Audited like a key made through the API, by the system actor
		// "cli", in the key's own transaction.
		opts := apikey.Options{ExpiresAt: expires} // nobody owns a key made on the database
		key, rec, err := apikey.CreateWith(ctx, st, *name, []apikey.Scope{s}, opts, time.Now(), func(rec store.APIKey) store.AuditEntry {
			return store.AuditEntry{At: rec.CreatedAt, Actor: cliActor(), Action: apikey.AuditKeyCreated, Target: apikey.AuditTarget(rec)}
		})
		if err != nil {
			return err
		}
		plaintext, id, where = key, rec.ID, "in "+w
	} else {
		c, err := kf.client.client()
		if err != nil {
			return err
		}
		var out struct {
			ID  string `json:"id"`
			Key string `json:"key"`
		}
		body := map[string]any{"scopes": []string{string(s)}, "name": *name}
		if !expires.IsZero() {
			body["expires_at"] = expires.Format(time.RFC3339)
		}
		if _, err := c.doJSON(ctx, "POST", "/v1/keys", body, nil, &out); err != nil {
			return explain(err)
		}
		plaintext, id, where = out.Key, out.ID, "on "+c.base
	}
	// The key alone on stdout, so scripts can capture it; the rest on
	// stderr.
	fmt.Fprintln(stdout, plaintext)
	fmt.Fprintf(stderr, "created %s key %s %s; it is shown only now, keep it safe\n", s, id, where)
	return nil
}

func keysList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keys list", stderr)
	kf := bindKeyFlags(fs)
	if _, err := positionals(fs, args, 0, "flags only"); err != nil {
		return err
	}
	var rows []keyRow
	if kf.db != "" {
		st, _, err := openKeyStore(ctx, kf.db)
		if err != nil {
			return err
		}
		defer st.Close()
		keys, err := st.ListKeys(ctx)
		if err != nil {
			return err
		}
		for _, k := range keys {
			rows = append(rows, keyRow{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Scopes: k.Scopes,
				CreatedAt: timePtr(k.CreatedAt), LastUsedAt: timePtr(k.LastUsedAt), RevokedAt: timePtr(k.RevokedAt),
				CreatedBy: &k.CreatedBy, ExpiresAt: timePtr(k.ExpiresAt)})
		}
	} else {
		c, err := kf.client.client()
		if err != nil {
			return err
		}
		var out struct {
			Keys []keyRow `json:"keys"`
		}
		if _, err := c.doJSON(ctx, "GET", "/v1/keys", nil, nil, &out); err != nil {
			return err
		}
		rows = out.Keys
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	// REVOKED stays last, so scripts that read it keep working.
	fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPES\tCREATED BY\tCREATED\tLAST USED\tEXPIRES\tREVOKED")
	for _, k := range rows {
		owner := ""
		if k.CreatedBy != nil {
			owner = *k.CreatedBy
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, dash(k.Name), k.Prefix, strings.Join(k.Scopes, ","),
			dash(owner), fmtTime(k.CreatedAt), fmtTime(k.LastUsedAt), fmtTime(k.ExpiresAt), fmtTime(k.RevokedAt))
	}
	return tw.Flush()
}

func keysRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keys revoke", stderr)
	kf := bindKeyFlags(fs)
	pos, err := positionals(fs, args, 1, "one key ID (see 'crewcast keys list')")
	if err != nil {
		return err
	}
	if kf.db != "" {
		st, _, err := openKeyStore(ctx, kf.db)
		if err != nil {
			return err
		}
		defer st.Close()
		now := time.Now().UTC()
		entry := store.AuditEntry{At: now, Actor: cliActor(), Action: apikey.AuditKeyRevoked, Target: pos[0]}
		if err := st.RevokeKey(ctx, pos[0], now, entry); err != nil {
			if errors.Is(err, actor.ErrNotFound) {
				return fmt.Errorf("no key with ID %q", pos[0])
			}
			return err
		}
	} else {
		c, err := kf.client.client()
		if err != nil {
			return err
		}
		if _, err := c.doJSON(ctx, "DELETE", "/v1/keys/"+url.PathEscape(pos[0]), nil, nil, nil); err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.Status == 404 {
				return fmt.Errorf("no key with ID %q", pos[0])
			}
			return err
		}
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

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// cliActor is who the audit log names for a key change made with --db,
// straight on the database: the system, as "cli", with the operating
// system's user name when known (there is no API key or board user).
func cliActor() store.AuditActor {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return store.AuditActor{Type: store.ActorSystem, ID: "cli", Name: name}
}

// parseExpires reads --expires: a duration from now in days, hours or
// minutes (30d, 12h, 90m, 1h30m) or an RFC 3339 time, in the future.
func parseExpires(s string, now time.Time) (time.Time, error) {
	var t time.Time
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 36500 {
			return time.Time{}, fmt.Errorf("%q: a whole number of days, e.g. 30d", s)
		}
		t = now.AddDate(0, 0, n)
	} else if d, err := time.ParseDuration(s); err == nil {
		t = now.Add(d)
	} else if t, err = time.Parse(time.RFC3339, s); err != nil {
		return time.Time{}, fmt.Errorf("%q: want a duration (30d, 12h, 90m) or an RFC 3339 time (2026-12-31T23:59:59Z)", s)
	}
	if !t.After(now) {
		return time.Time{}, fmt.Errorf("%q: must be in the future", s)
	}
	return t.UTC(), nil
}
