package httpapi

import "net/http"

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
