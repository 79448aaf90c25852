package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Privacy from the command line (docs/design.md §6): run a retention pass now,
// show the last one, and erase a person. Each is one API call.

func init() {
	register(command{name: "retention", summary: "run a retention pass now, or show the last one", run: runRetention})
	register(command{name: "erase", summary: "forget a person everywhere (a request to be forgotten)", run: runErase})
}

// retentionRunView is POST /v1/retention/run's answer and GET
// /v1/retention's "last".
type retentionRunView struct {
	Trigger    string         `json:"trigger"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
	DurationMS int64          `json:"duration_ms"`
	Report     map[string]int `json:"report"`
	Error      string         `json:"error"`
}

// retentionLine says what one pass did, in one line.
func retentionLine(r retentionRunView) string {
	keys := []string{"redacted", "hashed", "deleted", "inbox_purged", "replies_redacted", "skipped"}
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", strings.ReplaceAll(k, "_", " "), r.Report[k]))
	}
	line := fmt.Sprintf("retention pass (%s) at %s in %dms: %s", r.Trigger, r.FinishedAt.Local().Format(time.DateTime),
		r.DurationMS, strings.Join(parts, ", "))
	if r.Error != "" {
		line += "\nstopped early: " + r.Error
	}
	return line
}

func runRetention(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := func() {
		fmt.Fprint(stderr, `Usage:
  crewcast retention run      make one retention pass now and print what it did
  crewcast retention status   show the schedule and the last pass

Through the server's API at CREWCAST_URL (--url) with an admin key in
CREWCAST_KEY (--key). The server also runs a pass on its own every
--retention-interval (default 1h; the first soon after start).

Flags (every subcommand):
  --url URL    crewcast server URL (env CREWCAST_URL; default http://127.0.0.1:8080)
  --key KEY    an admin API key (env CREWCAST_KEY)
`)
	}
	sub, err := pickSubcommand("retention", "subcommand", args, usage, stderr, "run", "status")
	if err != nil {
		return err
	}
	fs := newFlagSet("retention "+sub, stderr)
	cf := bindClientFlags(fs)
	fs.Usage = usage
	if _, err := positionals(fs, args[1:], 0, "no arguments"); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	if sub == "run" {
		var run retentionRunView
		if _, err := c.doJSON(ctx, "POST", "/v1/retention/run", struct{}{}, nil, &run); err != nil {
			return explain(err)
		}
		fmt.Fprintln(stdout, retentionLine(run))
		return nil
	}
	var st struct {
		Interval string            `json:"interval"`
		Last     *retentionRunView `json:"last"`
		NextAt   *time.Time        `json:"next_at"`
		Runs     int               `json:"runs"`
	}
	if _, err := c.doJSON(ctx, "GET", "/v1/retention", nil, nil, &st); err != nil {
		return explain(err)
	}
	if st.Interval == "off" {
		fmt.Fprint(stdout, "schedule: off (passes only on request)")
	} else {
		fmt.Fprintf(stdout, "schedule: every %s", st.Interval)
	}
	if st.NextAt != nil && !st.NextAt.IsZero() {
		fmt.Fprintf(stdout, "; next pass at %s", st.NextAt.Local().Format(time.DateTime))
	}
	fmt.Fprintln(stdout)
	if st.Last == nil {
		fmt.Fprintln(stdout, "no retention pass yet since the server started")
		return nil
	}
	fmt.Fprintln(stdout, retentionLine(*st.Last))
	return nil
}

func runErase(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("erase", stderr)
	cf := bindClientFlags(fs)
	number := fs.String("number", "", "the person's phone number (E.164, e.g. +15550100001)")
	setUsage(fs, `Usage: crewcast erase --number NUMBER

Forgets one person now, everywhere crewcast keeps them: their number is
replaced by a keyed hash (CREWCAST_HASH_KEY, or the key the server generated
and stored in the database when none is configured) in every group, journal,
inbox entry, route, reply and report, and their message and reply bodies are
redacted. If they opted out, the opt-out stays
in force under the keyed hash, so they are still never texted. Running it
again changes nothing. Needs an admin key.

Flags:
`)
	if _, err := positionals(fs, args, 0, "no arguments (give the number with --number)"); err != nil {
		return err
	}
	if *number == "" {
		return usagef("--number is required")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var rep struct {
		Erased      bool           `json:"erased"`
		Replacement string         `json:"replacement"`
		Groups      int            `json:"groups"`
		Changed     map[string]int `json:"changed"`
		OptOutKept  bool           `json:"opt_out_kept"`
		Message     string         `json:"message"`
		Warnings    []string       `json:"warnings"`
	}
	if _, err := c.doJSON(ctx, "POST", "/v1/erasure", map[string]string{"number": *number}, nil, &rep); err != nil {
		return explain(err)
	}
	fmt.Fprintln(stdout, rep.Message)
	if rep.Erased {
		places := make([]string, 0, len(rep.Changed))
		for k := range rep.Changed {
			places = append(places, k)
		}
		sort.Strings(places)
		for _, k := range places {
			fmt.Fprintf(stdout, "  %-13s %d\n", k, rep.Changed[k])
		}
		if rep.OptOutKept {
			fmt.Fprintln(stdout, "their opt-out stays in force (kept as a keyed hash)")
		}
	}
	for _, w := range rep.Warnings {
		fmt.Fprintln(stdout, "warning: "+w)
	}
	return nil
}
