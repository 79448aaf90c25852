package sim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
)

// How crewcast's own provider clients see each outage: a refusal on the
// provider's own listener is not_sent (no connection: certainly nothing
// sent, safe to send again elsewhere); a 503 is an HTTP 503 with no
// message id (its class is the adapters' classification's to decide:
// today uncertain). Nothing reaches the ledger.
func TestOutagesAsTheClientsSeeThem(t *testing.T) {
	s, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = s.Stop(sctx)
	})
	shared, err := s.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tnxBase, err := s.StartProvider(ctx, "telnyx", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k := s.Keys()
	tc, err := telnyx.New(telnyx.Config{APIKey: k.TelnyxAPIKey, PublicKey: k.TelnyxPublicKey, APIBase: tnxBase})
	if err != nil {
		t.Fatal(err)
	}
	wc, err := twilio.New(twilio.Config{AccountSID: k.TwilioAccountSID, AuthToken: k.TwilioAuthToken, APIBase: shared})
	if err != nil {
		t.Fatal(err)
	}
	req := crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100001"}, Text: "Crew call 7am"}
	for _, tc := range []struct {
		name     string
		provider crewcast.Provider
		outage   string
	}{{"telnyx refuse", tc, "refuse"}, {"telnyx 503", tc, "503"}, {"twilio 503", wc, "503"}} {
		f := s.Faults()
		f.Outages = map[string]string{tc.provider.Name(): tc.outage}
		if err := s.SetFaults(f); err != nil {
			t.Fatal(err)
		}
		res, err := tc.provider.Send(ctx, req)
		var se *crewcast.SendError
		switch {
		case !errors.As(err, &se) || res.MessageID != "":
			t.Errorf("%s: %+v, %v; want a SendError and no message id", tc.name, res, err)
		case tc.outage == "refuse" && se.Class != crewcast.ClassNotSent:
			t.Errorf("%s: class %s, want not_sent", tc.name, se.Class)
		case tc.outage == "503" && se.HTTPStatus != 503:
			t.Errorf("%s: HTTP %d, want 503", tc.name, se.HTTPStatus)
		}
		t.Logf("%s: class %s, http %d", tc.name, se.Class, se.HTTPStatus)
	}
	if l := s.Ledger(); len(l) != 0 {
		t.Fatalf("ledger after outages: %+v", l)
	}
}
