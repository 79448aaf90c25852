package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/crewcast/crewcast/group"
)

// GET /v1/providers (docs/design.md §16): each provider, whether this
// server has its credentials, its circuit and its definite failures of the
// last minute.

// ProviderState is one provider as GET /v1/providers shows it.
type ProviderState struct {
	Name               string `json:"name"`
	Configured         bool   `json:"configured"`
	Circuit            string `json:"circuit"`
	FailuresLastMinute int    `json:"failures_last_minute"`
}

// ProviderStates lists the providers' states (Config.ProviderStates).
type ProviderStates func() []ProviderState

// knownProviders are the providers crewcast can send through, listed
// whether configured or not.
var knownProviders = []string{"telnyx", "twilio"}

func (a *api) listProviders(w http.ResponseWriter, r *http.Request) error {
	by := map[string]ProviderState{}
	if a.cfg.ProviderStates != nil {
		for _, p := range a.cfg.ProviderStates() {
			by[p.Name] = p
		}
	}
	out := struct {
		Providers []ProviderState `json:"providers"`
	}{Providers: make([]ProviderState, 0, len(knownProviders))}
	for _, name := range knownProviders {
		p, ok := by[name]
		if !ok {
			p = ProviderState{Name: name, Circuit: "closed"}
		}
		out.Providers = append(out.Providers, p)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// previewPoolFrom plans a pool group's preview from the pool's first
// number, as the tracker does at create (docs/design.md §16): a pool with
// no sender, or both from and pool, is a field error on "pool", as at
// create.
func (a *api) previewPoolFrom(ctx context.Context, req *group.Request) error {
	if req.Pool == "" {
		return nil
	}
	if req.From != "" {
		return fieldErrorsTotal([]group.FieldError{{Field: "pool", Message: "give from or pool, not both"}}, 1)
	}
	ss, err := a.store.ListSenders(ctx)
	if err != nil {
		return err
	}
	for _, s := range ss { // by pool then number
		if s.Pool == req.Pool {
			req.From = s.Number
			return nil
		}
	}
	return fieldErrorsTotal([]group.FieldError{{Field: "pool", Message: fmt.Sprintf("no registered sender is in pool %q", req.Pool), Input: req.Pool}}, 1)
}

// checkPoolRegistered is checkRegistered for a pool group: any number of
// the pool that may not send yet refuses it (sender_unregistered, on
// "pool"), since any person may be texted from any of them.
func (a *api) checkPoolRegistered(ctx context.Context, pool string) error {
	if a.cfg.AllowUnregistered || pool == "" {
		return nil
	}
	ss, err := a.store.ListSenders(ctx)
	if err != nil {
		return err
	}
	for _, s := range ss {
		if s.Pool == pool && s.NeedsApproval() {
			e := unregistered(s)
			e.Fields = []group.FieldError{{Field: "pool", Message: e.Message}}
			return e
		}
	}
	return nil
}
