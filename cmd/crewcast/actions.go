package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
)

// The operator's actions on a group, one API call each (design.md §7):
// cancel the rest of a group, retry a failed recipient, resolve an
// unconfirmed or unknown one.

func init() {
	register(command{name: "cancel", summary: "cancel a group: recipients not yet sent are not sent", run: runCancel})
	register(command{name: "retry", summary: "send once more to a failed recipient", run: runRetry})
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
	setUsage(fs, "Usage: crewcast retry GROUP NUMBER\n\nSends the group's message once more to a recipient that failed. The server\nrefuses other statuses (an unconfirmed or unknown recipient may already have\nthe message: resolve it first).\n\nFlags:\n")
	pos, err := positionals(fs, args, 2, "a group ID and a recipient's number")
	if err != nil {
		return err
	}
	return groupAction(ctx, cf, recipientPath(pos[0], pos[1], "retry"), nil, pos[1], stdout)
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
	var g groupView
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
