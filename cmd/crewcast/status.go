package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/crewcast/crewcast/apitype"
)

func init() {
	register(command{name: "status", summary: "show a group's counts and roster", run: runStatus})
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	cf := bindClientFlags(fs)
	setUsage(fs, "Usage: crewcast status GROUP\n\nShows a group's counts and every recipient: status, attempts, times, error,\nacknowledgement and reply. Error codes the server explains are listed below\nthe table.\n\nFlags:\n")
	pos, err := positionals(fs, args, 1, "one group ID")
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var g apitype.Group
	if _, err := c.doJSON(ctx, "GET", "/v1/groups/"+url.PathEscape(pos[0]), nil, nil, &g); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "group   %s (%s, from %s, created %s)\n", g.ID, g.Mode, g.From, fmtTime(g.CreatedAt))
	fmt.Fprintf(stdout, "text    %s\n", g.Text)
	fmt.Fprintf(stdout, "status  %s\n", progressLine(g))
	if t := tallyLine(g); t != "" {
		fmt.Fprintf(stdout, "answers %s\n", t)
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	answers := len(g.Responses) > 0
	if answers {
		fmt.Fprintln(tw, "NUMBER\tNAME\tSTATUS\tATTEMPTS\tSENT\tDELIVERED\tERROR\tANSWER\tREPLY")
	} else {
		fmt.Fprintln(tw, "NUMBER\tNAME\tSTATUS\tATTEMPTS\tSENT\tDELIVERED\tERROR\tACK\tREPLY")
	}
	label := map[string]string{}
	for _, o := range g.Responses {
		label[o.Key] = o.Key + " " + o.Label
	}
	for _, r := range g.Recipients {
		ack := r.Ack
		if answers {
			ack = label[r.Response]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Number, dash(r.Name), r.Status, r.Attempts,
			fmtTime(r.SentAt), fmtTime(r.DeliveredAt), errorText(r), dash(ack), dash(oneLine(r.ReplyText, 40)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// What each error means, once per code, when the server explains it.
	seen := map[string]bool{}
	for _, r := range g.Recipients {
		if r.ErrorDetail != "" && !seen[r.ErrorCode+r.ErrorDetail] {
			if len(seen) == 0 {
				fmt.Fprintln(stdout)
			}
			seen[r.ErrorCode+r.ErrorDetail] = true
			fmt.Fprintf(stdout, "error %s: %s\n", dash(r.ErrorCode), oneLine(r.ErrorDetail, 200))
		}
	}
	return nil
}

// oneLine shortens free text for a table cell.
func oneLine(s string, max int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\r' || c == '\t' {
			r[i] = ' '
		}
	}
	if len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return string(r)
}

// errorText is a recipient's ERROR cell: its code and class, whichever
// are known.
func errorText(r apitype.Recipient) string {
	var parts []string
	for _, p := range []string{r.ErrorCode, r.ErrorClass} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
