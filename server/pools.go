package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/crewcast/crewcast/httpapi"
	"github.com/crewcast/crewcast/store"
)

// DemoPool is the sender pool the demo registers: two numbers on each
// simulated provider (docs/design.md §16), so `"pool":"demo"` shows sticky
// numbers and, with a simulated outage, failover.
const DemoPool = "demo"

// demoPoolSenders are the demo pool's numbers (fictional 555-01xx).
var demoPoolSenders = []store.Sender{
	{Number: "+15550100201", Provider: ProviderTelnyx, Pool: DemoPool, MPS: 10},
	{Number: "+15550100202", Provider: ProviderTelnyx, Pool: DemoPool, MPS: 10},
	{Number: "+15550100211", Provider: ProviderTwilio, Pool: DemoPool, MPS: 10},
	{Number: "+15550100212", Provider: ProviderTwilio, Pool: DemoPool, MPS: 10},
}

// EnsureDemoPool registers the demo pool's senders that are missing (an
// operator's removal on an earlier run of a kept demo is respected only for
// numbers they re-added elsewhere: a missing number comes back) and paces
// and routes them at once. Only for the demo provider.
func (s *Server) EnsureDemoPool(ctx context.Context) error {
	if s.cfg.Provider != ProviderDemo {
		return errors.New("the demo pool is the demo provider's")
	}
	now := s.cfg.Clock.Now()
	for _, d := range demoPoolSenders {
		d.Registration = store.Registration{Kind: store.RegistrationNone, Status: store.RegistrationApproved}
		d.CreatedAt, d.UpdatedAt = now, now
		if err := s.st.CreateSender(ctx, d); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("demo pool: %w", err)
		}
	}
	return s.tr.LoadSenders(ctx)
}

// providerStates answers GET /v1/providers from the tracker's circuits.
func (s *Server) providerStates() []httpapi.ProviderState {
	var out []httpapi.ProviderState
	for _, h := range s.tr.ProviderHealth() {
		out = append(out, httpapi.ProviderState{Name: h.Name, Configured: true, Circuit: h.Circuit, FailuresLastMinute: h.FailuresLastMinute})
	}
	return out
}
