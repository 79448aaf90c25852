package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestServeLogFormatAndLevel(t *testing.T) {
	t.Setenv("CREWCAST_LOG_FORMAT", "json")
	t.Setenv("CREWCAST_LOG_LEVEL", "warn")
	fs := newFlagSet("serve", &bytes.Buffer{})
	f := bindServerFlags(fs, "x.db")
	if err := parseFlags(fs, nil); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cfg, err := f.config(&out)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger.Info("hidden")
	cfg.Logger.Warn("shown", "k", "v")
	var rec map[string]any
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil || rec["msg"] != "shown" || rec["k"] != "v" {
		t.Fatalf("env json/warn: %q (%v)", out.String(), err)
	}

	// Flags win over the environment.
	fs = newFlagSet("serve", &bytes.Buffer{})
	f = bindServerFlags(fs, "x.db")
	if err := parseFlags(fs, []string{"--log-format", "text", "--log-level", "debug"}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if cfg, err = f.config(&out); err != nil {
		t.Fatal(err)
	}
	cfg.Logger.Debug("dbg")
	if !strings.Contains(out.String(), "level=DEBUG msg=dbg") {
		t.Fatalf("flag text/debug: %q", out.String())
	}

	for _, bad := range [][2]string{{"xml", "info"}, {"json", "loud"}} {
		if _, err := newLogger(&out, bad[0], bad[1]); err == nil {
			t.Errorf("format %q level %q accepted", bad[0], bad[1])
		}
	}
}
