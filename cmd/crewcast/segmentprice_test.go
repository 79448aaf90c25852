package main

import (
	"io"
	"strings"
	"testing"
)

// --segment-price (CREWCAST_SEGMENT_PRICE) reaches the server's
// configuration as written; the flag wins; a price that is no decimal is
// refused at start.
func TestSegmentPriceFlagAndEnv(t *testing.T) {
	parse := func(args ...string) (string, error) {
		t.Helper()
		fs := newFlagSet("serve", io.Discard)
		f := bindServerFlags(fs, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config(io.Discard)
		return cfg.SegmentPrice, err
	}
	if got, err := parse(); err != nil || got != "" {
		t.Fatalf("default = %q, %v; want none", got, err)
	}
	t.Setenv("CREWCAST_SEGMENT_PRICE", "0.0079")
	if got, err := parse(); err != nil || got != "0.0079" {
		t.Fatalf("env = %q, %v", got, err)
	}
	if got, err := parse("--segment-price", "0.01"); err != nil || got != "0.01" {
		t.Fatalf("flag over env = %q, %v", got, err)
	}
	t.Setenv("CREWCAST_SEGMENT_PRICE", "1e-3")
	if _, err := parse(); err == nil || !strings.Contains(err.Error(), "--segment-price") {
		t.Fatalf("bad env: %v", err)
	}
}
