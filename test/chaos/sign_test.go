package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/telnyx"
)

// The harness's crafted webhooks must be ones crewcast's real Telnyx
// adapter accepts as genuine and parses to the intended events, or T2, T5
// and T6 would test nothing.
func TestCraftedWebhooksVerifyAndParse(t *testing.T) {
	s, seedB64 := newSigner(make([]byte, 32))
	seed, err := base64.StdEncoding.DecodeString(seedB64)
	if err != nil || len(seed) != 32 {
		t.Fatalf("seed %q: %v", seedB64, err)
	}
	pub := base64.StdEncoding.EncodeToString(s.priv.Public().(ed25519.PublicKey))
	c, err := telnyx.New(telnyx.Config{APIKey: "k", PublicKey: pub, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	parse := func(body []byte, h http.Header) ([]crewcast.Event, error) {
		return c.ParseWebhook(crewcast.WebhookRequest{URL: "http://127.0.0.1/webhooks/telnyx", Header: h, Body: body})
	}

	id := newEventID()
	p := s.sign(statusEvent(id, "message.finalized", "msg1", "+15550100000", "+15552000001", "hi", "delivered", now), now)
	evs, err := parse(p.body, p.hdr)
	if err != nil || len(evs) != 1 {
		t.Fatalf("status event: %v %v", evs, err)
	}
	if e := evs[0]; e.EventID != id || e.Kind != crewcast.KindStatus || e.MessageID != "msg1" || e.To != "+15552000001" || e.Status != crewcast.StatusDelivered {
		t.Errorf("status event parsed as %+v", e)
	}

	p = s.sign(receivedEvent("ev2", "in1", "+15552000001", "+15550100000", "YES", now), now)
	evs, err = parse(p.body, p.hdr)
	if err != nil || len(evs) != 1 || evs[0].Kind != crewcast.KindInbound || evs[0].From != "+15552000001" || evs[0].Text != "YES" {
		t.Fatalf("reply: %+v %v", evs, err)
	}

	// A different key's signature is refused: the test above is not
	// passing by accident.
	other, _ := newSigner([]byte(strings.Repeat("x", 32)))
	p = other.sign(p.body, now)
	if _, err := parse(p.body, p.hdr); !errors.Is(err, crewcast.ErrBadSignature) {
		t.Fatalf("foreign signature: %v; want ErrBadSignature", err)
	}
}

func TestNewEventIDIsUnique(t *testing.T) {
	a, b := newEventID(), newEventID()
	if a == b || len(a) != 36 || strings.Count(a, "-") != 4 {
		t.Errorf("ids %q %q", a, b)
	}
}

func TestParseConfig(t *testing.T) {
	t.Setenv("CREWCAST_CHAOS_ITERATIONS", "7")
	t.Setenv("CREWCAST_CHAOS_SOAK", "90")
	t.Setenv("CREWCAST_CHAOS_ONLY", "t1, T6")
	c, err := parseConfig([]string{"-bin", os.DevNull, "-seed", "3"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if c.iterations != 7 || c.soak != 90*time.Second || !c.only["T1"] || !c.only["T6"] || len(c.only) != 2 || c.seed != 3 {
		t.Errorf("config = %+v", c)
	}
	if c.timeout < time.Duration(c.iterations)*20*time.Second+2*c.soak {
		t.Errorf("timeout %s does not cover the run", c.timeout)
	}
	if _, err := parseConfig([]string{"-bin", os.DevNull, "-iterations", "-1"}, os.Stderr); err == nil {
		t.Error("negative iterations accepted")
	}
}
