package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Per-provider outages (docs/design.md §16): POST /sim/faults
// {"provider":"telnyx","outage":"refuse"|"503"|"off"}. During an outage
// nothing reaches that provider's ledger; the other provider is untouched.
//
//   - "503": every API call to the provider is answered 503 with the
//     provider's error body and no message id (a definite failure).
//   - "refuse": the provider refuses connections. On the provider's own
//     listener (StartProvider) the listener is closed, so a client gets a
//     real "connection refused" (it certainly sent nothing) and open
//     connections are cut; the listener comes back on the same address
//     when the outage ends. On the shared listener, where the connection
//     is already open, the request is dropped unread: the connection is
//     closed without an answer (a client cannot tell this from a send
//     lost after it was written, and must treat it as ambiguous).
//   - "off": the outage ends.
const (
	OutageOff    = "off"
	OutageRefuse = "refuse"
	Outage503    = "503"
)

// validOutages checks Faults.Outages.
func validOutages(o map[string]string) error {
	for p, v := range o {
		if p != providerTelnyx && p != providerTwilio {
			return fmt.Errorf("outages: unknown provider %q (telnyx or twilio)", p)
		}
		if v != OutageRefuse && v != Outage503 {
			return fmt.Errorf("outages[%s]: %q is no outage (refuse or 503; off ends it)", p, v)
		}
	}
	return nil
}

// setOutageBody is POST /sim/faults' body: any knobs, and optionally one
// provider's outage.
type setOutageBody struct {
	Faults
	Provider string `json:"provider"`
	Outage   string `json:"outage"`
}

// apply folds the provider's outage into the knobs.
func (b *setOutageBody) apply() (Faults, error) {
	f := b.Faults
	if b.Provider == "" && b.Outage == "" {
		return f, nil
	}
	if b.Provider == "" || b.Outage == "" {
		return f, errors.New(`an outage needs both "provider" and "outage"`)
	}
	o := make(map[string]string, len(f.Outages)+1)
	for k, v := range f.Outages {
		o[k] = v
	}
	if b.Outage == OutageOff {
		delete(o, b.Provider)
	} else {
		o[b.Provider] = b.Outage
	}
	if b.Provider != providerTelnyx && b.Provider != providerTwilio {
		return f, fmt.Errorf("provider %q: telnyx or twilio", b.Provider)
	}
	f.Outages = o
	return f, nil
}

// outage returns provider's current outage ("" when none).
func (s *Sim) outage(provider string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.Outages[provider]
}

// outageGate answers a provider API call during the provider's outage.
func (s *Sim) outageGate(provider string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch s.outage(provider) {
		case Outage503:
			if provider == providerTwilio {
				writeTwilioError(w, http.StatusServiceUnavailable, 20503, "Service Unavailable")
			} else {
				writeTelnyxError(w, http.StatusServiceUnavailable, tnxErr("10007", "The service is temporarily unavailable.", ""))
			}
		case OutageRefuse:
			dropConnection(w)
		default:
			next(w, r)
		}
	}
}

// dropConnection closes the request's connection unanswered, with a reset
// rather than an orderly close where the platform allows.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// providerListener is one provider's own address (StartProvider).
type providerListener struct {
	addr string // kept across outages: the listener comes back here
	srv  *http.Server
	done chan struct{}
}

type providerListeners struct {
	mu      sync.Mutex
	by      map[string]*providerListener
	stopped bool
}

// StartProvider listens on addr for provider's API alone (the same handler
// as Start's), so that a "refuse" outage can refuse its connections for
// real. It returns the base URL to configure as that provider's API base.
func (s *Sim) StartProvider(ctx context.Context, provider, addr string) (string, error) {
	if provider != providerTelnyx && provider != providerTwilio {
		return "", fmt.Errorf("provider %q: telnyx or twilio", provider)
	}
	pl := &s.provLn
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.stopped {
		return "", ErrStopped
	}
	if pl.by == nil {
		pl.by = map[string]*providerListener{}
	}
	if pl.by[provider] != nil {
		return "", fmt.Errorf("%s listener already started", provider)
	}
	l := &providerListener{addr: addr}
	if err := s.listenProvider(ctx, l); err != nil {
		return "", err
	}
	pl.by[provider] = l
	if s.outage(provider) == OutageRefuse {
		l.close()
	}
	return "http://" + l.addr, nil
}

func (s *Sim) listenProvider(ctx context.Context, l *providerListener) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", l.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	l.addr = ln.Addr().String()
	l.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	l.done = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		_ = srv.Serve(ln)
	}(l.srv, l.done)
	return nil
}

// close closes the listener and every connection on it.
func (l *providerListener) close() {
	if l.srv == nil {
		return
	}
	_ = l.srv.Close()
	<-l.done
	l.srv = nil
}

// syncListeners closes the listener of each provider in a "refuse" outage
// and opens again, on the same address, those whose outage ended.
func (s *Sim) syncListeners() error {
	pl := &s.provLn
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.stopped {
		return nil
	}
	var errs []error
	for p, l := range pl.by {
		switch down := s.outage(p) == OutageRefuse; {
		case down:
			l.close()
		case l.srv == nil:
			if err := s.listenProvider(context.Background(), l); err != nil {
				errs = append(errs, fmt.Errorf("%s listener back on %s: %w", p, l.addr, err))
			}
		}
	}
	return errors.Join(errs...)
}

// stopProviders closes every provider listener for good (Stop).
func (s *Sim) stopProviders() {
	pl := &s.provLn
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.stopped = true
	for _, l := range pl.by {
		l.close()
	}
}
