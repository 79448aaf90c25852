package web_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/errcode"
	"github.com/crewcast/crewcast/web"
)

// fakeAPI is an in-memory stand-in for crewcast's /v1 API, just faithful
// enough to drive the board: cookie sessions, groups, journal events,
// operator actions and SSE change notifications. It implements the
// contract the board relies on (see the package report), not the domain.

type fakeCounts struct {
	Pending      int `json:"pending"`
	Sending      int `json:"sending"`
	Sent         int `json:"sent"`
	Delivered    int `json:"delivered"`
	Failed       int `json:"failed"`
	Unconfirmed  int `json:"unconfirmed"`
	Unknown      int `json:"unknown"`
	OptedOut     int `json:"opted_out"`
	Canceled     int `json:"canceled"`
	Replied      int `json:"replied"`
	Acknowledged int `json:"acknowledged"`
	AckYes       int `json:"ack_yes"`
	AckNo        int `json:"ack_no"`
	NoReply      int `json:"no_reply"`
}

type fakeRecipient struct {
	Number            string     `json:"number"`
	Name              string     `json:"name"`
	Status            string     `json:"status"`
	Attempts          int        `json:"attempts"`
	ProviderMessageID string     `json:"provider_message_id"`
	ErrorCode         string     `json:"error_code"`
	ErrorClass        string     `json:"error_class"`
	ErrorDetail       string     `json:"error_detail"`
	ErrorURL          string     `json:"error_url"`
	SentAt            *time.Time `json:"sent_at"`
	DeliveredAt       *time.Time `json:"delivered_at"`
	FailedAt          *time.Time `json:"failed_at"`
	RepliedAt         *time.Time `json:"replied_at"`
	ReplyText         string     `json:"reply_text"`
	Ack               string     `json:"ack"`
}

type fakeGroup struct {
	ID          string          `json:"id"`
	Status      string          `json:"status"`
	Mode        string          `json:"mode"`
	From        string          `json:"from"`
	Text        string          `json:"text"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	PauseReason string          `json:"pause_reason"`
	Seq         int             `json:"seq"`
	Counts      fakeCounts      `json:"counts"`
	Recipients  []fakeRecipient `json:"recipients,omitempty"`
}

type fakeEvent struct {
	Seq    int            `json:"seq"`
	Type   string         `json:"type"`
	Time   time.Time      `json:"time"`
	Data   map[string]any `json:"data"`
	number string         // "" for group-wide events
}

type fieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
	Input   string `json:"input,omitempty"`
}

const (
	fakeKey     = "cc_test_4f8a1c2e9b7d" // admin scope
	readKey     = "cc_read_77c0e1d2a3b4" // read scope only
	cookieName  = "crewcast_session"
	progressGap = 300 * time.Millisecond
)

var e164 = regexp.MustCompile(`^\+[1-9]\d{7,14}$`)

type fakeAPI struct {
	t *testing.T

	// asUser makes the admin key's session read as a signed-in user's
	// (user_id, email, role), for the pages only users see (#/account).
	asUser bool

	mu       sync.Mutex
	sessions map[string]string // session id → key
	streams  []string          // request URIs of SSE connections
	groups   map[string]*fakeGroup
	order    []string // newest first
	events   map[string][]fakeEvent
	seq      int
	nextID   int
	subs     map[chan string]string // subscriber → group id ("" = all groups)
	gets     map[string]int         // GET /v1/groups/{id} per id
	gates    map[string]chan struct{}

	// beforeAnswer, when set, runs after a recipient action changed the
	// group and told the streams, before its answer (the group as the
	// action left it) is written: a test makes the group move on first.
	beforeAnswer func(id, number string)

	kick    chan struct{} // closed to drop every open stream
	created chan string   // ids of groups created through POST /v1/groups
	done    chan struct{} // closed at test end: stops streams and progressions
	wg      sync.WaitGroup
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{
		t:        t,
		sessions: map[string]string{},
		groups:   map[string]*fakeGroup{},
		events:   map[string][]fakeEvent{},
		subs:     map[chan string]string{},
		gets:     map[string]int{},
		gates:    map[string]chan struct{}{},
		created:  make(chan string, 4),
		kick:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	f.seed()
	return f
}

// close stops streams and progressions and waits for them.
func (f *fakeAPI) close() {
	close(f.done)
	f.wg.Wait()
}

func ptr[T any](v T) *T { return &v }

func recount(g *fakeGroup) {
	var c fakeCounts
	for _, r := range g.Recipients {
		switch r.Status {
		case "pending":
			c.Pending++
		case "sending":
			c.Sending++
		case "sent":
			c.Sent++
		case "delivered":
			c.Delivered++
		case "failed":
			c.Failed++
		case "unconfirmed":
			c.Unconfirmed++
		case "unknown":
			c.Unknown++
		case "opted_out":
			c.OptedOut++
		case "canceled":
			c.Canceled++
		}
		switch {
		case r.ReplyText != "":
			c.Replied++
		case r.Status != "opted_out" && r.Status != "canceled":
			c.NoReply++
		}
		switch r.Ack {
		case "yes":
			c.Acknowledged++
			c.AckYes++
		case "no":
			c.Acknowledged++
			c.AckNo++
		}
	}
	g.Counts = c
	if g.Status == "canceled" || g.Status == "paused" {
		return
	}
	switch {
	case c.Pending+c.Sending > 0:
		g.Status = "sending"
	case c.Sent > 0:
		g.Status = "awaiting"
	default:
		g.Status = "complete"
	}
}

// event appends a journal event; call with f.mu held.
func (f *fakeAPI) event(gid, number, typ string, at time.Time, data map[string]any) {
	f.seq++
	f.events[gid] = append(f.events[gid], fakeEvent{Seq: f.seq, Type: typ, Time: at, Data: data, number: number})
	if g := f.groups[gid]; g != nil {
		g.Seq = f.seq
	}
}

// add stores a group and its creation events; call with f.mu held.
func (f *fakeAPI) add(g *fakeGroup) {
	roster := make([]map[string]any, len(g.Recipients))
	for i, r := range g.Recipients {
		roster[i] = map[string]any{"number": r.Number, "name": r.Name}
	}
	for _, r := range g.Recipients {
		f.event(g.ID, r.Number, "group.created", g.CreatedAt, map[string]any{"id": g.ID, "recipients": roster})
	}
	recount(g)
	f.groups[g.ID] = g
	g.Seq = f.seq
	f.order = append([]string{g.ID}, f.order...)
}

func (f *fakeAPI) seed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	old := now.Add(-26 * time.Hour)
	rs := make([]fakeRecipient, 12)
	for i := range rs {
		rs[i] = fakeRecipient{Number: fmt.Sprintf("+1555020%04d", i+1), Status: "delivered", Attempts: 1,
			SentAt: ptr(old.Add(time.Second)), DeliveredAt: ptr(old.Add(4 * time.Second))}
		if i < 6 {
			rs[i].ReplyText, rs[i].Ack, rs[i].RepliedAt = "Y", "yes", ptr(old.Add(time.Minute))
		}
	}
	rs[10].Status, rs[10].ErrorCode, rs[10].ErrorClass, rs[10].DeliveredAt, rs[10].FailedAt =
		"failed", "30006", "recipient", nil, ptr(old.Add(5*time.Second))
	rs[11].Status, rs[11].DeliveredAt, rs[11].SentAt = "opted_out", nil, nil
	f.add(&fakeGroup{ID: "grp_old", Mode: "individual", From: "+15550100000", CreatedAt: old, UpdatedAt: old.Add(time.Minute),
		Text: "Tomorrow's load-in starts 6am at dock 4. Reply Y to confirm.", Recipients: rs})

	pausedAt := now.Add(-3 * time.Hour)
	f.add(&fakeGroup{ID: "grp_paused", Mode: "group_mms", From: "+15550100009", CreatedAt: pausedAt, UpdatedAt: pausedAt,
		Status: "paused", PauseReason: "sender +15550100009 is not enabled for messaging (error 40310)",
		Text: "Gate code changed to 4471.", Recipients: []fakeRecipient{
			{Number: "+15550400001", Status: "pending"}, {Number: "+15550400002", Status: "pending"}, {Number: "+15550400003", Status: "pending"},
		}})

	seedAt := now.Add(-20 * time.Minute)
	f.add(&fakeGroup{ID: "grp_seed", Mode: "individual", From: "+15550100000", CreatedAt: seedAt, UpdatedAt: seedAt.Add(time.Minute),
		Text: "Site B briefing moved to 2pm.\nReply YES if you can make it.",
		Recipients: []fakeRecipient{
			{Number: "+15550300001", Name: "Ana Ruiz", Status: "delivered", Attempts: 1, SentAt: ptr(seedAt), DeliveredAt: ptr(seedAt.Add(3 * time.Second)),
				ReplyText: "yes, on my way", Ack: "yes", RepliedAt: ptr(seedAt.Add(time.Minute))},
			{Number: "+15550300002", Name: "Ben Okafor", Status: "delivered", Attempts: 1, SentAt: ptr(seedAt), DeliveredAt: ptr(seedAt.Add(4 * time.Second))},
			{Number: "+15550300003", Status: "sent", Attempts: 1, SentAt: ptr(seedAt)},
			{Number: "+15550300004", Status: "sent", Attempts: 1, SentAt: ptr(seedAt)},
		}})
}

// publish tells stream subscribers that group gid changed.
func (f *fakeAPI) publish(gid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch, want := range f.subs {
		if want == "" || want == gid {
			select {
			case ch <- gid:
			default: // a slow subscriber refetches anyway on the next event
			}
		}
	}
}

func (f *fakeAPI) subscribe(gid string) chan string {
	ch := make(chan string, 64)
	f.mu.Lock()
	f.subs[ch] = gid
	f.mu.Unlock()
	return ch
}

func (f *fakeAPI) unsubscribe(ch chan string) {
	f.mu.Lock()
	delete(f.subs, ch)
	f.mu.Unlock()
}

func (f *fakeAPI) getCount(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[id]
}

// start releases the scripted progression of a created group.
func (f *fakeAPI) start(id string) {
	f.mu.Lock()
	gate := f.gates[id]
	f.mu.Unlock()
	close(gate)
}

// progress plays the created group's script once its gate opens: every
// recipient is claimed and sent, then receipts and a reply arrive, one
// step every progressGap (about two seconds in all). The ticker paces the
// simulated world; the test waits on the page, not on the ticker.
func (f *fakeAPI) progress(id string, gate <-chan struct{}) {
	defer f.wg.Done()
	select {
	case <-gate:
	case <-f.done:
		return
	}
	type step func(g *fakeGroup, at time.Time)
	find := func(g *fakeGroup, i int) *fakeRecipient { return &g.Recipients[i] }
	steps := []step{
		func(g *fakeGroup, at time.Time) {
			for i := range g.Recipients {
				r := find(g, i)
				r.Status, r.Attempts = "sending", 1
				f.event(id, r.Number, "send.claimed", at, map[string]any{"at": at, "sends": []any{map[string]any{"send_id": fmt.Sprintf("s%d", i), "i": []int{i}}}})
			}
		},
		func(g *fakeGroup, at time.Time) {
			for i := range g.Recipients {
				r := find(g, i)
				if i == 3 {
					r.Status, r.ErrorClass = "unconfirmed", "uncertain"
					f.event(id, r.Number, "send.outcomes", at, map[string]any{"outcomes": []any{map[string]any{"i": []int{i}, "result": "uncertain", "detail": "provider timed out after the request was sent"}}})
					f.event(id, r.Number, "send.unconfirmed", at, map[string]any{"i": []int{i}, "reason": "ambiguous provider error"})
					continue
				}
				r.Status, r.SentAt, r.ProviderMessageID = "sent", ptr(at), fmt.Sprintf("msg-%d", i)
				f.event(id, r.Number, "send.outcomes", at, map[string]any{"outcomes": []any{map[string]any{"i": []int{i}, "result": "accepted", "message_id": r.ProviderMessageID}}})
			}
		},
		func(g *fakeGroup, at time.Time) {
			r := find(g, 0)
			r.Status, r.DeliveredAt = "delivered", ptr(at)
			f.event(id, r.Number, "status.observed", at, map[string]any{"i": 0, "source": "webhook", "status": "delivered", "provider_status": "delivered"})
			r = find(g, 2)
			r.Status, r.FailedAt, r.ErrorCode, r.ErrorClass = "failed", ptr(at), "30006", "recipient"
			f.event(id, r.Number, "status.observed", at, map[string]any{"i": 2, "source": "webhook", "status": "failed", "provider_status": "delivery_failed", "code": "30006", "class": "recipient"})
		},
		func(g *fakeGroup, at time.Time) {
			r := find(g, 1)
			r.Status, r.DeliveredAt = "delivered", ptr(at)
			f.event(id, r.Number, "status.observed", at, map[string]any{"i": 1, "source": "webhook", "status": "delivered"})
		},
		func(g *fakeGroup, at time.Time) {
			r := find(g, 4)
			r.Status, r.DeliveredAt = "delivered", ptr(at)
			f.event(id, r.Number, "status.observed", at, map[string]any{"i": 4, "source": "lookup", "status": "delivered"})
		},
		func(g *fakeGroup, at time.Time) {
			r := find(g, 1)
			r.ReplyText, r.Ack, r.RepliedAt = xssReply, "yes", ptr(at)
			f.event(id, r.Number, "reply.received", at, map[string]any{"i": 1, "text": xssReply, "ack": "yes"})
			f.event(id, r.Number, "vendor.note", at, map[string]any{"note": "a type the board does not know"})
		},
	}
	tick := time.NewTicker(progressGap)
	defer tick.Stop()
	for _, s := range steps {
		select {
		case <-tick.C:
		case <-f.done:
			return
		}
		f.mu.Lock()
		g := f.groups[id]
		now := time.Now()
		s(g, now)
		g.UpdatedAt = now
		recount(g)
		f.mu.Unlock()
		f.publish(id)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string, fields []fieldError) {
	e := map[string]any{"code": code, "message": msg}
	if len(fields) > 0 {
		e["fields"] = fields
	}
	writeJSON(w, status, map[string]any{"error": e})
}

// key returns the API key of the request's session, or "".
func (f *fakeAPI) key(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[c.Value]
}

func sessionView(key string) map[string]any {
	if key == readKey {
		return map[string]any{"key_id": "key_2", "name": "Wall screen", "scopes": []string{"read"}}
	}
	return map[string]any{"key_id": "key_1", "name": "Dispatch desk", "scopes": []string{"admin"}}
}

// expireSessions ends every session, as a server restart or TTL would, and
// drops open streams so that the browser's reconnect meets the 401.
func (f *fakeAPI) expireSessions() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.sessions)
	close(f.kick)
	f.kick = make(chan struct{})
}

func (f *fakeAPI) streamURIs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.streams...)
}

// summary is a group without its roster, as the list returns it.
func summary(g *fakeGroup) fakeGroup {
	s := *g
	s.Recipients = nil
	return s
}

func full(g *fakeGroup) fakeGroup {
	s := *g
	s.Recipients = append([]fakeRecipient(nil), g.Recipients...)
	for i := range s.Recipients {
		r := &s.Recipients[i]
		r.ErrorDetail = errcode.Detail(r.ErrorCode, crewcast.ErrorClass(r.ErrorClass))
		r.ErrorURL = errcode.URL(r.ErrorCode)
	}
	return s
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler())

	mux.HandleFunc("POST /v1/session", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Key string `json:"key"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || (body.Key != fakeKey && body.Key != readKey) {
			writeError(w, http.StatusUnauthorized, "unauthorized", "invalid API key", nil)
			return
		}
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		token := hex.EncodeToString(b)
		f.mu.Lock()
		f.sessions[token] = body.Key
		f.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		writeJSON(w, http.StatusOK, sessionView(body.Key))
	})

	api := http.NewServeMux()
	mux.Handle("/v1/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := f.key(r)
		if key == "" {
			writeError(w, http.StatusUnauthorized, "unauthorized", "sign in first", nil)
			return
		}
		if key == readKey && r.Method != http.MethodGet && r.URL.Path != "/v1/session" {
			writeError(w, http.StatusForbidden, "forbidden", "this key may only read", nil)
			return
		}
		api.ServeHTTP(w, r)
	}))
	api.HandleFunc("GET /v1/session", func(w http.ResponseWriter, r *http.Request) {
		v := sessionView(f.key(r))
		if f.asUser && f.key(r) == fakeKey {
			v["key_id"], v["user_id"], v["email"], v["role"] = "", "usr_desk", "desk@example.com", "admin"
		}
		writeJSON(w, http.StatusOK, v)
	})
	api.HandleFunc("DELETE /v1/session", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(cookieName); err == nil {
			f.mu.Lock()
			delete(f.sessions, c.Value)
			f.mu.Unlock()
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		w.WriteHeader(http.StatusNoContent)
	})
	api.HandleFunc("GET /v1/groups", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		list := []fakeGroup{}
		for _, id := range f.order {
			list = append(list, summary(f.groups[id]))
		}
		writeJSON(w, http.StatusOK, map[string]any{"groups": list, "next_cursor": ""})
	})
	api.HandleFunc("POST /v1/groups", f.createGroup)
	api.HandleFunc("GET /v1/groups/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		g := f.groups[r.PathValue("id")]
		if g == nil {
			writeError(w, http.StatusNotFound, "not_found", "group not found", nil)
			return
		}
		f.gets[g.ID]++
		writeJSON(w, http.StatusOK, full(g))
	})
	api.HandleFunc("GET /v1/groups/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		number := r.URL.Query().Get("number")
		out := []fakeEvent{}
		for _, e := range f.events[r.PathValue("id")] {
			if e.number == "" || e.number == number {
				out = append(out, e)
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"events": out})
	})
	api.HandleFunc("POST /v1/groups/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		f.mu.Lock()
		g := f.groups[id]
		if g == nil || g.Status == "complete" || g.Status == "canceled" {
			f.mu.Unlock()
			writeError(w, http.StatusConflict, "conflict", "group is already finished", nil)
			return
		}
		now := time.Now()
		for i := range g.Recipients {
			if g.Recipients[i].Status == "pending" {
				g.Recipients[i].Status = "canceled"
			}
		}
		g.Status, g.UpdatedAt = "canceled", now
		f.event(id, "", "group.canceled", now, map[string]any{"by": "key_1"})
		recount(g)
		view := full(g)
		f.mu.Unlock()
		f.publish(id)
		writeJSON(w, http.StatusOK, view)
	})
	api.HandleFunc("POST /v1/groups/{id}/resume", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		f.mu.Lock()
		g := f.groups[id]
		if g == nil || g.Status != "paused" {
			f.mu.Unlock()
			writeError(w, http.StatusConflict, "conflict", "group is not paused", nil)
			return
		}
		now := time.Now()
		g.Status, g.PauseReason, g.UpdatedAt = "sending", "", now
		f.event(id, "", "group.resumed", now, map[string]any{"by": "key_1"})
		recount(g)
		view := full(g)
		f.mu.Unlock()
		f.publish(id)
		writeJSON(w, http.StatusOK, view)
	})
	api.HandleFunc("POST /v1/groups/{id}/recipients/{number}/{action}", f.recipientAction)
	api.HandleFunc("GET /v1/reports/deliveries", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		_, _ = fmt.Fprintln(w, "group_id,number,status")
	})
	api.HandleFunc("GET /v1/groups/{id}/stream", func(w http.ResponseWriter, r *http.Request) {
		f.stream(w, r, r.PathValue("id"))
	})
	api.HandleFunc("GET /v1/stream", func(w http.ResponseWriter, r *http.Request) {
		f.stream(w, r, "")
	})
	// The real API guards state-changing requests the same way; the board's
	// same-origin fetches must pass it.
	return http.NewCrossOriginProtection().Handler(mux)
}

func (f *fakeAPI) createGroup(w http.ResponseWriter, r *http.Request) {
	var body struct {
		From string   `json:"from"`
		To   []string `json:"to"`
		Text string   `json:"text"`
		Mode string   `json:"mode"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", err.Error(), nil)
		return
	}
	// Like the server: numbers may carry spacing, and each bad one is
	// reported with what was sent, verbatim.
	clean := strings.NewReplacer(" ", "", "(", "", ")", "", "-", "", ".", "")
	var fields []fieldError
	if !e164.MatchString(clean.Replace(body.From)) {
		fields = append(fields, fieldError{"from", fmt.Sprintf("%q is not a phone number; use international format, such as +15550100000", body.From), body.From})
	}
	if len(body.To) == 0 {
		fields = append(fields, fieldError{"to", "at least one recipient is required", ""})
	}
	for i, n := range body.To {
		if !e164.MatchString(clean.Replace(n)) {
			fields = append(fields, fieldError{fmt.Sprintf("to[%d]", i), fmt.Sprintf("%q is not a possible phone number", strings.TrimSpace(n)), n})
		} else {
			body.To[i] = clean.Replace(n)
		}
	}
	if strings.TrimSpace(body.Text) == "" {
		fields = append(fields, fieldError{"text", "text is required", ""})
	}
	if body.Mode != "individual" && body.Mode != "group_mms" {
		fields = append(fields, fieldError{"mode", "mode must be individual or group_mms", ""})
	}
	if len(fields) > 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", "invalid request", fields)
		return
	}
	f.mu.Lock()
	f.nextID++
	now := time.Now()
	g := &fakeGroup{ID: fmt.Sprintf("grp_new%d", f.nextID), Mode: body.Mode, From: body.From, Text: body.Text, CreatedAt: now, UpdatedAt: now}
	for _, n := range body.To {
		g.Recipients = append(g.Recipients, fakeRecipient{Number: n, Status: "pending"})
	}
	f.add(g)
	gate := make(chan struct{})
	f.gates[g.ID] = gate
	view := full(g)
	f.mu.Unlock()
	f.wg.Add(1)
	go f.progress(g.ID, gate)
	f.created <- g.ID
	f.publish(g.ID)
	writeJSON(w, http.StatusCreated, view)
}

func (f *fakeAPI) recipientAction(w http.ResponseWriter, r *http.Request) {
	id, number, action := r.PathValue("id"), r.PathValue("number"), r.PathValue("action")
	// The board must percent-encode the number: a raw "+" in a path is
	// legal but ambiguous for servers that treat it as a space.
	if !strings.Contains(r.URL.EscapedPath(), "%2B") {
		writeError(w, http.StatusBadRequest, "bad_path", "number not percent-encoded", nil)
		return
	}
	f.mu.Lock()
	g := f.groups[id]
	var rec *fakeRecipient
	if g != nil {
		for i := range g.Recipients {
			if g.Recipients[i].Number == number {
				rec = &g.Recipients[i]
			}
		}
	}
	if rec == nil {
		f.mu.Unlock()
		writeError(w, http.StatusNotFound, "not_found", "no such recipient", nil)
		return
	}
	now := time.Now()
	switch action {
	case "resolve":
		var body struct {
			Outcome string `json:"outcome"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if rec.Status != "unconfirmed" && rec.Status != "unknown" {
			f.mu.Unlock()
			writeError(w, http.StatusConflict, "conflict", fmt.Sprintf("recipient is %s; only unconfirmed or unknown recipients can be resolved", rec.Status), nil)
			return
		}
		from := rec.Status
		switch body.Outcome {
		case "delivered":
			rec.Status, rec.DeliveredAt, rec.ErrorClass = "delivered", ptr(now), ""
		case "not_delivered":
			rec.Status, rec.ErrorClass = "pending", ""
		default:
			f.mu.Unlock()
			writeError(w, http.StatusBadRequest, "invalid_request", "bad outcome", []fieldError{{"outcome", "must be delivered or not_delivered", ""}})
			return
		}
		f.event(id, number, "recipient.resolved", now, map[string]any{"outcome": body.Outcome, "by": "key_1", "from": from})
	case "retry":
		if rec.Status != "failed" || rec.ErrorClass == "recipient" {
			msg := fmt.Sprintf("recipient is %s; only failed recipients can be retried", rec.Status)
			if rec.ErrorClass == "recipient" {
				msg = fmt.Sprintf("error %s is a permanent failure for this recipient", rec.ErrorCode)
			}
			f.mu.Unlock()
			writeError(w, http.StatusConflict, "conflict", msg, nil)
			return
		}
		rec.Status = "pending"
		f.event(id, number, "recipient.retry", now, map[string]any{"by": "key_1"})
	default:
		f.mu.Unlock()
		writeError(w, http.StatusNotFound, "not_found", "no such action", nil)
		return
	}
	g.UpdatedAt = now
	recount(g)
	view := full(g)
	f.mu.Unlock()
	f.publish(id)
	if f.beforeAnswer != nil {
		f.beforeAnswer(id, number)
	}
	writeJSON(w, http.StatusOK, view)
}

// stream is the SSE endpoint: one "change" event per published change.
func (f *fakeAPI) stream(w http.ResponseWriter, r *http.Request, gid string) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "no streaming", http.StatusInternalServerError)
		return
	}
	// Subscribe before the headers go out: once the browser sees the
	// stream open, no change can slip by.
	ch := f.subscribe(gid)
	defer f.unsubscribe(ch)
	f.mu.Lock()
	f.streams = append(f.streams, r.URL.RequestURI())
	kick := f.kick
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	// A short reconnect delay keeps the session-expiry check fast.
	_, _ = fmt.Fprint(w, "retry: 200\n: connected\n\n")
	flusher.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-f.done:
			return
		case <-kick:
			return
		case id := <-ch:
			if _, err := fmt.Fprintf(w, "event: change\ndata: {\"group_id\":%q}\n\n", id); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}
