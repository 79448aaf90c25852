package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

func init() {
	register(command{name: "users", summary: "create, list, reset the password of and disable board users (through the API)", run: runUsers})
}

// passwordInput is where --password-stdin reads from (tests replace it).
var passwordInput io.Reader = os.Stdin

// users goes through the API with an admin key, like keys: people sign in
// to the board with the email and password made here (docs/design.md §14).
func runUsers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := func() {
		fmt.Fprint(stderr, `Usage:
  crewcast users create --email E --name N --role viewer|dispatcher|admin [--password-stdin]
  crewcast users list
  crewcast users reset-password USER [--password-stdin]
  crewcast users disable USER

USER is a user's ID or email. Without --password-stdin, create and
reset-password print a generated one-time password (alone on stdout, shown
only once); with it, the first line of standard input is the password (at
least 12 characters). Resetting the password or disabling a user signs them
out everywhere.

Through the server's API at CREWCAST_URL (--url) with an admin key in
CREWCAST_KEY (--key).

Flags (every subcommand):
  --url URL    crewcast server URL (env CREWCAST_URL; default http://127.0.0.1:8080)
  --key KEY    an admin API key (env CREWCAST_KEY)
`)
	}
	return runSubcommand(ctx, "users", args, stdout, stderr, usage, map[string]subcommandFunc{
		"create":         usersCreate,
		"list":           usersList,
		"reset-password": usersResetPassword,
		"disable":        usersDisable,
	})
}

// userRow is a user as the API shows it.
type userRow struct {
	ID         string     `json:"id"`
	Email      string     `json:"email"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	CreatedAt  *time.Time `json:"created_at"`
	DisabledAt *time.Time `json:"disabled_at"`
	Password   string     `json:"password"`
}

// readPassword reads the first line of passwordInput.
func readPassword() (string, error) {
	line, err := bufio.NewReader(io.LimitReader(passwordInput, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password from stdin: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", usagef("--password-stdin: standard input has no password")
	}
	return pw, nil
}

func usersCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("users create", stderr)
	cf := bindClientFlags(fs)
	email := fs.String("email", "", "the user's email, which they sign in with (required)")
	name := fs.String("name", "", "the user's name as the board shows it (required)")
	role := fs.String("role", "", "viewer, dispatcher or admin (required)")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input instead of generating one")
	if _, err := positionals(fs, args, 0, "flags only"); err != nil {
		return err
	}
	if *email == "" || *name == "" || *role == "" {
		return usagef("--email, --name and --role are required")
	}
	body := map[string]any{"email": *email, "name": *name, "role": *role}
	if *fromStdin {
		pw, err := readPassword()
		if err != nil {
			return err
		}
		body["password"] = pw
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var out userRow
	if _, err := c.doJSON(ctx, "POST", "/v1/users", body, nil, &out); err != nil {
		return explain(err)
	}
	if out.Password != "" {
		fmt.Fprintln(stdout, out.Password)
		fmt.Fprintf(stderr, "created %s %s (%s) on %s; the one-time password above is shown only now: hand it over safely; they must choose their own at first sign-in\n", out.Role, out.ID, out.Email, c.base)
		return nil
	}
	fmt.Fprintf(stdout, "created %s %s (%s)\n", out.Role, out.ID, out.Email)
	return nil
}

func usersList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("users list", stderr)
	cf := bindClientFlags(fs)
	if _, err := positionals(fs, args, 0, "flags only"); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	rows, err := listUsers(ctx, c)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEMAIL\tNAME\tROLE\tCREATED\tDISABLED")
	for _, u := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.ID, u.Email, u.Name, u.Role, fmtTime(u.CreatedAt), fmtTime(u.DisabledAt))
	}
	return tw.Flush()
}

func listUsers(ctx context.Context, c *apiClient) ([]userRow, error) {
	var out struct {
		Users []userRow `json:"users"`
	}
	if _, err := c.doJSON(ctx, "GET", "/v1/users", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Users, nil
}

// findUser resolves a user's ID or email to their ID.
func findUser(ctx context.Context, c *apiClient, who string) (string, error) {
	if !strings.Contains(who, "@") {
		return who, nil
	}
	rows, err := listUsers(ctx, c)
	if err != nil {
		return "", err
	}
	for _, u := range rows {
		if strings.EqualFold(u.Email, strings.TrimSpace(who)) {
			return u.ID, nil
		}
	}
	return "", fmt.Errorf("no user with email %q", who)
}

// userArg parses the one USER argument and resolves it.
func userArg(ctx context.Context, fs *flag.FlagSet, cf *clientFlags, args []string) (*apiClient, string, error) {
	pos, err := positionals(fs, args, 1, "one user ID or email (see 'crewcast users list')")
	if err != nil {
		return nil, "", err
	}
	c, err := cf.client()
	if err != nil {
		return nil, "", err
	}
	id, err := findUser(ctx, c, pos[0])
	return c, id, err
}

func notFoundAs(err error, who string) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == 404 {
		return fmt.Errorf("no user with ID %q", who)
	}
	return explain(err)
}

func usersResetPassword(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("users reset-password", stderr)
	cf := bindClientFlags(fs)
	fromStdin := fs.Bool("password-stdin", false, "read the new password from the first line of standard input instead of generating one")
	c, id, err := userArg(ctx, fs, cf, args)
	if err != nil {
		return err
	}
	body := map[string]any{"reset_password": true}
	if *fromStdin {
		pw, err := readPassword()
		if err != nil {
			return err
		}
		body = map[string]any{"password": pw}
	}
	var out userRow
	if _, err := c.doJSON(ctx, "PATCH", "/v1/users/"+url.PathEscape(id), body, nil, &out); err != nil {
		return notFoundAs(err, id)
	}
	if out.Password != "" {
		fmt.Fprintln(stdout, out.Password)
		fmt.Fprintf(stderr, "reset the password of %s (%s) and signed them out everywhere; the one-time password above is shown only now, and they must choose their own at their next sign-in\n", out.ID, out.Email)
		return nil
	}
	fmt.Fprintf(stdout, "reset the password of %s (%s) and signed them out everywhere\n", out.ID, out.Email)
	return nil
}

func usersDisable(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("users disable", stderr)
	cf := bindClientFlags(fs)
	c, id, err := userArg(ctx, fs, cf, args)
	if err != nil {
		return err
	}
	if _, err := c.doJSON(ctx, "DELETE", "/v1/users/"+url.PathEscape(id), nil, nil, nil); err != nil {
		return notFoundAs(err, id)
	}
	fmt.Fprintf(stdout, "disabled %s and signed them out everywhere\n", id)
	return nil
}
