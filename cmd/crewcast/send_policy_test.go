package main

import (
	"strings"
	"testing"
	"time"
)

func TestSendPolicyFlags(t *testing.T) {
	e := newCLIEnv(t)
	at := time.Now().Add(48 * time.Hour).In(time.FixedZone("", -5*3600)).Truncate(time.Second).Format(time.RFC3339)
	code, out, errs := e.client("send", "send", "--from", "+15550100000", "--to", "+15550100001", "--text", "Crew call",
		"--followup", "10m", "--followup-max", "2", "--escalate-to", "Supervisors", "--escalate-to", "+1 555 010 9999",
		"--escalate-after", "30m", "--send-at", at, "--priority", "critical", "--quiet-hours", "off", "--no-follow")
	if code != 0 || strings.TrimSpace(out) != "grp1" {
		t.Fatalf("send: %d %q %q", code, out, errs)
	}
	e.fake.mu.Lock()
	p := e.fake.lastReq.PolicyInput
	e.fake.mu.Unlock()
	if p.Followup == nil || p.Followup.After != "10m0s" || p.Followup.Max != 2 {
		t.Fatalf("followup %+v", p.Followup)
	}
	if p.Escalate == nil || p.Escalate.After != "30m0s" || strings.Join(p.Escalate.Crews, ",") != "Supervisors" || strings.Join(p.Escalate.To, ",") != "+1 555 010 9999" {
		t.Fatalf("escalate %+v", p.Escalate)
	}
	if p.SendAt != at || p.Priority != "critical" || p.QuietHours != "off" {
		t.Fatalf("policy %+v", p)
	}
	for _, bad := range [][]string{
		{"--escalate-to", "Supervisors"},
		{"--escalate-after", "5m"},
		{"--send-at", "tomorrow 7am"},
		{"--followup", "1m", "--followup-max", "0"},
		{"--followup-text", "again"},
	} {
		args := append([]string{"send", "--from", "+15550100000", "--to", "+15550100001", "--text", "x", "--no-follow"}, bad...)
		if code, _, errs := e.client("send", args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d %q", bad, code, errs)
		}
	}
}
