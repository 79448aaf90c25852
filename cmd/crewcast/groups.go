package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crewcast/crewcast/apitype"
)

// crewcast groups list: the groups a server has, newest first, through
// the API (GET /v1/groups).

func init() {
	register(command{name: "groups", summary: "list groups, newest first (groups list --status S --limit N)", run: runGroups})
}

// groupStatuses are the values GET /v1/groups takes as ?status=.
var groupStatuses = []string{"sending", "awaiting", "paused", "complete", "canceled"}

func runGroups(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	if sub != "list" {
		return usagef("unknown groups command %q: want list", sub)
	}
	fs := newFlagSet("groups list", stderr)
	cf := bindClientFlags(fs)
	status := fs.String("status", "", "only groups with this status: "+strings.Join(groupStatuses, ", "))
	limit := fs.Int("limit", 50, "at most this many groups")
	setUsage(fs, `Usage: crewcast groups [list] [--status STATUS] [--limit N]

Lists groups, newest first: id, status, when, recipients, delivered,
failed and the first line of the text. 'crewcast status ID' shows one.

Flags:
`)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, pos, 0, "flags only"); err != nil {
		return err
	}
	if *status != "" && !slices.Contains(groupStatuses, *status) {
		return usagef("--status %q: want one of %s", *status, strings.Join(groupStatuses, ", "))
	}
	if *limit < 1 {
		return usagef("--limit %d: want 1 or more", *limit)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	v := url.Values{"limit": {strconv.Itoa(min(*limit, 1000))}}
	if *status != "" {
		v.Set("status", *status)
	}
	var groups []apitype.Group
	more := false
	for {
		var page struct {
			Groups     []apitype.Group `json:"groups"`
			NextCursor string          `json:"next_cursor"`
		}
		if _, err := c.doJSON(ctx, "GET", "/v1/groups?"+v.Encode(), nil, nil, &page); err != nil {
			return explain(err)
		}
		groups = append(groups, page.Groups...)
		if len(groups) >= *limit {
			more = len(groups) > *limit || page.NextCursor != ""
			groups = groups[:*limit]
			break
		}
		if page.NextCursor == "" {
			break
		}
		v.Set("cursor", page.NextCursor)
	}
	return printGroups(stdout, groups, more)
}

func printGroups(stdout io.Writer, groups []apitype.Group, more bool) error {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tCREATED\tRECIPIENTS\tDELIVERED\tFAILED\tTEXT")
	for _, g := range groups {
		created := "-"
		if g.CreatedAt != nil {
			created = g.CreatedAt.Local().Format("2006-01-02 15:04")
		}
		total := 0
		for _, k := range []string{"scheduled", "pending", "sending", "sent", "delivered", "failed", "unconfirmed", "unknown", "opted_out", "canceled"} {
			total += g.Counts[k]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", g.ID, g.Status, created, total, g.Counts["delivered"], g.Counts["failed"], oneLine(g.Text, 50))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	noun := "groups"
	if len(groups) == 1 {
		noun = "group"
	}
	if more {
		fmt.Fprintf(stdout, "%d %s (more: raise --limit)\n", len(groups), noun)
	} else {
		fmt.Fprintf(stdout, "%d %s\n", len(groups), noun)
	}
	return nil
}
