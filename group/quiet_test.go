package group

import (
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustQuiet(t *testing.T, s string) QuietHours {
	t.Helper()
	q, err := ParseQuietHours(s)
	if err != nil || q == nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return *q
}

func TestParseQuietHours(t *testing.T) {
	if q := mustQuiet(t, "22:00-06:30"); q.Start != 22*60 || q.End != 6*60+30 || q.String() != "22:00-06:30" {
		t.Fatalf("%+v", q)
	}
	if q, err := ParseQuietHours("off"); q != nil || err != nil {
		t.Fatalf("off: %v %v", q, err)
	}
	for _, bad := range []string{"22-06", "24:00-06:00", "22:00", "22:00-22:00", "9:5-10:00", "ab:cd-01:00"} {
		if _, err := ParseQuietHours(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestQuietHoursAcrossDST reads quiet hours with fixed instants around
// both DST transitions of 2026 (US: 8 March and 1 November; EU: 29 March
// and 25 October).
func TestQuietHoursAcrossDST(t *testing.T) {
	ny, err := LoadZone("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := LoadZone("Europe/Berlin")
	cases := []struct {
		name  string
		quiet string
		loc   *time.Location
		at    string
		until string // "" = not quiet
	}{
		{"spring forward: the night is an hour shorter", "22:00-06:30", ny, "2026-03-08T04:00:00Z", "2026-03-08T10:30:00Z"},
		{"fall back: the night is an hour longer", "22:00-06:30", ny, "2026-11-01T03:00:00Z", "2026-11-01T11:30:00Z"},
		{"after midnight, before the jump", "22:00-06:30", ny, "2026-03-08T06:59:00Z", "2026-03-08T10:30:00Z"},
		{"after the jump", "22:00-06:30", ny, "2026-03-08T07:00:00Z", "2026-03-08T10:30:00Z"},
		{"day time is not quiet", "22:00-06:30", ny, "2026-03-08T17:00:00Z", ""},
		{"end inside the skipped hour", "22:00-02:30", ny, "2026-03-08T06:10:00Z", "2026-03-08T07:00:00Z"},
		{"end inside the repeated hour, first pass", "23:00-01:30", ny, "2026-11-01T05:10:00Z", "2026-11-01T05:30:00Z"},
		{"end inside the repeated hour, second pass", "23:00-01:30", ny, "2026-11-01T06:10:00Z", "2026-11-01T06:30:00Z"},
		{"Berlin spring forward", "21:00-07:00", berlin, "2026-03-28T21:00:00Z", "2026-03-29T05:00:00Z"},
		{"Berlin fall back", "21:00-07:00", berlin, "2026-10-24T20:00:00Z", "2026-10-25T06:00:00Z"},
		{"window not crossing midnight", "13:00-14:00", time.UTC, "2026-03-08T13:59:00Z", "2026-03-08T14:00:00Z"},
		{"end is not quiet", "13:00-14:00", time.UTC, "2026-03-08T14:00:00Z", ""},
	}
	for _, c := range cases {
		q := mustQuiet(t, c.quiet)
		got, ok := q.Until(utc(c.at), c.loc)
		if c.until == "" {
			if ok {
				t.Errorf("%s: quiet until %s", c.name, got)
			}
			continue
		}
		if !ok || !got.Equal(utc(c.until)) {
			t.Errorf("%s: until %s (%v), want %s", c.name, got.UTC().Format(time.RFC3339), ok, c.until)
		}
		if ok && !got.After(utc(c.at)) {
			t.Errorf("%s: until %s is not after %s", c.name, got, c.at)
		}
	}
}

func TestQuietHoursHoldPerRecipientZoneAndCriticalBypass(t *testing.T) {
	// 2026-11-29 12:00 UTC: 07:00 in New York (quiet until 07:30 local),
	// 21:00 in Tokyo (quiet until 07:30 next day local), 12:00 in UTC.
	d := PolicyDefaults{Quiet: &QuietHours{Start: 21 * 60, End: 7*60 + 30}, Timezone: "UTC"}
	h := policyHarness(t, 3, PolicyInput{}, d, "America/New_York", "Asia/Tokyo")
	held, ok := h.g.Hold(t0)
	if !ok || len(held.Recipients) != 2 {
		t.Fatalf("held %+v", held)
	}
	h.apply(held)
	if h.status(0) != crewcast.StatusScheduled || !h.g.Recipients[0].HeldUntil.Equal(utc("2026-11-29T12:30:00Z")) {
		t.Fatalf("NY: %s %s", h.status(0), h.g.Recipients[0].HeldUntil)
	}
	if !h.g.Recipients[1].HeldUntil.Equal(utc("2026-11-29T22:30:00Z")) {
		t.Fatalf("Tokyo: %s", h.g.Recipients[1].HeldUntil)
	}
	if _, again := h.g.Hold(t0); again {
		t.Fatal("held twice")
	}
	c := h.claim(t0, 0)
	if len(c.Sends) != 1 || c.Sends[0].Indices[0] != 2 {
		t.Fatalf("claimed %+v", c.Sends)
	}
	c = h.claim(utc("2026-11-29T12:30:00Z"), 0)
	if len(c.Sends) != 1 || c.Sends[0].Indices[0] != 0 {
		t.Fatalf("claimed %+v", c.Sends)
	}
	h.replay()

	// Critical: nothing held.
	hc := policyHarness(t, 3, PolicyInput{Priority: "critical"}, d, "America/New_York", "Asia/Tokyo")
	if _, ok := hc.g.Hold(t0); ok {
		t.Fatal("critical held")
	}
	if c := hc.claim(t0, 0); len(c.Sends) != 3 {
		t.Fatalf("critical claimed %d", len(c.Sends))
	}
	// The group's "off" overrides the server default.
	ho := policyHarness(t, 1, PolicyInput{QuietHours: "off"}, d, "Asia/Tokyo")
	if _, ok := ho.g.Hold(t0); ok {
		t.Fatal("off held")
	}
}

func TestFollowupWaitsForQuietHoursToEnd(t *testing.T) {
	// Sent at 12:00 UTC = 20:50 Tokyo... use a fixed zone: quiet 21:00-07:00
	// in Asia/Tokyo (UTC+9, no DST): a follow-up due at 12:10 UTC (21:10
	// local) waits until 22:00 UTC (07:00 local).
	d := PolicyDefaults{Quiet: &QuietHours{Start: 21 * 60, End: 7 * 60}, Timezone: "Asia/Tokyo"}
	h := policyHarness(t, 1, PolicyInput{Followup: &FollowupInput{After: "10m", Max: 1}}, d)
	h.sendAll(utc("2026-11-29T11:50:00Z")) // 20:50 local: not quiet
	want := utc("2026-11-29T22:00:00Z")
	if got := h.g.NextFollowupAt(h.g.Recipients[0]); !got.Equal(want) {
		t.Fatalf("next %s", got)
	}
	if c := h.followups(utc("2026-11-29T12:00:00Z")); len(c.Sends) != 0 {
		t.Fatal("follow-up in quiet hours")
	}
	if c := h.followups(want); len(c.Sends) != 1 {
		t.Fatal("no follow-up after quiet hours")
	}
	h.replay()
}

func TestHoldLeavesARetryBackingOffAlone(t *testing.T) {
	// Quiet from 12:01 UTC; the first send is not sent (retry in 5 min).
	d := PolicyDefaults{Quiet: &QuietHours{Start: 12*60 + 1, End: 13 * 60}}
	h := policyHarness(t, 1, PolicyInput{}, d)
	c := h.claim(t0, 0)
	h.outcome(c.Sends[0], crewcast.SendResult{}, &crewcast.SendError{Class: crewcast.ClassNotSent, HTTPStatus: 400}, t0)
	if _, ok := h.g.Hold(t0.Add(3 * time.Minute)); ok {
		t.Fatal("held a recipient whose retry is not due")
	}
	if held, ok := h.g.Hold(t0.Add(10 * time.Minute)); !ok || !held.Recipients[0].Until.Equal(t0.Add(time.Hour)) {
		t.Fatalf("retry due in quiet hours: %+v %v", held, ok)
	}
}
