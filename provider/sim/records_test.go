package sim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
)

// TestTelnyxListSentReadsTheDetailRecords: the Telnyx adapter's ListSent
// (what a group reads after a database failover) finds, through the
// simulator's Detail Record Search, every message sent from one number
// since a time, across pages, and none from another number.
func TestTelnyxListSentReadsTheDetailRecords(t *testing.T) {
	cap := newCapture(t)
	s, base := startSim(t, sim.Config{TelnyxWebhookURL: cap.srv.URL + "/t", Faults: sim.Faults{DelayMS: [2]int{0, 0}}})
	ctx := context.Background()
	k := s.Keys()
	tc, err := telnyx.New(telnyx.Config{APIKey: k.TelnyxAPIKey, PublicKey: k.TelnyxPublicKey, APIBase: base})
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Second)
	ids := map[string]string{}
	for i := range 57 { // more than one page of 50
		to := fmt.Sprintf("+1555020%04d", i)
		res, err := tc.Send(ctx, crewcast.SendRequest{From: "+15550100000", To: []string{to}, Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		ids[to] = res.MessageID
	}
	if _, err := tc.Send(ctx, crewcast.SendRequest{From: "+15550100009", To: []string{"+15550209999"}, Text: "x"}); err != nil {
		t.Fatal(err)
	}
	got, err := tc.ListSent(ctx, "+15550100000", since)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ids) {
		t.Fatalf("%d records, want %d", len(got), len(ids))
	}
	for _, m := range got {
		if ids[m.To] != m.MessageID || m.From != "+15550100000" || m.CreatedAt.Before(since) {
			t.Errorf("record %+v; sent %q to %s", m, ids[m.To], m.To)
		}
	}
	later, err := tc.ListSent(ctx, "+15550100000", time.Now().Add(time.Hour))
	if err != nil || len(later) != 0 {
		t.Fatalf("records after now: %v %v", later, err)
	}
}

// TestTwilioListSentReadsTheMessageList: the Twilio adapter's ListSent
// finds, through the simulator's message list, every message sent from one
// number since a time with its body, across pages, none from another.
func TestTwilioListSentReadsTheMessageList(t *testing.T) {
	cap := newCapture(t)
	s, base := startSim(t, sim.Config{TwilioWebhookURL: cap.srv.URL + "/w", Faults: sim.Faults{DelayMS: [2]int{0, 0}}})
	ctx := context.Background()
	k := s.Keys()
	wc, err := twilio.New(twilio.Config{AccountSID: k.TwilioAccountSID, AuthToken: k.TwilioAuthToken, APIBase: base})
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	ids := map[string]string{}
	for i := range 12 {
		to := fmt.Sprintf("+1555030%04d", i)
		res, err := wc.Send(ctx, crewcast.SendRequest{From: "+15550100000", To: []string{to}, Text: "Crew call " + to})
		if err != nil {
			t.Fatal(err)
		}
		ids[to] = res.MessageID
	}
	if _, err := wc.Send(ctx, crewcast.SendRequest{From: "+15550100009", To: []string{"+15550309999"}, Text: "x"}); err != nil {
		t.Fatal(err)
	}
	got, err := wc.ListSent(ctx, "+15550100000", since)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ids) {
		t.Fatalf("%d messages, want %d", len(got), len(ids))
	}
	for _, m := range got {
		if ids[m.To] != m.MessageID || m.Text != "Crew call "+m.To || m.From != "+15550100000" {
			t.Errorf("message %+v; sent %q to %s", m, ids[m.To], m.To)
		}
	}
}
