package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/tracker"
)

func init() {
	register(command{name: "demo", summary: "run crewcast with the built-in demo provider and an example group", run: runDemo})
}

// demoFrom is the demo's sender number (a fictional 555-01xx number).
const demoFrom = "+15550100000"

// demoCrew is the example group: a field crew, with a few fates fixed so the
// board always shows every outcome (the rest follow the simulator's rates).
var demoCrew = []struct {
	number, name, fate string
}{
	{"+15550100101", "Ana Ruiz (foreman)", "reply:YES"},
	{"+15550100102", "Ben Okafor", "reply:YES, on my way"},
	{"+15550100103", "Chen Li", "fail:40008"},
	{"+15550100104", "Dana Kowalski", "reply:NO"},
	{"+15550100105", "Eli Haddad", "unknown"},
	{"+15550100106", "Fatima Noor", "reply:running late"},
	{"+15550100107", "Gus Petersen", "accept_timeout:silent"},
	{"+15550100108", "Hana Sato", "deliver"},
	{"+15550100109", "Ivan Morales", ""},
	{"+15550100110", "Jo Whitfield", ""},
	{"+15550100111", "Kai Mensah", ""},
	{"+15550100112", "Lena Brandt", ""},
}

// DemoFaults returns the demo simulator's behaviour: lifelike rates plus
// the scripted fates of the example crew.
func demoFaults() sim.Faults {
	f := sim.DemoFaults()
	f.Script = map[string]string{}
	for _, c := range demoCrew {
		if c.fate != "" {
			f.Script[c.number] = c.fate
		}
	}
	return f
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	f := bindServerFlags(fs, "")
	noExample := fs.Bool("no-example", false, "do not create the example group")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.db == "" {
		dir, err := os.MkdirTemp("", "crewcast-demo-")
		if err != nil {
			return err
		}
		f.db = filepath.Join(dir, "crewcast.db")
	}
	cfg, err := f.config(stderr)
	if err != nil {
		return err
	}
	cfg.Provider = server.ProviderDemo
	faults := demoFaults()
	cfg.DemoFaults = &faults
	// Demo pacing off and quick checks: outcomes show within a minute.
	cfg.SendRate = 0
	cfg.ProviderTimeout = 5 * time.Second
	cfg.Settings = group.Settings{CheckAfter: 20 * time.Second, Deadline: 90 * time.Second}
	if cfg.AdminKey == "" {
		key, _, err := apikey.Generate(rand.Reader, "demo admin", []apikey.Scope{apikey.ScopeAdmin}, time.Now())
		if err != nil {
			return err
		}
		cfg.AdminKey = key
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "crewcast demo is running.\n\n  board:     %s/\n  admin key: %s\n  database:  %s\n\n", srv.URL(), cfg.AdminKey, cfg.DB)
	if !*noExample {
		req := group.Request{From: demoFrom, Mode: crewcast.ModeIndividual,
			Text: "Crew call: site B, 7:00 tomorrow. Reply YES if you can make it, NO if not."}
		for _, c := range demoCrew {
			req.Recipients = append(req.Recipients, group.RecipientInput{Number: c.number, Name: c.name})
		}
		id, _, err := srv.Tracker().Create(ctx, req, tracker.CreateOptions{By: "demo"})
		if err != nil {
			_ = srv.Stop(context.Background())
			return fmt.Errorf("create the example group: %w", err)
		}
		fmt.Fprintf(stdout, "  example group: %s/#/groups/%s\n", srv.URL(), id)
		fmt.Fprintf(stdout, "  API:           curl -H 'Authorization: Bearer %s' %s/v1/groups/%s\n\n", cfg.AdminKey, srv.URL(), id)
	}
	fmt.Fprintln(stdout, "Sign in to the board with the admin key. Press Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Fprintln(stdout, "shutting down…")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Stop(sctx)
}
