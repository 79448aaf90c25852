package sim

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

const (
	providerTelnyx = "telnyx"
	providerTwilio = "twilio"
)

// Send is one ledger row: one accepted send to one recipient. A group MMS
// records one row per recipient, all with the group's message id.
type Send struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	From     string `json:"from"`
	To       string `json:"to"`
	Text     string `json:"text"`
	// Channel is "voice" for a call (Text is what it said); "" for a message.
	Channel    string    `json:"channel,omitempty"`
	ReceivedAt time.Time `json:"received_at"`
}

// Duplicate is a (from, to, text) that was accepted more than once.
type Duplicate struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Text  string `json:"text"`
	Count int    `json:"count"`
}

// Sim is a running simulator. Create it with New and always Stop it: New
// starts the webhook workers.
type Sim struct {
	cfg    Config
	keys   secrets
	token  string // the control plane's bearer token
	dec    *decider
	disp   *dispatcher
	client *http.Client
	log    *slog.Logger
	mux    *http.ServeMux

	mu          sync.Mutex
	faults      Faults
	ledger      []Send
	messages    map[string]*message   // provider|id
	idem        map[string]idemRecord // provider|Idempotency-Key
	optOuts     map[string]bool       // see optOutKey
	lastSender  map[string]string     // our number → provider that last sent from it
	threads     map[string]*message   // provider|our number|their number → latest message
	mailbox     *MailBox              // the SMTP server (mail.go), nil until StartSMTP
	calls       []*Call               // calls placed (voice.go)
	callIdem    map[string]*Call      // I-Twilio-Idempotency-Token → call
	voiceScript map[string]string     // number → how they answer calls
	stopped     bool
	quit        chan struct{} // closed when Stop begins
	srv         *http.Server
	serveDone   chan struct{}
	provLn      providerListeners // StartProvider's (outage.go)
	listenURL   string
	stopOnce    sync.Once
	stopResult  error
}

// idemRecord remembers which message an Idempotency-Key created.
type idemRecord struct {
	hash string
	id   string
}

// message is the simulator's record of one accepted send.
type message struct {
	provider   string
	id         string
	group      bool
	from       string
	recips     []*recipientState
	text       string
	subject    string
	media      []string
	webhookURL string // Telnyx webhook_url / Twilio StatusCallback
	failover   string // Telnyx webhook_failover_url
	receivedAt time.Time
	updatedAt  time.Time
}

// recipientState is one recipient's status in the provider's vocabulary.
type recipientState struct {
	number      string
	status      string
	rank        int
	code        string
	sentAt      time.Time
	completedAt time.Time
}

// New checks cfg, derives the keys and starts the webhook workers.
func New(cfg Config) (*Sim, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("sim config: %w", err)
	}
	cfg = cfg.withDefaults()
	s := &Sim{
		cfg:        cfg,
		keys:       newSecrets(cfg),
		dec:        newDecider(cfg.Seed),
		log:        cfg.Logger,
		faults:     cfg.Faults.withDefaults(),
		messages:   map[string]*message{},
		idem:       map[string]idemRecord{},
		optOuts:    map[string]bool{},
		lastSender: map[string]string{},
		callIdem:   map[string]*Call{}, voiceScript: map[string]string{},
		threads: map[string]*message{},
		quit:    make(chan struct{}),
	}
	s.token = cfg.ControlToken
	if s.token == "" {
		s.token = rand.Text()
	}
	s.client = cfg.HTTPClient
	if s.client == nil {
		s.client = &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConnsPerHost: cfg.Workers,
			IdleConnTimeout:     30 * time.Second,
		}}
	}
	s.mux = s.routes()
	s.disp = newDispatcher(cfg.Workers, cfg.MaxPending)
	return s, nil
}

// Handler serves the provider APIs and the /sim control plane. It must be
// served by a net/http server: the accept-timeout fault aborts the
// connection with http.ErrAbortHandler.
func (s *Sim) Handler() http.Handler { return s.mux }

// Start listens on addr (e.g. "127.0.0.1:0") and serves Handler until Stop.
// It returns the base URL, e.g. "http://127.0.0.1:9090".
func (s *Sim) Start(ctx context.Context, addr string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return "", ErrStopped
	}
	if s.srv != nil {
		return "", errors.New("sim already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}
	s.srv = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.serveDone = make(chan struct{})
	s.listenURL = "http://" + ln.Addr().String()
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("sim server stopped", "err", err)
		}
	}(s.srv, s.serveDone)
	return s.listenURL, nil
}

// abandon ends the ambiguous send: the message is recorded and its webhooks
// flow, but no answer is written. It holds the request for
// Config.AcceptTimeoutHold (or until the client gives up or Stop), then
// closes the connection.
func (s *Sim) abandon(r *http.Request) {
	if s.cfg.AcceptTimeoutHold > 0 {
		t := time.NewTimer(s.cfg.AcceptTimeoutHold)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
		case <-s.quit:
		}
	}
	panic(http.ErrAbortHandler) // net/http closes the connection without a response
}

// URL returns the base URL after Start, or "".
func (s *Sim) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listenURL
}

// Stop shuts the server down (if started), cancels webhook posts in flight,
// abandons queued ones and waits for every goroutine, or for ctx. It is
// idempotent; later calls return the first call's result.
func (s *Sim) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		close(s.quit)
		srv, done, box := s.srv, s.serveDone, s.mailbox
		s.mu.Unlock()
		s.stopProviders()
		var errs []error
		if box != nil {
			if err := box.Close(); err != nil {
				errs = append(errs, fmt.Errorf("smtp: %w", err))
			}
		}
		if srv != nil {
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("shutdown: %w", err))
				_ = srv.Close() // forced: the deadline passed
			}
			<-done
		}
		if err := s.disp.stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("webhook workers: %w", err))
		}
		s.client.CloseIdleConnections()
		s.stopResult = errors.Join(errs...)
	})
	return s.stopResult
}

// ControlToken is the bearer token of the /sim/* control routes.
func (s *Sim) ControlToken() string { return s.token }

// Keys returns the credentials clients need.
func (s *Sim) Keys() Keys { return s.keys.public() }

// TelnyxPublicKey returns the key that verifies the Telnyx webhooks.
func (s *Sim) TelnyxPublicKey() ed25519.PublicKey {
	return s.keys.telnyxPriv.Public().(ed25519.PublicKey)
}

// Ledger returns every accepted send, oldest first.
func (s *Sim) Ledger() []Send {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ledger)
}

// Duplicates returns each (from, to, text) accepted more than once, in the
// order of its first acceptance.
func (s *Sim) Duplicates() []Duplicate {
	s.mu.Lock()
	defer s.mu.Unlock()
	type key struct{ from, to, text string }
	counts := map[key]int{}
	var order []key
	for _, l := range s.ledger {
		k := key{l.From, l.To, l.Text}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	out := []Duplicate{}
	for _, k := range order {
		if n := counts[k]; n > 1 {
			out = append(out, Duplicate{From: k.from, To: k.to, Text: k.text, Count: n})
		}
	}
	return out
}

// Reset clears the ledger, the Idempotency-Key records and the opt-outs.
// Messages already accepted keep their webhooks and stay readable by GET.
func (s *Sim) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ledger = nil
	s.idem = map[string]idemRecord{}
	s.optOuts = map[string]bool{}
	s.calls, s.callIdem = nil, map[string]*Call{}
	if s.mailbox != nil {
		s.mailbox.Reset()
	}
}

// Faults returns the current knobs, with the default lists filled in.
func (s *Sim) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneFaults(s.faults)
}

// SetFaults replaces the knobs for sends accepted from now on; empty lists
// mean the defaults.
func (s *Sim) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	s.faults = cloneFaults(f).withDefaults()
	s.mu.Unlock()
	return s.syncListeners()
}

func cloneFaults(f Faults) Faults {
	f.FailCodes = slices.Clone(f.FailCodes)
	f.TwilioFailCodes = slices.Clone(f.TwilioFailCodes)
	f.ReplyTexts = slices.Clone(f.ReplyTexts)
	f.Outages = maps.Clone(f.Outages)
	return f
}

// Pending returns the number of recipient event chains (and duplicate
// posts) whose webhooks are not finished.
func (s *Sim) Pending() int { return s.disp.pending() }

// WaitIdle blocks until every webhook planned so far has been posted, given
// up on or dropped, or ctx ends. Tests use it to assert that something was
// never posted.
func (s *Sim) WaitIdle(ctx context.Context) error { return s.disp.waitIdle(ctx) }

// InboundMessage is a message from a person to one of our numbers.
type InboundMessage struct {
	From string `json:"from"` // the person
	To   string `json:"to"`   // our number
	Text string `json:"text"`
	// Provider is "telnyx" or "twilio"; empty: the provider that last sent
	// from To, else telnyx.
	Provider string `json:"provider,omitempty"`
	// CC overrides the participants of a group thread; empty: when From was
	// a recipient of the latest group MMS from To, its other recipients.
	CC []string `json:"cc,omitempty"`
}

// Inbound injects a text from a person (from) to our number (to); see
// InboundMessage for the provider rule. STOP opts the sender out.
func (s *Sim) Inbound(ctx context.Context, from, to, text string) (string, error) {
	return s.Inject(ctx, InboundMessage{From: from, To: to, Text: text})
}

// Inject posts a signed inbound webhook for in (message.received for
// Telnyx, an inbound form post for Twilio) and returns the inbound message
// id. Opt-out keywords take effect before it returns.
func (s *Sim) Inject(ctx context.Context, in InboundMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !validNumber(in.From) || !validNumber(in.To) {
		return "", errors.New("inbound from and to must be E.164 numbers")
	}
	for _, n := range in.CC {
		if !validNumber(n) {
			return "", errors.New("inbound cc must hold E.164 numbers")
		}
	}
	if in.Provider != "" && in.Provider != providerTelnyx && in.Provider != providerTwilio {
		return "", fmt.Errorf("inbound provider %q: want telnyx or twilio", in.Provider)
	}
	if err := s.disp.reserve(1); err != nil {
		return "", err
	}
	s.mu.Lock()
	if in.Provider == "" {
		in.Provider = s.lastSender[in.To]
		if in.Provider == "" {
			in.Provider = providerTelnyx
		}
	}
	var id, evID string
	s.dec.draw(func(d *draws) {
		id = d.messageID(in.Provider)
		evID = d.step(Faults{}, in.Provider).id
	})
	ib := s.inboundLocked(in, id, s.cfg.Now())
	s.mu.Unlock()
	s.disp.after(0, func(ctx context.Context) {
		s.postInbound(ctx, ib, stepPlan{id: evID}, s.disp.release)
	})
	return id, nil
}

// inbound is a resolved inbound message, ready to post.
type inbound struct {
	InboundMessage
	id         string
	receivedAt time.Time
	urls       []string // webhook targets in order
}

// inboundLocked resolves cc and targets and applies opt-out keywords.
// Callers hold s.mu.
func (s *Sim) inboundLocked(in InboundMessage, id string, now time.Time) inbound {
	thread := s.threads[threadKey(in.Provider, in.To, in.From)]
	if len(in.CC) == 0 && thread != nil && thread.group {
		for _, r := range thread.recips {
			if r.number != in.From {
				in.CC = append(in.CC, r.number)
			}
		}
	}
	ib := inbound{InboundMessage: in, id: id, receivedAt: now}
	switch in.Provider {
	case providerTwilio:
		ib.urls = nonEmpty(s.cfg.TwilioWebhookURL)
		if len(ib.urls) == 0 && thread != nil {
			ib.urls = nonEmpty(thread.webhookURL)
		}
	default:
		ib.urls = nonEmpty(s.cfg.TelnyxWebhookURL, s.cfg.TelnyxFailoverURL)
		if len(ib.urls) == 0 && thread != nil {
			ib.urls = nonEmpty(thread.webhookURL, thread.failover)
		}
	}
	switch keyword(in.Text) {
	case kwStop:
		s.optOuts[optOutKey(in.Provider, in.To, in.From)] = true
	case kwStart:
		delete(s.optOuts, optOutKey(in.Provider, in.To, in.From))
	}
	return ib
}

// optOutKey scopes an opt-out as each provider does: Telnyx block rules
// cover the whole messaging profile (every one of our numbers); Twilio's
// cover one of our numbers.
func optOutKey(provider, ours, theirs string) string {
	if provider == providerTwilio {
		return providerTwilio + "|" + ours + "|" + theirs
	}
	return providerTelnyx + "|" + theirs
}

func threadKey(provider, ours, theirs string) string {
	return provider + "|" + ours + "|" + theirs
}

type kw int

const (
	kwNone kw = iota
	kwStop
	kwStart
)

// keyword recognises the standard carrier opt-out and opt-in keywords.
func keyword(text string) kw {
	switch strings.ToUpper(strings.TrimSpace(text)) {
	case "STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT":
		return kwStop
	case "START", "UNSTOP":
		return kwStart
	}
	return kwNone
}

// record stores an accepted message, its ledger rows and its routing
// facts. Callers hold s.mu.
func (s *Sim) recordLocked(m *message) {
	s.messages[m.provider+"|"+m.id] = m
	for _, r := range m.recips {
		s.ledger = append(s.ledger, Send{ID: m.id, Provider: m.provider, From: m.from, To: r.number, Text: m.text, ReceivedAt: m.receivedAt})
		s.threads[threadKey(m.provider, m.from, r.number)] = m
	}
	s.lastSender[m.from] = m.provider
}

func nonEmpty(urls ...string) []string {
	var out []string
	for _, u := range urls {
		if u != "" {
			out = append(out, u)
		}
	}
	return out
}

func validWebhookURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// validNumber accepts E.164: "+", a non-zero digit, up to 15 digits.
func validNumber(s string) bool {
	if len(s) < 3 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
