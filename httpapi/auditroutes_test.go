package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
	"github.com/crewcast/crewcast/webhookout"
)

// scriptProvider is a provider whose answer depends on the number's last
// two digits: 1x fails (a carrier error: retryable by an operator) on its
// first attempt, 21 fails ambiguously (unconfirmed: resolvable), 31 is
// refused for the sender (the group pauses) on its first attempt; every
// other send is accepted. No webhook ever arrives.
type scriptProvider struct {
	mu       sync.Mutex
	attempts map[string]int
	n        int
}

func (p *scriptProvider) Name() string { return "fake" }

func (p *scriptProvider) Send(_ context.Context, req crewcast.SendRequest) (crewcast.SendResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	to := req.To[0]
	p.attempts[to]++
	p.n++
	first := p.attempts[to] == 1
	switch tail := to[len(to)-2:]; {
	case tail[0] == '1' && first:
		return crewcast.SendResult{}, &crewcast.SendError{Provider: "fake", Class: crewcast.ClassCarrier, Code: "30008", Err: errors.New("carrier down")}
	case tail == "21":
		return crewcast.SendResult{}, errors.New("connection reset")
	case tail == "31" && first:
		return crewcast.SendResult{}, &crewcast.SendError{Provider: "fake", Class: crewcast.ClassSender, Code: "40003", Err: errors.New("sender blocked")}
	}
	return crewcast.SendResult{MessageID: fmt.Sprintf("msg-%d", p.n)}, nil
}

func (p *scriptProvider) SendGroupMMS(ctx context.Context, req crewcast.SendRequest) (crewcast.SendResult, error) {
	return p.Send(ctx, req)
}

func (p *scriptProvider) Lookup(context.Context, string) (crewcast.MessageStatus, error) {
	return crewcast.MessageStatus{}, errors.New("no lookups here")
}

func (p *scriptProvider) ParseWebhook(crewcast.WebhookRequest) ([]crewcast.Event, error) {
	return nil, crewcast.ErrMalformed
}

// trackerPrivacy is the API's view of a real tracker's retention and
// erasure (what the server wires).
type trackerPrivacy struct {
	tr  *tracker.Tracker
	ret *tracker.Retainer
}

func (p trackerPrivacy) RetentionStatus() tracker.RetentionStatus { return p.ret.Status() }
func (p trackerPrivacy) RunRetention(ctx context.Context) (tracker.RetentionRun, error) {
	return p.ret.Run(ctx, "api")
}
func (p trackerPrivacy) Erase(ctx context.Context, number, by string) (tracker.ErasureReport, error) {
	return p.tr.Erase(ctx, number, by)
}
func (p trackerPrivacy) HashedNumber(number string) string { return p.tr.HashedNumber(number) }

// auditNotExpected lists the routes that change state but are rightly not
// in the audit trail, with the reason.
var auditNotExpected = map[string]string{
	"POST /webhooks/telnyx":       "provider callbacks: the provider acts, not a person or key (the journal records them)",
	"POST /webhooks/twilio":       "provider callbacks: the provider acts, not a person or key (the journal records them)",
	"POST /webhooks/twilio/voice": "provider callbacks: the provider acts, not a person or key (the journal records them)",
	"POST /webhooks/telnyx/voice": "provider callbacks: the provider acts, not a person or key (the journal records them)",
	"POST /v1/groups/preview":     "changes nothing",
	"POST /a/{token}":             "the recipient answers by email link, like a text reply (the group's journal records it)",
}

// Every state-changing route of the API leaves exactly one audit entry
// naming who acted (docs/design.md §14), run against the real tracker, store
// and retention: group create, cancel, resume, nudge, retry-failed,
// resolve and retry; contacts, crews, templates, suppressions, keys,
// users, webhook endpoints, retention and erasure; sign-in, failed sign-in
// and sign-out. A route of the route table that is neither here nor in
// auditNotExpected fails the test, so a new route must say how it is
// audited. Failed before group.nudged existed: a nudge left no entry.
func TestEveryChangingRouteAppendsOneAuditEntry(t *testing.T) {
	sealer, err := webhookout.NewSealer("httpapi audit routes test")
	if err != nil {
		t.Fatal(err)
	}
	prov := &scriptProvider{attempts: map[string]int{}}
	var trk *tracker.Tracker
	e := newEnv(t, func(c *Config) {
		tr, err := tracker.New(tracker.Config{Store: c.Store.(store.Store), Provider: prov, SweepInterval: time.Hour, CalloutSettle: -1})
		trk = tr
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tr.Stop(ctx); err != nil {
				t.Errorf("stop tracker: %v", err)
			}
		})
		c.Service = tr
		c.Privacy = trackerPrivacy{tr: tr, ret: tr.NewRetainer(tracker.DefaultRetention(), -1)}
		c.WebhookSealer = sealer
	})
	ctx := context.Background()
	keyActor := func(name string) store.AuditActor {
		return store.AuditActor{Type: store.ActorKey, ID: e.keyIDs[name], Name: name, IP: "127.0.0.1"}
	}
	admin, send := keyActor("admin"), keyActor("send")
	covered := map[string]bool{}
	entries := func() []store.AuditEntry {
		t.Helper()
		all, _, err := e.st.ListAudit(ctx, store.AuditQuery{Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	// step makes one request and checks that it added exactly one entry,
	// with action and actor who; it returns the answer.
	type req struct {
		method, pattern, path, body string
		key                         string       // API key name, or
		cookie                      *http.Cookie // a session
		header                      map[string]string
		status                      int
		action                      string
		who                         store.AuditActor
	}
	var lastResp *http.Response
	step := func(q req) []byte {
		t.Helper()
		before := entries()
		var r *http.Response
		var b []byte
		defer func() { lastResp = r }()
		if q.cookie != nil {
			r, b = e.withCookie(q.cookie, q.method, q.path, q.body, q.header)
		} else {
			r, b = e.do(q.method, q.path, q.body, q.key, q.header)
		}
		if r.StatusCode != q.status {
			t.Fatalf("%s %s: %d %s, want %d", q.method, q.path, r.StatusCode, b, q.status)
		}
		after := entries()
		added := newAuditEntries(before, after)
		if len(added) != 1 {
			t.Fatalf("%s %s left %d audit entries, want exactly one: %+v", q.method, q.path, len(added), added)
		}
		if got := added[0]; got.Action != q.action || got.Actor != q.who {
			t.Fatalf("%s %s: entry %s by %+v, want %s by %+v", q.method, q.path, got.Action, got.Actor, q.action, q.who)
		}
		covered[q.method+" "+q.pattern] = true
		return b
	}
	id := func(b []byte) string { return decode[struct{ ID string }](t, b).ID }
	waitFor := func(what string, cond func(map[string]store.DeliveryRow, store.GroupRow) bool, gid string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			g, err := e.st.GetGroup(ctx, gid)
			if err == nil {
				rows, _, err := e.st.ListDeliveries(ctx, store.DeliveryQuery{GroupID: gid, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				by := map[string]store.DeliveryRow{}
				for _, d := range rows {
					by[d.Number] = d
				}
				if cond(by, g) {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	const (
		okNum    = "+15550170001"
		fail1    = "+15550170011"
		fail2    = "+15550170012"
		unsure   = "+15550170021"
		haltedTo = "+15550170031"
	)

	// Groups and their recipients (the tracker's entries).
	g1 := id(step(req{method: "POST", pattern: "/v1/groups", path: "/v1/groups", key: "send", status: 201,
		body:   `{"from":"+15550100000","to":["` + okNum + `"],"text":"Crew call 7am","followup":{"after":"1h","max":1}}`,
		action: tracker.AuditGroupSent, who: send}))
	g2 := id(step(req{method: "POST", pattern: "/v1/groups", path: "/v1/groups", key: "send", status: 201,
		body:   `{"from":"+15550100000","to":["` + fail1 + `","` + fail2 + `","` + unsure + `"],"text":"Crew call 8am"}`,
		action: tracker.AuditGroupSent, who: send}))
	g3 := id(step(req{method: "POST", pattern: "/v1/groups", path: "/v1/groups", key: "admin", status: 201,
		body:   `{"from":"+15550100000","to":["` + haltedTo + `"],"text":"Crew call 9am"}`,
		action: tracker.AuditGroupSent, who: admin}))
	waitFor("g1 sent", func(d map[string]store.DeliveryRow, _ store.GroupRow) bool { return !d[okNum].SentAt.IsZero() }, g1)
	waitFor("g2 failed and unconfirmed", func(d map[string]store.DeliveryRow, _ store.GroupRow) bool {
		return d[fail1].Status == crewcast.StatusFailed && d[fail2].Status == crewcast.StatusFailed && d[unsure].Status == crewcast.StatusUnconfirmed
	}, g2)
	waitFor("g3 paused", func(_ map[string]store.DeliveryRow, g store.GroupRow) bool { return g.Status == crewcast.GroupPaused }, g3)

	step(req{method: "POST", pattern: "/v1/groups/{id}/nudge", path: "/v1/groups/" + g1 + "/nudge", key: "send", status: 200,
		action: tracker.AuditGroupNudged, who: send})
	step(req{method: "POST", pattern: "/v1/groups/{id}/recipients/{number}/resolve",
		path: "/v1/groups/" + g2 + "/recipients/" + url.PathEscape(unsure) + "/resolve", body: `{"outcome":"delivered"}`,
		key: "send", status: 200, action: tracker.AuditRecipientResolved, who: send})
	step(req{method: "POST", pattern: "/v1/groups/{id}/recipients/{number}/retry",
		path: "/v1/groups/" + g2 + "/recipients/" + url.PathEscape(fail1) + "/retry", key: "send", status: 200,
		action: tracker.AuditRecipientRetried, who: send})
	step(req{method: "POST", pattern: "/v1/groups/{id}/retry-failed", path: "/v1/groups/" + g2 + "/retry-failed", key: "send",
		status: 200, action: tracker.AuditRecipientRetried, who: send}) // fail2 only: fail1 is no longer failed
	step(req{method: "POST", pattern: "/v1/groups/{id}/resume", path: "/v1/groups/" + g3 + "/resume", key: "admin", status: 200,
		action: tracker.AuditGroupResumed, who: admin})
	step(req{method: "POST", pattern: "/v1/groups/{id}/cancel", path: "/v1/groups/" + g1 + "/cancel", key: "send", status: 200,
		action: tracker.AuditGroupCanceled, who: send})

	// A callout (callout.go): next wave now, then select and release by hand.
	const wave1, wave2 = "+15550170041", "+15550170042"
	g4 := id(step(req{method: "POST", pattern: "/v1/groups", path: "/v1/groups", key: "send", status: 201,
		body: `{"from":"+15550100000","to":["` + wave1 + `","` + wave2 + `"],"text":"Callout",` +
			`"responses":[{"key":"1","label":"Coming","ack":"yes"}],"quorum":{"response":"1","count":2},"waves":{"size":1,"every":"1h"}}`,
		action: tracker.AuditGroupSent, who: send}))
	waitFor("g4 wave 1 sent", func(d map[string]store.DeliveryRow, _ store.GroupRow) bool { return !d[wave1].SentAt.IsZero() }, g4)
	step(req{method: "POST", pattern: "/v1/groups/{id}/next-wave", path: "/v1/groups/" + g4 + "/next-wave", key: "send", status: 200,
		action: tracker.AuditGroupWaveStarted, who: send})
	if _, err := trk.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: "yes-1", Kind: crewcast.KindInbound, From: wave1,
		To: "+15550100000", Text: "1"}}); err != nil {
		t.Fatal(err)
	}
	waitFor("g4 yes selected", func(_ map[string]store.DeliveryRow, g store.GroupRow) bool { return g.Counts["selected"] == 1 }, g4)
	step(req{method: "POST", pattern: "/v1/groups/{id}/recipients/{number}/release",
		path: "/v1/groups/" + g4 + "/recipients/" + url.PathEscape(wave1) + "/release", key: "send", status: 200,
		action: tracker.AuditRecipientReleased, who: send})
	step(req{method: "POST", pattern: "/v1/groups/{id}/recipients/{number}/select",
		path: "/v1/groups/" + g4 + "/recipients/" + url.PathEscape(wave1) + "/select", key: "send", status: 200,
		action: tracker.AuditRecipientSelected, who: send})

	// Suppressions.
	step(req{method: "POST", pattern: "/v1/suppressions", path: "/v1/suppressions", body: `{"number":"+15550170099"}`, key: "send",
		status: 201, action: auditSuppressAdd, who: send})
	step(req{method: "DELETE", pattern: "/v1/suppressions/{number}", path: "/v1/suppressions/" + url.PathEscape("+15550170099"),
		key: "send", status: 204, action: auditSuppressRemov, who: send})

	// Contacts, crews, templates.
	ct := id(step(req{method: "POST", pattern: "/v1/contacts", path: "/v1/contacts", body: `{"number":"+15550170041","name":"Ana"}`,
		key: "send", status: 201, action: auditContactCreated, who: send}))
	step(req{method: "PATCH", pattern: "/v1/contacts/{id}", path: "/v1/contacts/" + ct, body: `{"name":"Ana B"}`, key: "send",
		status: 200, action: auditContactUpdated, who: send})
	step(req{method: "POST", pattern: "/v1/contacts/import", path: "/v1/contacts/import", body: "number,name\n+15550170042,Ben\n",
		header: map[string]string{"Content-Type": "text/csv"}, key: "send", status: 200, action: auditContactsImported, who: send})
	crew := id(step(req{method: "POST", pattern: "/v1/crews", path: "/v1/crews", body: `{"name":"Night","members":["` + ct + `"]}`,
		key: "send", status: 201, action: auditCrewCreated, who: send}))
	step(req{method: "PATCH", pattern: "/v1/crews/{id}", path: "/v1/crews/" + crew, body: `{"description":"the night shift"}`,
		key: "send", status: 200, action: auditCrewUpdated, who: send})
	step(req{method: "DELETE", pattern: "/v1/crews/{id}", path: "/v1/crews/" + crew, key: "send", status: 204,
		action: auditCrewDeleted, who: send})
	step(req{method: "DELETE", pattern: "/v1/contacts/{id}", path: "/v1/contacts/" + ct, key: "send", status: 204,
		action: auditContactDeleted, who: send})
	tpl := id(step(req{method: "POST", pattern: "/v1/templates", path: "/v1/templates", body: `{"name":"Call","text":"Hi {{name}}"}`,
		key: "send", status: 201, action: auditTemplateCreated, who: send}))
	step(req{method: "PATCH", pattern: "/v1/templates/{id}", path: "/v1/templates/" + tpl, body: `{"text":"Call at 7, {{name}}"}`,
		key: "send", status: 200, action: auditTemplateUpdated, who: send})
	step(req{method: "DELETE", pattern: "/v1/templates/{id}", path: "/v1/templates/" + tpl, key: "send", status: 204,
		action: auditTemplateDeleted, who: send})

	// Keys.
	key := decode[newKeyJSON](t, step(req{method: "POST", pattern: "/v1/keys", path: "/v1/keys", body: `{"scopes":["read"],"name":"ci"}`,
		key: "admin", status: 201, action: auditKeyCreated, who: admin})).ID
	step(req{method: "DELETE", pattern: "/v1/keys/{id}", path: "/v1/keys/" + key, key: "admin", status: 204,
		action: auditKeyRevoked, who: admin})

	// Users and their sessions.
	ub := step(req{method: "POST", pattern: "/v1/users", path: "/v1/users", body: `{"email":"dana@example.com","name":"Dana","role":"dispatcher"}`,
		key: "admin", status: 201, action: auditUserCreated, who: admin})
	uid, pw := decode[userJSON](t, ub).ID, decode[userJSON](t, ub).Password
	dana := store.AuditActor{Type: store.ActorUser, ID: uid, Name: "Dana", IP: "127.0.0.1"}
	step(req{method: "POST", pattern: "/v1/session", path: "/v1/session", body: `{"email":"dana@example.com","password":"wrong password"}`,
		status: 401, action: auditSignInFailed, who: dana})
	step(req{method: "POST", pattern: "/v1/session", path: "/v1/session", body: fmt.Sprintf(`{"email":"dana@example.com","password":%q}`, pw),
		status: 200, action: auditSignedIn, who: dana})
	var cookie *http.Cookie
	for _, c := range lastResp.Cookies() {
		if c.Name == sessionCookie && c.Value != "" {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatal("no session cookie after sign-in")
	}
	same := map[string]string{"Origin": e.srv.URL}
	// The one-time password is changed first.
	step(req{method: "POST", pattern: "/v1/account/password", path: "/v1/account/password",
		body: fmt.Sprintf(`{"current":%q,"new":%q}`, pw, pw+"-chosen"), cookie: cookie, header: same, status: 204,
		action: auditUserPasswordChanged, who: dana})
	// A change made with a user's session names the user.
	step(req{method: "POST", pattern: "/v1/templates", path: "/v1/templates", body: `{"name":"Call 2","text":"Hi"}`,
		cookie: cookie, header: same, status: 201, action: auditTemplateCreated, who: dana})
	step(req{method: "DELETE", pattern: "/v1/session", path: "/v1/session", cookie: cookie, header: same, status: 204,
		action: auditSignedOut, who: dana})
	step(req{method: "POST", pattern: "/v1/session", path: "/v1/session", body: fmt.Sprintf(`{"email":"dana@example.com","password":%q}`, pw+"-chosen"),
		status: 200, action: auditSignedIn, who: dana})
	for _, c := range lastResp.Cookies() {
		if c.Name == sessionCookie && c.Value != "" {
			cookie = c
		}
	}
	step(req{method: "DELETE", pattern: "/v1/account/sessions", path: "/v1/account/sessions", cookie: cookie, header: same, status: 204,
		action: auditSignedOutEverywhere, who: dana})
	step(req{method: "PATCH", pattern: "/v1/users/{id}", path: "/v1/users/" + uid, body: `{"name":"Dana D"}`, key: "admin", status: 200,
		action: auditUserUpdated, who: admin})
	step(req{method: "PATCH", pattern: "/v1/users/{id}", path: "/v1/users/" + uid, body: `{"reset_password":true}`, key: "admin",
		status: 200, action: auditUserPassword, who: admin})
	step(req{method: "PATCH", pattern: "/v1/users/{id}", path: "/v1/users/" + uid, body: `{"disabled":true}`, key: "admin",
		status: 200, action: auditUserDisabled, who: admin})
	step(req{method: "PATCH", pattern: "/v1/users/{id}", path: "/v1/users/" + uid, body: `{"disabled":false}`, key: "admin",
		status: 200, action: auditUserEnabled, who: admin})
	step(req{method: "DELETE", pattern: "/v1/users/{id}", path: "/v1/users/" + uid, key: "admin", status: 204,
		action: auditUserDisabled, who: admin})

	// Outbound webhook endpoints.
	ep := id(step(req{method: "POST", pattern: "/v1/webhook-endpoints", path: "/v1/webhook-endpoints",
		body: `{"url":"https://hooks.example.com/in","events":["*"]}`, key: "admin", status: 201, action: auditEndpointCreated, who: admin}))
	step(req{method: "PATCH", pattern: "/v1/webhook-endpoints/{id}", path: "/v1/webhook-endpoints/" + ep, body: `{"description":"ops"}`,
		key: "admin", status: 200, action: auditEndpointUpdated, who: admin})
	step(req{method: "PATCH", pattern: "/v1/webhook-endpoints/{id}", path: "/v1/webhook-endpoints/" + ep, body: `{"disabled":true}`,
		key: "admin", status: 200, action: auditEndpointDisabled, who: admin})
	step(req{method: "PATCH", pattern: "/v1/webhook-endpoints/{id}", path: "/v1/webhook-endpoints/" + ep, body: `{"disabled":false}`,
		key: "admin", status: 200, action: auditEndpointEnabled, who: admin})
	step(req{method: "POST", pattern: "/v1/webhook-endpoints/{id}/rotate", path: "/v1/webhook-endpoints/" + ep + "/rotate",
		key: "admin", status: 200, action: auditEndpointRotated, who: admin})
	step(req{method: "POST", pattern: "/v1/webhook-endpoints/{id}/test", path: "/v1/webhook-endpoints/" + ep + "/test",
		key: "admin", status: 202, action: auditEndpointTested, who: admin})
	step(req{method: "POST", pattern: "/v1/webhook-endpoints/{id}/recover", path: "/v1/webhook-endpoints/" + ep + "/recover",
		body: `{"since":"2026-01-01T00:00:00Z"}`, key: "admin", status: 202, action: auditEndpointRecovered, who: admin})
	step(req{method: "DELETE", pattern: "/v1/webhook-endpoints/{id}", path: "/v1/webhook-endpoints/" + ep, key: "admin", status: 204,
		action: auditEndpointDeleted, who: admin})

	// Senders.
	step(req{method: "POST", pattern: "/v1/senders", path: "/v1/senders", body: `{"number":"+15550100077","provider":"telnyx"}`,
		key: "admin", status: 201, action: auditSenderCreated, who: admin})
	step(req{method: "PATCH", pattern: "/v1/senders/{number}", path: "/v1/senders/+15550100077", body: `{"pool":"dispatch"}`,
		key: "admin", status: 200, action: auditSenderUpdated, who: admin})
	step(req{method: "DELETE", pattern: "/v1/senders/{number}", path: "/v1/senders/+15550100077", key: "admin", status: 204,
		action: auditSenderDeleted, who: admin})

	// Privacy.
	step(req{method: "POST", pattern: "/v1/retention/run", path: "/v1/retention/run", key: "admin", status: 200,
		action: tracker.AuditRetentionRun, who: admin})
	step(req{method: "POST", pattern: "/v1/erasure", path: "/v1/erasure", body: `{"number":"` + okNum + `"}`, key: "admin", status: 200,
		action: tracker.AuditPersonErased, who: admin})
	// The retention status reads and records nothing; it names the pass above.
	if r, b := e.do("GET", "/v1/retention", "", "admin", nil); r.StatusCode != 200 || !strings.Contains(string(b), `"last":{`) {
		t.Fatalf("retention status: %d %s", r.StatusCode, b)
	}

	// The preview changes nothing and logs nothing.
	before := entries()
	if r, b := e.do("POST", "/v1/groups/preview", `{"from":"+15550100000","to":["+15550170051"],"text":"Crew call"}`, "send", nil); r.StatusCode != 200 {
		t.Fatalf("preview: %d %s", r.StatusCode, b)
	}
	if added := newAuditEntries(before, entries()); len(added) != 0 {
		t.Fatalf("preview left audit entries: %+v", added)
	}

	for _, rt := range routeTable {
		k := rt.Method + " " + rt.Pattern
		if rt.Method == http.MethodGet || covered[k] {
			continue
		}
		if _, ok := auditNotExpected[k]; !ok {
			t.Errorf("route %s changes state but no case here shows its audit entry: add one (or a reason to auditNotExpected)", k)
		}
	}
	for k := range covered {
		if strings.HasPrefix(k, "GET ") {
			t.Errorf("GET route %s is audited as a change", k)
		}
	}
}

// newAuditEntries returns the entries of after that are not in before
// (as a multiset).
func newAuditEntries(before, after []store.AuditEntry) []store.AuditEntry {
	seen := map[string]int{}
	key := func(e store.AuditEntry) string {
		return fmt.Sprintf("%d|%+v|%s|%s", e.At.UnixNano(), e.Actor, e.Action, e.Target)
	}
	for _, e := range before {
		seen[key(e)]++
	}
	var out []store.AuditEntry
	for _, e := range after {
		if seen[key(e)] > 0 {
			seen[key(e)]--
			continue
		}
		out = append(out, e)
	}
	return out
}
