package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// crewcast contacts … and crewcast crews …: the people a dispatcher texts
// (docs/design.md §11), through the API.

func init() {
	register(command{name: "contacts", summary: "import and list contacts (contacts import FILE.csv, contacts list)", run: runContacts})
	register(command{name: "crews", summary: "list, show, create and delete crews", run: runCrews})
}

type contactView struct {
	ID       string            `json:"id"`
	Number   string            `json:"number"`
	Name     string            `json:"name"`
	Email    string            `json:"email"`
	Tags     []string          `json:"tags"`
	Timezone string            `json:"timezone"`
	Fields   map[string]string `json:"fields"`
}

type crewView struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Members     []string   `json:"members"`
	Size        int        `json:"size"`
	UpdatedAt   *time.Time `json:"updated_at"`
}

func runContacts(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		return usagef("crewcast contacts import FILE.csv | crewcast contacts list (see 'crewcast contacts import -h')")
	}
	switch args[0] {
	case "import":
		return runContactsImport(ctx, args[1:], stdout, stderr)
	case "list":
		return runContactsList(ctx, args[1:], stdout, stderr)
	}
	return usagef("unknown contacts command %q: want import or list", args[0])
}

func runContactsImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("contacts import", stderr)
	cf := bindClientFlags(fs)
	dry := fs.Bool("dry-run", false, "check the file and say what would change, changing nothing")
	atomic := fs.Bool("atomic", false, "import nothing when any line is bad")
	setUsage(fs, `Usage: crewcast contacts import FILE.csv [flags]

Imports contacts from a CSV file whose header names the columns: number
(required), name, email (the address an email follow-up step writes to),
tags (split by ;), timezone (IANA, such as America/Chicago) and any other
column as a free field for templates. A known number is updated. Bad lines
are listed; the good ones are imported (none with --atomic). "-" reads
standard input.

Exit status: 0 when every line was good, 1 otherwise.

Flags:
`)
	pos, err := positionals(fs, args, 1, "one CSV file")
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var in io.Reader = os.Stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	q := url.Values{}
	if *dry {
		q.Set("dry_run", "1")
	}
	if *atomic {
		q.Set("atomic", "1")
	}
	path := "/v1/contacts/import"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var rep struct {
		Created, Updated, Unchanged int
		Errors                      []struct {
			Line  int    `json:"line"`
			Error string `json:"error"`
		}
		ErrorsTotal int `json:"errors_total"`
		// Kept counts rows whose opted_in was not taken (suppressed number).
		Kept int `json:"consent_kept_opted_out"`
	}
	resp, err := c.send(ctx, "POST", path, in, http.Header{"Content-Type": {"text/csv"}})
	var ae *apiError
	if asAPIError(err, &ae) && ae.Status == http.StatusUnprocessableEntity && *atomic {
		return exitError{code: exitFailed, msg: "nothing imported: --atomic and some lines are bad (--dry-run lists them)"}
	}
	if err != nil {
		return explain(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return fmt.Errorf("decode import report: %w", err)
	}
	verb := "imported"
	if *dry {
		verb = "would import"
	}
	fmt.Fprintf(stdout, "%s: %d created, %d updated, %d unchanged\n", verb, rep.Created, rep.Updated, rep.Unchanged)
	if rep.Kept > 0 {
		rows := "rows"
		if rep.Kept == 1 {
			rows = "row"
		}
		fmt.Fprintf(stdout, "%d %s said opted_in for a suppressed number: kept opted_out\n", rep.Kept, rows)
	}
	bad := max(rep.ErrorsTotal, len(rep.Errors))
	for _, e := range rep.Errors {
		fmt.Fprintf(stdout, "line %d: %s\n", e.Line, oneLine(e.Error, 200))
	}
	if bad > len(rep.Errors) {
		fmt.Fprintf(stdout, "… and %d more bad lines\n", bad-len(rep.Errors))
	}
	if bad > 0 {
		return exitError{code: exitFailed, msg: fmt.Sprintf("%d bad lines", bad)}
	}
	return nil
}

func asAPIError(err error, out **apiError) bool {
	ae, ok := err.(*apiError)
	*out = ae
	return ok
}

func runContactsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("contacts list", stderr)
	cf := bindClientFlags(fs)
	q := fs.String("q", "", "search names, numbers and emails")
	tag := fs.String("tag", "", "only contacts with this tag")
	crew := fs.String("crew", "", "only members of this crew (name or id)")
	setUsage(fs, "Usage: crewcast contacts list [--q TEXT] [--tag TAG] [--crew NAME]\n\nLists contacts by name.\n\nFlags:\n")
	if _, err := positionals(fs, args, 0, "flags only"); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	v := url.Values{"limit": {"1000"}}
	for k, s := range map[string]string{"q": *q, "tag": *tag, "crew": *crew} {
		if s != "" {
			v.Set(k, s)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tNUMBER\tEMAIL\tTAGS\tTIMEZONE\tID")
	n := 0
	for {
		var page struct {
			Contacts   []contactView `json:"contacts"`
			NextCursor string        `json:"next_cursor"`
		}
		if _, err := c.doJSON(ctx, "GET", "/v1/contacts?"+v.Encode(), nil, nil, &page); err != nil {
			return explain(err)
		}
		for _, ct := range page.Contacts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", dash(oneLine(ct.Name, 40)), ct.Number, dash(oneLine(ct.Email, 60)),
				dash(strings.Join(ct.Tags, ";")), dash(ct.Timezone), ct.ID)
			n++
		}
		if page.NextCursor == "" {
			break
		}
		v.Set("cursor", page.NextCursor)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d contacts\n", n)
	return nil
}

func runCrews(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := newFlagSet("crews "+sub, stderr)
	cf := bindClientFlags(fs)
	desc := fs.String("description", "", "what the crew is (create)")
	var members listFlag
	fs.Var(&members, "members", "contact ids or numbers, comma-separated; repeatable (create; a new number becomes a contact)")
	setUsage(fs, `Usage: crewcast crews [list]
       crewcast crews show NAME
       crewcast crews create NAME --members NUMBER,NUMBER… [--description TEXT]
       crewcast crews delete NAME

Crews are named lists of contacts: 'crewcast send --crew NAME' texts them.

Flags:
`)
	pos, err := nameArgs(fs, args, sub, "a crew name")
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		var out struct {
			Crews []crewView `json:"crews"`
		}
		if _, err := c.doJSON(ctx, "GET", "/v1/crews", nil, nil, &out); err != nil {
			return explain(err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tMEMBERS\tDESCRIPTION\tID")
		for _, k := range out.Crews {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", k.Name, k.Size, dash(oneLine(k.Description, 50)), k.ID)
		}
		return tw.Flush()
	case "create":
		var k crewView
		body := map[string]any{"name": pos[0], "description": *desc, "members": []string(members)}
		if _, err := c.doJSON(ctx, "POST", "/v1/crews", body, nil, &k); err != nil {
			return explain(err)
		}
		fmt.Fprintf(stdout, "%s\t%s (%d members)\n", k.ID, k.Name, k.Size)
		return nil
	case "show":
		k, err := findCrew(ctx, c, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "crew %s (%s): %d members\n", k.Name, k.ID, k.Size)
		if k.Description != "" {
			fmt.Fprintln(stdout, k.Description)
		}
		return runContactsList(ctx, []string{"--crew", k.ID, "--url", cf.url, "--key", cf.key}, stdout, stderr)
	case "delete":
		k, err := findCrew(ctx, c, pos[0])
		if err != nil {
			return err
		}
		if _, err := c.doJSON(ctx, "DELETE", "/v1/crews/"+url.PathEscape(k.ID), nil, nil, nil); err != nil {
			return explain(err)
		}
		fmt.Fprintf(stdout, "deleted crew %s (its contacts stay)\n", k.Name)
		return nil
	}
	return usagef("unknown crews command %q: want list, show, create or delete", sub)
}

// findCrew finds a crew by id or name.
func findCrew(ctx context.Context, c *apiClient, ref string) (crewView, error) {
	var out struct {
		Crews []crewView `json:"crews"`
	}
	if _, err := c.doJSON(ctx, "GET", "/v1/crews", nil, nil, &out); err != nil {
		return crewView{}, explain(err)
	}
	for _, k := range out.Crews {
		if k.ID == ref || k.Name == ref {
			return k, nil
		}
	}
	return crewView{}, fmt.Errorf("no crew %q ('crewcast crews' lists them)", ref)
}

// nameArgs parses a list|show|create|delete command's arguments: list takes
// no name, the others exactly one (what names it in the error).
func nameArgs(fs *flag.FlagSet, args []string, sub, what string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	want := 1
	if sub == "list" {
		want = 0
	}
	if err := wantArgs(fs, pos, want, what); err != nil {
		return nil, err
	}
	return pos, nil
}
