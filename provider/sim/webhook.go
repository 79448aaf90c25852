package sim

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// stepKind is the kind of one event in a recipient's chain.
type stepKind int

const (
	stepQueued stepKind = iota // Twilio only
	stepSent
	stepFinal
	stepReply
)

// chain is one recipient's planned events.
type chain struct {
	m    *message
	ri   int
	plan recipientPlan
}

type chainStep struct {
	kind stepKind
	plan stepPlan
}

// steps lays out the chain's events from its plan.
func (c *chain) steps() []chainStep {
	p := c.plan
	var out []chainStep
	if c.m.provider == providerTwilio {
		out = append(out, chainStep{stepQueued, p.steps[0]})
		switch {
		case p.outcome == outcomeFailed && twilioNeverSent(p.code):
			out = append(out, chainStep{stepFinal, p.steps[2]})
		case p.outcome == outcomeUnknown:
			out = append(out, chainStep{stepSent, p.steps[1]})
		case p.reorder:
			out = append(out, chainStep{stepFinal, p.steps[2]}, chainStep{stepSent, p.steps[1]})
		default:
			out = append(out, chainStep{stepSent, p.steps[1]}, chainStep{stepFinal, p.steps[2]})
		}
	} else {
		sent, final := chainStep{stepSent, p.steps[0]}, chainStep{stepFinal, p.steps[1]}
		if p.reorder {
			out = append(out, final, sent)
		} else {
			out = append(out, sent, final)
		}
	}
	if p.reply {
		out = append(out, chainStep{stepReply, p.replyEv})
	}
	return out
}

// twilioNeverSent reports the codes whose message ends in status failed
// (queue overflow, account suspended) rather than undelivered.
func twilioNeverSent(code string) bool { return code == "30001" || code == "30002" }

// finalStatus is the recipient's final status word for its outcome.
func (c *chain) finalStatus() string {
	switch {
	case c.m.provider == providerTwilio && c.plan.outcome == outcomeFailed && twilioNeverSent(c.plan.code):
		return "failed"
	case c.m.provider == providerTwilio && c.plan.outcome == outcomeFailed:
		return "undelivered"
	case c.plan.outcome == outcomeFailed:
		return "delivery_failed"
	case c.plan.outcome == outcomeUnknown && c.m.group:
		return "unknown"
	case c.plan.outcome == outcomeUnknown:
		return "delivery_unconfirmed"
	}
	return "delivered"
}

// startChains schedules the first event of each chain; their units were
// reserved at acceptance.
func (s *Sim) startChains(chains []*chain) {
	for _, c := range chains {
		s.runChain(c, c.steps(), 0)
	}
}

// runChain schedules step i of a chain, or ends the chain's unit.
func (s *Sim) runChain(c *chain, steps []chainStep, i int) {
	if i == len(steps) {
		s.disp.release()
		return
	}
	st := steps[i]
	s.disp.after(st.plan.delay, func(ctx context.Context) {
		next := func() { s.runChain(c, steps, i+1) }
		if st.kind == stepReply {
			s.mu.Lock()
			ib := s.inboundLocked(InboundMessage{
				From: c.m.recips[c.ri].number, To: c.m.from, Text: c.plan.text, Provider: c.m.provider,
			}, c.plan.replyID, s.cfg.Now())
			s.mu.Unlock()
			s.postInbound(ctx, ib, st.plan, next)
			return
		}
		s.post(ctx, s.statusPost(c, st), st.plan, next)
	})
}

// post delivers p unless the plan drops it, posts the planned duplicate
// after the original, then calls done.
func (s *Sim) post(ctx context.Context, p *webhookPost, plan stepPlan, done func()) {
	if plan.drop || len(p.targets) == 0 {
		done()
		return
	}
	s.deliver(ctx, p, 0, 1, func() {
		if plan.dup {
			s.disp.add(1)
			s.disp.after(0, func(ctx context.Context) { s.deliver(ctx, p, 0, 1, s.disp.release) })
		}
		done()
	})
}

// webhookPost is one webhook event with its targets and its signed body
// per attempt.
type webhookPost struct {
	event   string // for logs
	targets []target
	build   func(t target, attempt int) (body []byte, h http.Header, err error)
}

// target is one URL and how many attempts it gets.
type target struct {
	url      string // as posted and signed: without fragment
	attempts int
}

// deliver makes attempt n at target ti and schedules what follows: the
// next attempt after the back-off, the next target once a URL's attempts
// are spent, and done once delivered or given up.
func (s *Sim) deliver(ctx context.Context, p *webhookPost, ti, n int, done func()) {
	t := p.targets[ti]
	if s.attempt(ctx, p, t, n) {
		done()
		return
	}
	if ctx.Err() != nil {
		return // stopped: the work is abandoned
	}
	n++
	if n > t.attempts {
		ti, n = ti+1, 1
	}
	if ti == len(p.targets) {
		s.log.Warn("sim webhook given up", "event", p.event)
		done()
		return
	}
	s.disp.after(s.cfg.RetryBackoff, func(ctx context.Context) { s.deliver(ctx, p, ti, n, done) })
}

// attempt posts once and reports a 2xx answer within the timeout.
func (s *Sim) attempt(ctx context.Context, p *webhookPost, t target, n int) bool {
	body, h, err := p.build(t, n)
	if err != nil {
		s.log.Error("sim webhook build", "event", p.event, "err", err)
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		s.log.Error("sim webhook request", "event", p.event, "err", err)
		return false
	}
	req.Header = h
	resp, err := s.client.Do(req)
	if err != nil {
		s.log.Debug("sim webhook attempt failed", "event", p.event, "attempt", n, "err", err)
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // drain so the connection is reused
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		s.log.Debug("sim webhook attempt refused", "event", p.event, "attempt", n, "status", resp.StatusCode)
		return false
	}
	return true
}

// statusPost applies a status event to the message and renders its
// webhook.
func (s *Sim) statusPost(c *chain, st chainStep) *webhookPost {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := c.m.recips[c.ri]
	status, rank := "queued", 0
	switch st.kind {
	case stepSent:
		status, rank = "sent", 1
	case stepFinal:
		status, rank = c.finalStatus(), 2
	}
	if rank > r.rank {
		r.status, r.rank = status, rank
		if st.kind == stepFinal {
			r.completedAt = now
			if c.plan.outcome == outcomeFailed {
				r.code = c.plan.code
			}
		}
		if r.sentAt.IsZero() && status != "failed" && rank > 0 {
			r.sentAt = now
		}
		c.m.updatedAt = now
	}
	if c.m.provider == providerTwilio {
		return s.twilioStatusPostLocked(c, st, status, now)
	}
	return s.telnyxStatusPostLocked(c, st, status, now)
}

// telnyxTargets returns a target per non-empty URL, in order, each with
// the Telnyx attempts per URL.
func (s *Sim) telnyxTargets(urls ...string) []target {
	var ts []target
	for _, u := range nonEmpty(urls...) {
		ts = append(ts, target{url: stripFragment(u), attempts: s.cfg.TelnyxAttemptsPerURL})
	}
	return ts
}

func (s *Sim) telnyxStatusPostLocked(c *chain, st chainStep, status string, now time.Time) *webhookPost {
	v := telnyxViewLocked(c.m, c.ri)
	// The payload reports the event's own status, even when a reordered
	// event fires after a later one.
	v.To[0].Status = status
	if st.kind != stepFinal {
		v.Errors, v.CompletedAt = []tnxError{}, nil
	} else if c.plan.outcome == outcomeFailed && len(v.Errors) == 0 {
		v.Errors = []tnxError{tnxErr(c.plan.code, "Delivery to "+v.To[0].PhoneNumber+" failed.", "")}
	}
	event := "message.sent"
	if st.kind == stepFinal {
		event = "message.finalized"
	}
	// A send's own webhook URLs win over the messaging profile's.
	targets := s.telnyxTargets(cmp.Or(c.m.webhookURL, s.cfg.TelnyxWebhookURL), cmp.Or(c.m.failover, s.cfg.TelnyxFailoverURL))
	return s.telnyxPost(event, st.plan.id, v, now, targets)
}

// telnyxPost renders an event whose data is fixed and whose meta changes
// per attempt; each attempt is signed at the time it is made.
func (s *Sim) telnyxPost(event, eventID string, payload tnxMessage, at time.Time, targets []target) *webhookPost {
	pb, perr := json.Marshal(payload)
	data, derr := json.Marshal(tnxEvent{RecordType: "event", ID: eventID, EventType: event, OccurredAt: tnxTime(at), Payload: pb})
	return &webhookPost{event: event, targets: targets, build: func(t target, n int) ([]byte, http.Header, error) {
		if perr != nil || derr != nil {
			return nil, nil, fmt.Errorf("encode %s: %v %v", event, perr, derr)
		}
		body, err := json.Marshal(tnxEnvelope{Data: data, Meta: tnxMeta{Attempt: n, DeliveredTo: t.url}})
		if err != nil {
			return nil, nil, fmt.Errorf("encode %s: %w", event, err)
		}
		ts := strconv.FormatInt(s.cfg.Now().Unix(), 10)
		sig := ed25519.Sign(s.keys.telnyxPriv, append([]byte(ts+"|"), body...))
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("User-Agent", "crewcast-sim (telnyx-webhooks)")
		h.Set("telnyx-signature-ed25519", base64.StdEncoding.EncodeToString(sig))
		h.Set("telnyx-timestamp", ts)
		return body, h, nil
	}}
}

// twilioTargets returns the callback target; an "#rc=N" fragment
// sets the retry count, as Twilio's connection overrides do.
func (s *Sim) twilioTargets(u string) []target {
	if u == "" {
		u = s.cfg.TwilioWebhookURL
	}
	if u == "" {
		return nil
	}
	return []target{{url: stripFragment(u), attempts: 1 + twilioRetries(u, s.cfg.TwilioRetries)}}
}

// twilioRetries reads rc from the URL fragment, else returns def.
func twilioRetries(u string, def int) int {
	_, frag, ok := strings.Cut(u, "#")
	if !ok {
		return def
	}
	q, err := url.ParseQuery(frag)
	if err != nil {
		return def
	}
	rc, err := strconv.Atoi(q.Get("rc"))
	if err != nil || rc < 0 || rc > 5 {
		return def
	}
	return rc
}

func stripFragment(u string) string {
	base, _, _ := strings.Cut(u, "#")
	return base
}

func (s *Sim) twilioStatusPostLocked(c *chain, st chainStep, status string, now time.Time) *webhookPost {
	r := c.m.recips[c.ri]
	form := url.Values{
		"AccountSid":    {s.keys.twilioSID},
		"ApiVersion":    {twilioAPIVersion},
		"From":          {c.m.from},
		"To":            {r.number},
		"MessageSid":    {c.m.id},
		"SmsSid":        {c.m.id},
		"MessageStatus": {status},
		"SmsStatus":     {status},
	}
	if st.kind == stepFinal && c.plan.outcome == outcomeFailed {
		form.Set("ErrorCode", c.plan.code)
	}
	if status == "delivered" || status == "undelivered" {
		form.Set("RawDlrDoneDate", now.UTC().Format("0601021504"))
	}
	return s.twilioPost("status "+status, st.plan.id, form, s.twilioTargets(c.m.webhookURL))
}

// twilioPost renders a form post signed per target URL, with an
// idempotency token that every retry repeats.
func (s *Sim) twilioPost(event, token string, form url.Values, targets []target) *webhookPost {
	body := []byte(form.Encode())
	return &webhookPost{event: "twilio " + event, targets: targets, build: func(t target, n int) ([]byte, http.Header, error) {
		h := http.Header{}
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		h.Set("User-Agent", "TwilioProxy/1.1 (crewcast-sim)")
		h.Set("X-Twilio-Signature", TwilioSignature(s.keys.twilioTok, t.url, form))
		h.Set("I-Twilio-Idempotency-Token", token)
		return body, h, nil
	}}
}

// TwilioSignature computes X-Twilio-Signature: base64 HMAC-SHA1 keyed with
// the auth token over the URL followed by every parameter name and value,
// names in byte order (repeated names: each distinct value, sorted — as
// Twilio's reference validator does).
func TwilioSignature(authToken, u string, params url.Values) string {
	var b strings.Builder
	b.WriteString(u)
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		vals := append([]string(nil), params[k]...)
		sort.Strings(vals)
		for i, v := range vals {
			if i > 0 && v == vals[i-1] {
				continue
			}
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// postInbound posts an inbound message to its targets.
func (s *Sim) postInbound(ctx context.Context, ib inbound, plan stepPlan, done func()) {
	var p *webhookPost
	if ib.Provider == providerTwilio {
		form := url.Values{
			"MessageSid":    {ib.id},
			"SmsSid":        {ib.id},
			"SmsMessageSid": {ib.id},
			"AccountSid":    {s.keys.twilioSID},
			"From":          {ib.From},
			"To":            {ib.To},
			"Body":          {ib.Text},
			"NumMedia":      {"0"},
			"NumSegments":   {"1"},
			"SmsStatus":     {"received"},
			"ApiVersion":    {twilioAPIVersion},
		}
		var targets []target
		for _, u := range ib.urls {
			targets = append(targets, s.twilioTargets(u)...)
		}
		p = s.twilioPost("inbound", plan.id, form, targets)
	} else {
		v := tnxMessage{
			RecordType: "message", Direction: "inbound", ID: ib.id, Type: "SMS",
			MessagingProfileID: simProfileID, OrganizationID: simOrgID,
			From:     tnxAddr{PhoneNumber: ib.From, Carrier: simCarrier, LineType: simLineType},
			To:       []tnxAddr{{PhoneNumber: ib.To, Status: "webhook_delivered", Carrier: "Telnyx", LineType: "Wireless"}},
			CC:       []tnxAddr{},
			Text:     ib.Text,
			Media:    []tnxMedia{},
			Encoding: "GSM-7", Parts: 1, NumChars: len([]rune(ib.Text)),
			Tags:       []string{},
			ReceivedAt: tnxTime(ib.receivedAt),
			Errors:     []tnxError{},
		}
		if len(ib.CC) > 0 {
			v.Type = "MMS"
		}
		for _, n := range ib.CC {
			v.CC = append(v.CC, tnxAddr{PhoneNumber: n, Carrier: simCarrier, LineType: simLineType})
		}
		p = s.telnyxPost("message.received", plan.id, v, ib.receivedAt, s.telnyxTargets(ib.urls...))
	}
	s.post(ctx, p, plan, done)
}
