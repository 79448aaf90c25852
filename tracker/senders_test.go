package tracker

import (
	"context"
	"testing"

	"github.com/crewcast/crewcast/store"
)

// LoadSenders paces each registered sender at its mps, and a reload after
// a change (the API's SendersChanged) takes the new rate.
func TestLoadSendersPacesEachNumber(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SendRate = 10 })
	ctx := context.Background()
	if err := e.st.CreateSender(ctx, store.Sender{Number: "+15550100001", Provider: "telnyx", MPS: 2,
		Registration: store.Registration{Kind: "none", Status: "unknown"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.tr.LoadSenders(ctx); err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now()
	if g, _ := e.tr.pacer.take("+15550100001", 50, now); g != 2 {
		t.Fatalf("sender at 2 mps: granted %d, want 2", g)
	}
	if g, _ := e.tr.pacer.take("+15550100002", 50, now); g != 10 {
		t.Fatalf("unregistered number: granted %d, want the default 10", g)
	}
	s, _ := e.st.GetSender(ctx, "+15550100001")
	s.MPS = 5
	if err := e.st.UpdateSender(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := e.tr.LoadSenders(ctx); err != nil {
		t.Fatal(err)
	}
	if g, _ := e.tr.pacer.take("+15550100001", 50, now); g != 5 {
		t.Fatalf("after the change to 5 mps: granted %d, want 5", g)
	}
}
