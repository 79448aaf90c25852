package server

import "context"

// Senders (docs/design.md §16) as the server reports them.

// senderHealth answers GET /v1/senders' healthy from the providers this
// server is configured with: a sender whose provider has no credentials
// here cannot send. sent_last_hour is counted by httpapi from the store.
type senderHealth struct {
	configured map[string]bool
	up         func(provider string) bool // the provider's circuit is not open
}

// Healthy: this server has the provider's credentials and its circuit is
// not open (tracker/circuit.go).
func (h senderHealth) Healthy(provider string) bool {
	return h.configured[provider] && (h.up == nil || h.up(provider))
}

// newSenderHealth lists the providers whose webhook verifiers (and so
// credentials) are configured.
func newSenderHealth[P any](providers map[string]P, up func(string) bool) senderHealth {
	h := senderHealth{configured: map[string]bool{}, up: up}
	for name := range providers {
		h.configured[name] = true
	}
	return h
}

// sendersChanged paces the senders again after a change through the API.
// Other nodes read the senders when they start.
func (s *Server) sendersChanged(ctx context.Context) {
	if err := s.tr.LoadSenders(ctx); err != nil {
		s.cfg.Logger.Warn("reload senders", "err", err)
	}
}
