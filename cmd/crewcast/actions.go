package main

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/crewcast/crewcast/apitype"
)

// The operator's actions on a group, one API call each (docs/design.md §7):
// cancel the rest of a group, retry a failed recipient, resolve an
// unconfirmed or unknown one.

func init() {
	register(command{name: "cancel", summary: "cancel a group: recipients not yet sent are not sent", run: runCancel})
	register(command{name: "retry", summary: "send once more to a failed recipient (--all: every failed one)", run: runRetry})
	register(command{name: "resolve", summary: "record what happened to an unconfirmed or unknown recipient", run: runResolve})
}

func runCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cancel", stderr)
	cf := bindClientFlags(fs)
	setUsage(fs, "Usage: crewcast cancel GROUP\n\nCancels a group: recipients not yet sent are not sent (they end \"canceled\");\nmessages already handed to the provider are not recalled.\n\nFlags:\n")
	pos, err := positionals(fs, args, 1, "one group ID")
	if err != nil {
		return err
	}
	return groupAction(ctx, cf, "/v1/groups/"+url.PathEscape(pos[0])+"/cancel", nil, "", stdout)
}

func runRetry(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("retry", stderr)
	cf := bindClientFlags(fs)
	all := fs.Bool("all", false, "retry every failed recipient of the group (those the rules allow; the rest are counted as skipped)")
	setUsage(fs, "Usage: crewcast retry GROUP NUMBER\n       crewcast retry GROUP --all\n\nSends the group's message once more to a recipient that failed, or with --all\nto every failed one. The server refuses other statuses (an unconfirmed or\nunknown recipient may already have the message: resolve it first).\n\nFlags:\n")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *all && len(pos) == 1:
		return retryAll(ctx, cf, pos[0], stdout)
	case *all && len(pos) > 1:
		return usagef("give a recipient's NUMBER or --all, not both (see 'crewcast retry -h')")
	case len(pos) < 2:
		return usagef("missing argument: want a group ID and a recipient's number (GROUP NUMBER or GROUP --all; see 'crewcast retry -h')")
	}
	if err := wantArgs(fs, pos, 2, "a group ID and a recipient's number"); err != nil {
		return err
	}
	return groupAction(ctx, cf, recipientPath(pos[0], pos[1], "retry"), nil, pos[1], stdout)
}

// retryAll retries every failed recipient of a group in one call (POST
// /v1/groups/{id}/retry-failed) and says how many were retried and skipped.
func retryAll(ctx context.Context, cf *clientFlags, id string, stdout io.Writer) error {
	c, err := cf.client()
	if err != nil {
		return err
	}
	var out struct {
		Retried int           `json:"retried"`
		Skipped int           `json:"skipped"`
		Group   apitype.Group `json:"group"`
	}
	if _, err := c.doJSON(ctx, "POST", "/v1/groups/"+url.PathEscape(id)+"/retry-failed", struct{}{}, nil, &out); err != nil {
		return explain(err)
	}
	fmt.Fprintf(stdout, "retried %d failed %s", out.Retried, plural(out.Retried, "recipient", "recipients"))
	if out.Skipped > 0 {
		fmt.Fprintf(stdout, "; skipped %d the rules do not allow again (a permanent error, attempts spent, or a suppressed number)", out.Skipped)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, progressLine(out.Group))
	return nil
}

func runResolve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("resolve", stderr)
	cf := bindClientFlags(fs)
	outcome := fs.String("outcome", "", "delivered (the person has the message) or not_delivered (allows one more attempt with retry)")
	setUsage(fs, "Usage: crewcast resolve GROUP NUMBER --outcome delivered|not_delivered\n\nRecords what a person found out about an unconfirmed or unknown recipient\n(for example by phoning them). The decision is kept in the group's journal.\n\nFlags:\n")
	pos, err := positionals(fs, args, 2, "a group ID and a recipient's number")
	if err != nil {
		return err
	}
	if *outcome != "delivered" && *outcome != "not_delivered" {
		return usagef("--outcome must be delivered or not_delivered, got %q", *outcome)
	}
	return groupAction(ctx, cf, recipientPath(pos[0], pos[1], "resolve"), map[string]string{"outcome": *outcome}, pos[1], stdout)
}

func recipientPath(id, number, action string) string {
	return "/v1/groups/" + url.PathEscape(id) + "/recipients/" + url.PathEscape(number) + "/" + action
}

// groupAction posts an action and prints the group's progress line after
// it, and the recipient's new status when the action was about one.
func groupAction(ctx context.Context, cf *clientFlags, path string, body any, number string, stdout io.Writer) error {
	c, err := cf.client()
	if err != nil {
		return err
	}
	if body == nil {
		body = struct{}{}
	}
	var g apitype.Group
	if _, err := c.doJSON(ctx, "POST", path, body, nil, &g); err != nil {
		return explain(err)
	}
	if number != "" {
		for _, r := range g.Recipients {
			if r.Number == number {
				fmt.Fprintf(stdout, "%s  %s  attempts %d\n", r.Number, r.Status, r.Attempts)
			}
		}
	}
	fmt.Fprintln(stdout, progressLine(g))
	return nil
}

// plural picks one or many by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
