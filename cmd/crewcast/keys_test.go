package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseExpires(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"30d":                  now.Add(30 * 24 * time.Hour),
		"12h":                  now.Add(12 * time.Hour),
		"90m":                  now.Add(90 * time.Minute),
		"1h30m":                now.Add(90 * time.Minute),
		"2027-01-02T03:04:05Z": time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC),
	} {
		if got, err := parseExpires(in, now); err != nil || !got.Equal(want) {
			t.Errorf("parseExpires(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0d", "-1h", "30x", "d", "1.5d", "2020-01-01T00:00:00Z", "tomorrow", "0"} {
		if got, err := parseExpires(in, now); err == nil {
			t.Errorf("parseExpires(%q) = %v, want an error", in, got)
		}
	}
}

// keys create --expires sets the key's expiry, through the API and with
// --db, and keys list shows it.
func TestKeysCreateExpires(t *testing.T) {
	e := newCLIEnv(t)
	before := time.Now()
	code, key, errs := e.client("admin", "keys", "create", "--scope", "read", "--name", "temp", "--expires", "30d")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(key), "cc_") {
		t.Fatalf("keys create --expires through the API: %d %q", code, errs)
	}
	keys, err := e.st.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, k := range keys {
		if k.Name == "temp" {
			found = true
			lo, hi := before.Add(30*24*time.Hour-time.Second), time.Now().Add(30*24*time.Hour+time.Second)
			if k.ExpiresAt.Before(lo) || k.ExpiresAt.After(hi) {
				t.Fatalf("expires at %v, want 30 days from now", k.ExpiresAt)
			}
		}
	}
	if !found {
		t.Fatal("created key not stored")
	}
	code, list, _ := e.client("admin", "keys", "list")
	want := time.Now().Add(30 * 24 * time.Hour).Local().Format("2006-01-02")
	if code != 0 || !strings.Contains(lines(list)[0], "EXPIRES") || !strings.Contains(list, want) {
		t.Fatalf("keys list does not show the expiry %s:\n%s", want, list)
	}
	db := t.TempDir() + "/keys.db"
	if code, _, errs := runCLI(context.Background(), "keys", "create", "--scope", "read", "--expires", "2099-01-01T00:00:00Z", "--db", db); code != 0 {
		t.Fatalf("keys create --expires --db: %d %q", code, errs)
	}
	if _, list, _ := runCLI(context.Background(), "keys", "list", "--db", db); !strings.Contains(list, "2099-01-01") && !strings.Contains(list, "2098-12-31") {
		t.Fatalf("keys list --db does not show the expiry:\n%s", list)
	}
	if code, _, errs := runCLI(context.Background(), "keys", "create", "--scope", "read", "--expires", "soon", "--db", db); code != 2 || !strings.Contains(errs, "--expires") {
		t.Fatalf("bad --expires: %d %q, want usage error naming --expires", code, errs)
	}
}
