package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"
)

func init() {
	register(command{name: "senders", summary: "add, list and remove the numbers crewcast sends from (through the API)", run: runSenders})
}

// senders goes through the API with an admin key (docs/design.md §16).
func runSenders(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := func() {
		fmt.Fprint(stderr, `Usage:
  crewcast senders add NUMBER --provider telnyx|twilio [--pool NAME] [--mps N]
                   [--registration 10dlc|toll_free|short_code|none] [--campaign ID]
                   [--status approved|pending|rejected|unknown]
  crewcast senders list
  crewcast senders remove NUMBER

A sender is a number crewcast may send from. --mps paces it (default by
registration: long code 1, toll-free 3, short code 30 messages a second).
Its provider and pool are recorded, but this server does not yet route by
them: every message goes through the configured --provider, and a group
sends from its "from" number (pools and failover are planned). A 10DLC or toll-free sender whose
registration status is not approved is refused at create and preview unless
the server runs with --allow-unregistered.

Through the server's API at CREWCAST_URL (--url) with an admin key in
CREWCAST_KEY (--key).

Flags (every subcommand):
  --url URL    crewcast server URL (env CREWCAST_URL; default http://127.0.0.1:8080)
  --key KEY    an admin API key (env CREWCAST_KEY)
`)
	}
	return runSubcommand(ctx, "senders", args, stdout, stderr, usage, map[string]subcommandFunc{
		"add":    sendersAdd,
		"list":   sendersList,
		"remove": sendersRemove,
	})
}

// senderRow is a sender as the API shows it.
type senderRow struct {
	Number       string  `json:"number"`
	Provider     string  `json:"provider"`
	Pool         string  `json:"pool"`
	MPS          float64 `json:"mps"`
	Registration struct {
		Kind       string `json:"kind"`
		CampaignID string `json:"campaign_id"`
		Status     string `json:"status"`
	} `json:"registration"`
	Healthy      bool `json:"healthy"`
	SentLastHour int  `json:"sent_last_hour"`
}

func sendersAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("senders add", stderr)
	cf := bindClientFlags(fs)
	provider := fs.String("provider", "", "telnyx or twilio (required)")
	pool := fs.String("pool", "", "the pool the number belongs to")
	mps := fs.Float64("mps", 0, "messages per second (default by registration kind)")
	kind := fs.String("registration", "none", "10dlc, toll_free, short_code or none")
	campaign := fs.String("campaign", "", "the 10DLC campaign or toll-free verification id")
	status := fs.String("status", "unknown", "approved, pending, rejected or unknown")
	pos, err := positionals(fs, args, 1, "one NUMBER, such as +15550100000")
	if err != nil {
		return err
	}
	if *provider == "" {
		return usagef("--provider is required (telnyx or twilio)")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	body := map[string]any{"number": pos[0], "provider": *provider, "pool": *pool, "mps": *mps,
		"registration": map[string]any{"kind": *kind, "campaign_id": *campaign, "status": *status}}
	var out senderRow
	if _, err := c.doJSON(ctx, "POST", "/v1/senders", body, nil, &out); err != nil {
		return explain(err)
	}
	fmt.Fprintf(stdout, "added %s (%s, pool %q, %s mps, %s %s)\n", out.Number, out.Provider, out.Pool,
		strconv.FormatFloat(out.MPS, 'f', -1, 64), out.Registration.Kind, out.Registration.Status)
	return nil
}

func sendersList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("senders list", stderr)
	cf := bindClientFlags(fs)
	if _, err := positionals(fs, args, 0, "flags only"); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var out struct {
		Senders []senderRow `json:"senders"`
	}
	if _, err := c.doJSON(ctx, "GET", "/v1/senders", nil, nil, &out); err != nil {
		return explain(err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NUMBER\tPROVIDER\tPOOL\tMPS\tREGISTRATION\tSTATUS\tHEALTHY\tSENT LAST HOUR")
	for _, s := range out.Senders {
		pool := s.Pool
		if pool == "" {
			pool = "-"
		}
		health := "yes"
		if !s.Healthy {
			health = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.Number, s.Provider, pool, strconv.FormatFloat(s.MPS, 'f', -1, 64),
			s.Registration.Kind, s.Registration.Status, health, s.SentLastHour)
	}
	return tw.Flush()
}

func sendersRemove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("senders remove", stderr)
	cf := bindClientFlags(fs)
	pos, err := positionals(fs, args, 1, "one NUMBER (see 'crewcast senders list')")
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	if _, err := c.doJSON(ctx, "DELETE", "/v1/senders/"+url.PathEscape(pos[0]), nil, nil, nil); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == 404 {
			return fmt.Errorf("no sender %s", pos[0])
		}
		return explain(err)
	}
	fmt.Fprintf(stdout, "removed %s\n", pos[0])
	return nil
}
