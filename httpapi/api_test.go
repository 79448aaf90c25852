package httpapi

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

// scenario is one HTTP request against a fresh server and what must come
// back (pocketbase-style table tests).
type scenario struct {
	name string
	mod  func(*Config)
	// setup prepares the store and returns values substituted for {name}
	// placeholders in path and body.
	setup  func(e *env) map[string]string
	method string
	path   string
	body   string
	key    string // env key name, a literal "Scheme value" Authorization, or ""
	header map[string]string
	status int
	code   string   // expected error code
	fields []string // expected error fields, in order
	has    []string // substrings the body must contain
	hasNot []string // substrings the body must not contain
	check  func(t *testing.T, e *env, resp *http.Response, body []byte)
}

// runScenarios runs each scenario on its own fresh server and store.
func runScenarios(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, sc.mod)
			vars := map[string]string{}
			if sc.setup != nil {
				vars = sc.setup(e)
			}
			sc.run(t, e, vars)
		})
	}
}

// runShared runs read-only scenarios against one server prepared once by
// setup (opening a store is the slow part of a scenario). Scenarios must
// not have their own setup or mod, nor change what the others read. Paths
// and bodies may also name the env's keys as {key:read} and their ids as
// {keyid:read}.
func runShared(t *testing.T, setup func(e *env) map[string]string, scenarios []scenario) {
	t.Helper()
	shared := newEnv(t, nil)
	vars := map[string]string{}
	if setup != nil {
		vars = setup(shared)
	}
	if vars == nil {
		vars = map[string]string{}
	}
	for name, k := range shared.keys {
		vars["key:"+name], vars["keyid:"+name] = k, shared.keyIDs[name]
	}
	for _, sc := range scenarios {
		if sc.setup != nil || sc.mod != nil {
			t.Fatalf("shared scenario %q has its own setup", sc.name)
		}
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			e := *shared // same server and store; failures go to this subtest
			e.t = t
			sc.run(t, &e, vars)
		})
	}
}

// runMixed shares one server among the scenarios without setup or mod
// (which must be independent of each other) and gives the others their
// own.
func runMixed(t *testing.T, scenarios []scenario) {
	t.Helper()
	var own, shared []scenario
	for _, sc := range scenarios {
		if sc.setup != nil || sc.mod != nil {
			own = append(own, sc)
		} else {
			shared = append(shared, sc)
		}
	}
	runScenarios(t, own)
	runShared(t, nil, shared)
}

func (sc scenario) run(t *testing.T, e *env, vars map[string]string) {
	t.Helper()
	path, body := sc.path, sc.body
	for k, v := range vars {
		path = strings.ReplaceAll(path, "{"+k+"}", v)
		body = strings.ReplaceAll(body, "{"+k+"}", v)
	}
	resp, b := e.do(sc.method, path, body, sc.key, sc.header)
	if resp.StatusCode != sc.status {
		t.Fatalf("%s %s: status %d, want %d\n%s", sc.method, path, resp.StatusCode, sc.status, b)
	}
	if sc.code != "" || sc.fields != nil {
		ej := errorOf(t, b)
		if sc.code != "" && ej.Code != sc.code {
			t.Errorf("error code %q, want %q (%s)", ej.Code, sc.code, ej.Message)
		}
		var fields []string
		for _, f := range ej.Fields {
			fields = append(fields, f.Field)
		}
		if sc.fields != nil && !slices.Equal(fields, sc.fields) {
			t.Errorf("error fields %q, want %q", fields, sc.fields)
		}
	}
	for _, s := range sc.has {
		if !strings.Contains(string(b), strings.ReplaceAll(s, "{id}", vars["id"])) {
			t.Errorf("body lacks %q:\n%s", s, b)
		}
	}
	for _, s := range sc.hasNot {
		if strings.Contains(string(b), s) {
			t.Errorf("body contains %q:\n%s", s, b)
		}
	}
	if sc.check != nil {
		sc.check(t, e, resp, b)
	}
}

const createBody = `{"from":"+15550100000","to":["+15550100002","+15550100001"],"text":"Crew call 7am"}`

func groupWith(numbers ...string) func(e *env) map[string]string {
	return func(e *env) map[string]string { return map[string]string{"id": e.createGroup(numbers...)} }
}

// failService replaces one of the fake service's methods with a failure.
func failService(err error) func(e *env) map[string]string {
	return func(e *env) map[string]string {
		id := e.createGroup("+15550100001")
		e.svc.CreateFunc = func(context.Context, group.Request, tracker.CreateOptions) (string, bool, error) {
			return "", false, err
		}
		e.svc.CancelFunc = func(context.Context, string, string) error { return err }
		return map[string]string{"id": id}
	}
}

func TestGroupsCreate(t *testing.T) {
	runMixed(t, []scenario{
		{name: "send key creates", method: "POST", path: "/v1/groups", body: createBody, key: "send", status: 201,
			has: []string{`"status":"sending"`, `"pending":2`},
			check: func(t *testing.T, e *env, resp *http.Response, b []byte) {
				g := decode[apitype.Group](t, b)
				if resp.Header.Get("Location") != "/v1/groups/"+g.ID {
					t.Errorf("Location %q", resp.Header.Get("Location"))
				}
				// Roster order is the order given, not number order.
				if len(g.Recipients) != 2 || g.Recipients[0].Number != "+15550100002" || g.Recipients[1].Number != "+15550100001" {
					t.Errorf("recipients %+v", g.Recipients)
				}
				if g.Recipients[0].SentAt != nil || g.CreatedAt == nil || g.Seq != 1 {
					t.Errorf("timestamps/seq wrong: %+v", g)
				}
			}},
		{name: "admin key creates", method: "POST", path: "/v1/groups", body: createBody, key: "admin", status: 201},
		{name: "named recipients", method: "POST", path: "/v1/groups", key: "send", status: 201,
			body: `{"from":"+15550100000","recipients":[{"number":"+15550100003","name":"Ana"}],"text":"hi","mode":"individual"}`,
			has:  []string{`"name":"Ana"`}},
		{name: "read key cannot create", method: "POST", path: "/v1/groups", body: createBody, key: "read", status: 403, code: "forbidden"},
		{name: "no key", method: "POST", path: "/v1/groups", body: createBody, status: 401, code: "unauthorized",
			check: func(t *testing.T, e *env, resp *http.Response, b []byte) {
				if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
				}
			}},
		{name: "unknown key", method: "POST", path: "/v1/groups", body: createBody, key: "cc_aaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", status: 401, code: "unauthorized"},
		{name: "garbage key", method: "GET", path: "/v1/groups", key: "nonsense", status: 401, code: "unauthorized"},
		{name: "revoked key", method: "GET", path: "/v1/groups", key: "revoked", status: 401, code: "unauthorized"},
		{name: "basic auth refused", method: "GET", path: "/v1/groups", key: "Basic dXNlcjpwYXNz", status: 401, code: "unauthorized"},
		{name: "bad json", method: "POST", path: "/v1/groups", body: `{"from":`, key: "send", status: 400, code: "invalid_json"},
		{name: "not json", method: "POST", path: "/v1/groups", body: `hello`, key: "send", status: 400, code: "invalid_json"},
		{name: "empty body", method: "POST", path: "/v1/groups", key: "send", status: 400, code: "invalid_json"},
		{name: "unknown field", method: "POST", path: "/v1/groups", key: "send", status: 400, code: "invalid_json",
			body: `{"from":"+15550100000","to":["+15550100001"],"text":"x","colour":"red"}`, fields: []string{"colour"}},
		{name: "unknown nested field", method: "POST", path: "/v1/groups", key: "send", status: 400, code: "invalid_json",
			body: `{"from":"+15550100000","recipients":[{"number":"+15550100001","nick":"A"}],"text":"x"}`, fields: []string{"nick"}},
		{name: "wrong type", method: "POST", path: "/v1/groups", key: "send", status: 400, code: "invalid_json",
			body: `{"from":"+15550100000","to":"+15550100001","text":"x"}`, fields: []string{"to"}, has: []string{"must be an array"}},
		{name: "trailing data", method: "POST", path: "/v1/groups", key: "send", status: 400, code: "invalid_json",
			body: createBody + `{}`},
		{name: "validation names fields", method: "POST", path: "/v1/groups", key: "send", status: 400, code: "invalid_request",
			body: `{"from":"nope","to":["+15550100001","12"],"text":""}`, fields: []string{"from", "text", "to[1]"}},
		{name: "no recipients", method: "POST", path: "/v1/groups", key: "send", status: 400, code: "invalid_request",
			body: `{"from":"+15550100000","text":"x"}`, fields: []string{"to"}},
		{name: "text/plain refused", method: "POST", path: "/v1/groups", key: "send", body: createBody,
			header: map[string]string{"Content-Type": "text/plain"}, status: 415, code: "unsupported_media_type"},
		{name: "body over limit", mod: func(c *Config) { c.MaxCreateBodyBytes = 64 }, method: "POST", path: "/v1/groups",
			key: "send", body: createBody, status: 413, code: "too_large"},
		{name: "bad check_after", method: "POST", path: "/v1/groups", key: "send", status: 400, code: "invalid_request",
			body: `{"from":"+15550100000","to":["+15550100001"],"text":"x","check_after":"soon"}`, fields: []string{"check_after"}},
		{name: "zero check_after", method: "POST", path: "/v1/groups", key: "send", status: 400, code: "invalid_request",
			body: `{"from":"+15550100000","to":["+15550100001"],"text":"x","check_after":0}`, fields: []string{"check_after"}},
		{name: "bad idempotency key", method: "POST", path: "/v1/groups", key: "send", body: createBody,
			header: map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}, status: 400, code: "invalid_request",
			fields: []string{"Idempotency-Key"}},
		{name: "store outage is a generic 503", setup: failService(fmt.Errorf("%w: %v", tracker.ErrUnavailable, errDiskFull)),
			method: "POST", path: "/v1/groups", body: createBody, key: "send", status: 503, code: "unavailable",
			hasNot: []string{"disk"}},
		{name: "unexpected error is a generic 503", setup: failService(errors.New("secret internal detail")),
			method: "POST", path: "/v1/groups", body: createBody, key: "send", status: 503, code: "unavailable",
			hasNot: []string{"secret"}},
		{name: "shutting down", setup: failService(tracker.ErrClosed),
			method: "POST", path: "/v1/groups", body: createBody, key: "send", status: 503, code: "unavailable"},
	})
}

func TestGroupsCreateOptionsPassThrough(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want time.Duration
	}{{`"10m"`, 10 * time.Minute}, {`600`, 10 * time.Minute}, {`null`, 0}} {
		e := newEnv(t, nil)
		var got tracker.CreateOptions
		e.svc.CreateFunc = func(ctx context.Context, req group.Request, opts tracker.CreateOptions) (string, bool, error) {
			got = opts
			return e.mini.create(ctx, req, opts)
		}
		body := `{"from":"+15550100000","to":["+15550100001"],"text":"x","check_after":` + tc.raw + `}`
		resp, b := e.do("POST", "/v1/groups", body, "send", map[string]string{"Idempotency-Key": "abc-123"})
		if resp.StatusCode != 201 {
			t.Fatalf("check_after %s: %d %s", tc.raw, resp.StatusCode, b)
		}
		if got.CheckAfter != tc.want || got.IdempotencyKey != "abc-123" || got.By != e.keyIDs["send"] {
			t.Errorf("check_after %s: options %+v, want CheckAfter %v, key abc-123, by %s", tc.raw, got, tc.want, e.keyIDs["send"])
		}
	}
}

func TestGroupsIdempotency(t *testing.T) {
	e := newEnv(t, nil)
	h := map[string]string{"Idempotency-Key": "order-42"}
	r1, b1 := e.do("POST", "/v1/groups", createBody, "send", h)
	r2, b2 := e.do("POST", "/v1/groups", createBody, "send", h)
	if r1.StatusCode != 201 || r2.StatusCode != 200 {
		t.Fatalf("statuses %d, %d; want 201, 200", r1.StatusCode, r2.StatusCode)
	}
	if decode[apitype.Group](t, b1).ID != decode[apitype.Group](t, b2).ID {
		t.Errorf("same key and body gave two groups")
	}
	other := strings.Replace(createBody, "Crew call 7am", "Crew call 8am", 1)
	r3, b3 := e.do("POST", "/v1/groups", other, "send", h)
	if r3.StatusCode != 422 || errorOf(t, b3).Code != "idempotency_mismatch" {
		t.Errorf("different body: %d %s, want 422 idempotency_mismatch", r3.StatusCode, b3)
	}
	r4, _ := e.do("POST", "/v1/groups", createBody, "send", nil)
	if r4.StatusCode != 201 {
		t.Errorf("without a key a second group is created: %d", r4.StatusCode)
	}
}

func TestGroupsRead(t *testing.T) {
	three := groupWith("+15550100003", "+15550100001", "+15550100002")
	runShared(t, three, []scenario{
		{name: "get", method: "GET", path: "/v1/groups/{id}", key: "read", status: 200,
			has: []string{`"id":"{id}"`, `"counts":{`, `"acknowledged":0`, `"recipients":[`, `"sent_at":null`},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				g := decode[apitype.Group](t, b)
				var nums []string
				for _, r := range g.Recipients {
					nums = append(nums, r.Number)
				}
				if want := []string{"+15550100003", "+15550100001", "+15550100002"}; !slices.Equal(nums, want) {
					t.Errorf("roster order %v, want %v", nums, want)
				}
				if len(g.Counts) != 19 || g.Counts["no_reply"] != 3 || g.Counts["carrier_blocked"] != 0 {
					t.Errorf("counts has %d keys, want 19 (statuses with scheduled and not_needed, replied, acknowledged, ack_yes, ack_no, no_reply, selected, standby, carrier_blocked): %v", len(g.Counts), g.Counts)
				}
			}},
		{name: "get without roster", method: "GET", path: "/v1/groups/{id}?recipients=0", key: "read", status: 200,
			hasNot: []string{`"recipients"`}},
		{name: "get bad recipients flag", method: "GET", path: "/v1/groups/{id}?recipients=maybe", key: "read",
			status: 400, fields: []string{"recipients"}, code: "invalid_request"},
		{name: "get unknown", method: "GET", path: "/v1/groups/nope", key: "read", status: 404, code: "not_found"},
		{name: "get needs a key", method: "GET", path: "/v1/groups/{id}", status: 401, code: "unauthorized"},
		{name: "recipients bad status", method: "GET", path: "/v1/groups/{id}/recipients?status=gone", key: "read", status: 400, fields: []string{"status"}},
	})
	runScenarios(t, []scenario{
		{name: "delivered recipient has timestamps", method: "GET", path: "/v1/groups/{id}", key: "read", status: 200,
			setup: func(e *env) map[string]string {
				id := e.createGroup("+15550100001", "+15550100002")
				e.sendAndDeliver(id, 0, true)
				return map[string]string{"id": id}
			},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				g := decode[apitype.Group](t, b)
				r := g.Recipients[0]
				if r.Status != "delivered" || r.SentAt == nil || r.DeliveredAt == nil || r.ProviderMessageID == "" || r.Attempts != 1 {
					t.Errorf("recipient %+v", r)
				}
				if g.Counts["delivered"] != 1 || g.Counts["pending"] != 1 {
					t.Errorf("counts %v", g.Counts)
				}
			}},
		{name: "list", method: "GET", path: "/v1/groups", key: "read", status: 200,
			setup: func(e *env) map[string]string {
				e.createGroup("+15550100001")
				e.createGroup("+15550100002")
				return nil
			},
			hasNot: []string{`"recipients"`},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				if l := decode[groupListJSON](t, b); len(l.Groups) != 2 || l.NextCursor != "" {
					t.Errorf("list %+v", l)
				}
			}},
		{name: "list paged", method: "GET", path: "/v1/groups?limit=1", key: "read", status: 200,
			setup: func(e *env) map[string]string {
				e.createGroup("+15550100001")
				e.clock.Advance(time.Second)
				e.createGroup("+15550100002")
				return nil
			},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				l := decode[groupListJSON](t, b)
				if len(l.Groups) != 1 || l.NextCursor == "" {
					t.Fatalf("page 1 %+v", l)
				}
				_, b2 := e.do("GET", "/v1/groups?limit=1&cursor="+l.NextCursor, "", "read", nil)
				l2 := decode[groupListJSON](t, b2)
				if len(l2.Groups) != 1 || l2.Groups[0].ID == l.Groups[0].ID {
					t.Errorf("page 2 %+v", l2)
				}
			}},
		{name: "list by status", method: "GET", path: "/v1/groups?status=canceled", key: "read", status: 200,
			setup: func(e *env) map[string]string {
				id := e.createGroup("+15550100001")
				e.createGroup("+15550100002")
				e.apply(id, group.Canceled{At: e.clock.Now()})
				return map[string]string{"id": id}
			},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				if l := decode[groupListJSON](t, b); len(l.Groups) != 1 || l.Groups[0].Status != "canceled" {
					t.Errorf("list %+v", l)
				}
			}},
		{name: "list bad status", method: "GET", path: "/v1/groups?status=done", key: "read", status: 400, fields: []string{"status"}, code: "invalid_request"},
		{name: "list bad limit", method: "GET", path: "/v1/groups?limit=0", key: "read", status: 400, fields: []string{"limit"}, code: "invalid_request"},
		{name: "list bad cursor", method: "GET", path: "/v1/groups?cursor=zzz", key: "read", status: 400, fields: []string{"cursor"}, code: "invalid_request"},
		{name: "recipients page", method: "GET", path: "/v1/groups/{id}/recipients?status=delivered", key: "read", status: 200,
			setup: func(e *env) map[string]string {
				id := e.createGroup("+15550100001", "+15550100002")
				e.sendAndDeliver(id, 1, true)
				return map[string]string{"id": id}
			},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				l := decode[recipientListJSON](t, b)
				if len(l.Recipients) != 1 || l.Recipients[0].Number != "+15550100002" {
					t.Errorf("recipients %+v", l)
				}
			}},
		{name: "recipients unknown group", method: "GET", path: "/v1/groups/nope/recipients", key: "read", status: 404},
	})
}

func TestGroupEvents(t *testing.T) {
	delivered := func(e *env) map[string]string {
		id := e.createGroup("+15550100001", "+15550100002")
		e.sendAndDeliver(id, 0, true)  // seq 2, 3, 4
		e.sendAndDeliver(id, 1, false) // seq 5, 6, 7
		e.apply(id, group.Canceled{At: e.clock.Now()})
		return map[string]string{"id": id}
	}
	seqs := func(want ...uint64) func(t *testing.T, e *env, _ *http.Response, b []byte) {
		return func(t *testing.T, e *env, _ *http.Response, b []byte) {
			l := decode[eventListJSON](t, b)
			var got []uint64
			for _, ev := range l.Events {
				got = append(got, ev.Seq)
			}
			if !slices.Equal(got, want) {
				t.Errorf("seqs %v, want %v", got, want)
			}
		}
	}
	runShared(t, delivered, []scenario{
		{name: "all", method: "GET", path: "/v1/groups/{id}/events", key: "read", status: 200,
			has:   []string{`"type":"group.created"`, `"type":"status.observed"`, `"next_after":8`, `"has_more":false`},
			check: seqs(1, 2, 3, 4, 5, 6, 7, 8)},
		{name: "after and limit", method: "GET", path: "/v1/groups/{id}/events?after=2&limit=3", key: "read", status: 200,
			has: []string{`"next_after":5`, `"has_more":true`}, check: seqs(3, 4, 5)},
		{name: "one recipient's timeline", method: "GET", path: "/v1/groups/{id}/events?number=%2B15550100002", key: "read",
			status: 200, check: seqs(1, 5, 6, 7, 8)},
		{name: "timeline with literal plus and after", method: "GET", path: "/v1/groups/{id}/events?number=15550100001&after=1",
			key: "read", status: 200, check: seqs(2, 3, 4, 8)},
		{name: "unknown recipient", method: "GET", path: "/v1/groups/{id}/events?number=%2B15550100009", key: "read", status: 404},
		{name: "bad after", method: "GET", path: "/v1/groups/{id}/events?after=-1", key: "read", status: 400, fields: []string{"after"}},
		{name: "unknown group", method: "GET", path: "/v1/groups/nope/events", key: "read", status: 404},
	})
}

func TestGroupActions(t *testing.T) {
	unconfirmed := func(e *env) map[string]string {
		id := e.createGroup("+15550100001", "+15550100002")
		e.apply(id, group.Claimed{At: e.clock.Now(), Sends: []group.Send{{ID: "s0", Indices: []int{0}}}})
		e.apply(id, group.Outcomes{At: e.clock.Now(), Outcomes: []group.Outcome{{SendID: "s0", Indices: []int{0},
			Result: group.ResultUncertain, Class: crewcast.ClassUncertain}}})
		return map[string]string{"id": id}
	}
	carrierFailed := func(e *env) map[string]string {
		id := e.createGroup("+15550100001", "+15550100002")
		e.apply(id, group.Claimed{At: e.clock.Now(), Sends: []group.Send{{ID: "s0", Indices: []int{0}}}})
		e.apply(id, group.Outcomes{At: e.clock.Now(), Outcomes: []group.Outcome{{SendID: "s0", Indices: []int{0},
			Result: group.ResultFailed, Code: "30003", Class: crewcast.ClassCarrier}}})
		return map[string]string{"id": id}
	}
	recipient := func(number, status string) func(t *testing.T, e *env, _ *http.Response, b []byte) {
		return func(t *testing.T, e *env, _ *http.Response, b []byte) {
			for _, r := range decode[apitype.Group](t, b).Recipients {
				if r.Number == number && r.Status != status {
					t.Errorf("%s is %s, want %s", number, r.Status, status)
				}
			}
		}
	}
	two := groupWith("+15550100001", "+15550100002")
	runShared(t, func(e *env) map[string]string {
		return map[string]string{"two": two(e)["id"], "unc": unconfirmed(e)["id"], "cf": carrierFailed(e)["id"]}
	}, []scenario{
		{name: "cancel unknown", method: "POST", path: "/v1/groups/nope/cancel", key: "send", status: 404, code: "not_found"},
		{name: "read cannot cancel", method: "POST", path: "/v1/groups/{two}/cancel", key: "read", status: 403, code: "forbidden"},
		{name: "resume a running group conflicts", method: "POST", path: "/v1/groups/{two}/resume", key: "send", status: 409, code: "conflict"},
		{name: "read cannot resume", method: "POST", path: "/v1/groups/{two}/resume", key: "read", status: 403},
		{name: "resolve bad outcome", method: "POST", path: "/v1/groups/{unc}/recipients/%2B15550100001/resolve",
			body: `{"outcome":"maybe"}`, key: "send", status: 400, fields: []string{"outcome"}},
		{name: "resolve pending recipient conflicts", method: "POST", path: "/v1/groups/{unc}/recipients/%2B15550100002/resolve",
			body: `{"outcome":"delivered"}`, key: "send", status: 409},
		{name: "resolve unknown recipient", method: "POST", path: "/v1/groups/{unc}/recipients/%2B15550100009/resolve",
			body: `{"outcome":"delivered"}`, key: "send", status: 404, code: "not_found", has: []string{"recipient"}},
		{name: "resolve bad number", method: "POST", path: "/v1/groups/{unc}/recipients/abc/resolve",
			body: `{"outcome":"delivered"}`, key: "send", status: 400, fields: []string{"number"}},
		{name: "read cannot resolve", method: "POST", path: "/v1/groups/{unc}/recipients/%2B15550100001/resolve",
			body: `{"outcome":"delivered"}`, key: "read", status: 403},
		{name: "retry pending conflicts", method: "POST", path: "/v1/groups/{cf}/recipients/%2B15550100002/retry",
			key: "send", status: 409, has: []string{"only failed recipients"}},
		{name: "read cannot retry", method: "POST", path: "/v1/groups/{cf}/recipients/%2B15550100001/retry",
			key: "read", status: 403},
	})
	runScenarios(t, []scenario{
		{name: "cancel", setup: two, method: "POST", path: "/v1/groups/{id}/cancel", key: "send", status: 200,
			has: []string{`"status":"canceled"`, `"canceled":2`}},
		{name: "cancel twice conflicts", method: "POST", path: "/v1/groups/{id}/cancel", key: "send", status: 409, code: "conflict",
			setup: func(e *env) map[string]string {
				id := e.createGroup("+15550100001")
				e.apply(id, group.Canceled{At: e.clock.Now()})
				return map[string]string{"id": id}
			}, has: []string{"already canceled"}},
		{name: "cancel outage", setup: failService(fmt.Errorf("%w: %v", tracker.ErrUnavailable, errDiskFull)),
			method: "POST", path: "/v1/groups/{id}/cancel", key: "send", status: 503, hasNot: []string{"disk"}},
		{name: "resolve delivered (escaped plus)", setup: unconfirmed, method: "POST", path: "/v1/groups/{id}/recipients/%2B15550100001/resolve",
			body: `{"outcome":"delivered"}`, key: "send", status: 200, check: recipient("+15550100001", "delivered")},
		{name: "resolve not_delivered (literal +)", setup: unconfirmed, method: "POST", path: "/v1/groups/{id}/recipients/+15550100001/resolve",
			body: `{"outcome":"not_delivered"}`, key: "send", status: 200, check: recipient("+15550100001", "pending")},
		{name: "retry carrier failure", setup: carrierFailed, method: "POST", path: "/v1/groups/{id}/recipients/%2B15550100001/retry",
			key: "send", status: 200, check: recipient("+15550100001", "pending")},
		{name: "retry suppressed number", method: "POST", path: "/v1/groups/{id}/recipients/%2B15550100001/retry",
			setup: func(e *env) map[string]string {
				m := carrierFailed(e)
				e.svc.RetryFunc = func(context.Context, string, string, string) error { return tracker.ErrSuppressed }
				return m
			}, key: "send", status: 409, code: "suppressed", has: []string{"suppression list"}},
		{name: "resolve suppressed number", method: "POST", path: "/v1/groups/{id}/recipients/%2B15550100001/resolve",
			setup: func(e *env) map[string]string {
				m := unconfirmed(e)
				e.svc.ResolveFunc = func(context.Context, string, string, string, string) error { return tracker.ErrSuppressed }
				return m
			}, body: `{"outcome":"not_delivered"}`, key: "send", status: 409, code: "suppressed"},
	})
}

// seedReports makes two groups with delivered, failed and pending
// recipients, a matched and an unmatched reply and a suppression.
func seedReports(e *env) map[string]string {
	g1 := e.createGroup("+15550100001", "+15550100002", "+15550100003")
	e.sendAndDeliver(g1, 0, true)
	e.sendAndDeliver(g1, 1, false)
	e.clock.Advance(time.Minute)
	g2 := e.createGroup("+15550100001")
	e.sendAndDeliver(g2, 0, true)
	// HELP from +15550100001 in g2, answered by --help-reply.
	e.apply(g2, group.Replied{At: e.clock.Now(), EventID: "in-help", Index: 0, Text: "HELP", Keyword: group.KeywordHelp})
	e.apply(g2, group.ConfirmClaimed{At: e.clock.Now(), Send: group.Confirmation{ID: "k1", Index: 0, Keyword: group.KeywordHelp,
		From: "+15550100000", Text: "Crew alerts. Reply STOP to end.", At: e.clock.Now()}})
	e.apply(g2, group.ConfirmOutcomes{At: e.clock.Now(), Outcomes: []group.Outcome{{SendID: "k1", Indices: []int{0},
		Result: group.ResultAccepted, MessageID: "msg-k1"}}})
	ctx := context.Background()
	unit := actor.Unit{Key: "replies-seed", Effects: []any{store.Effects{Replies: []store.Reply{
		{Provider: "telnyx", EventID: "in-1", GroupID: g1, Number: "+15550100001", To: "+15550100000", Text: "=cmd|' /C calc'!A0", ReceivedAt: e.clock.Now()},
		{Provider: "telnyx", EventID: "in-2", Number: "+15550100009", To: "+15550100000", Text: "who is this?", ReceivedAt: e.clock.Now()},
		{Provider: "telnyx", EventID: "in-3", Number: "+15550100008", To: "+15550100000", Text: "I can't stop by today", ReceivedAt: e.clock.Now(), PossibleOptOut: true},
		{Provider: "telnyx", EventID: "in-4", Number: "+15550100007", To: "+15550100000", Text: "1", ReceivedAt: e.clock.Now(), Ambiguous: true},
	}}}}
	if res, err := e.st.Commit(ctx, []actor.Unit{unit}); err != nil || res[0] != nil {
		e.t.Fatalf("seed replies: %v %v", err, res)
	}
	if err := e.st.AddSuppression(ctx, store.Suppression{Number: "+15550100003", Reason: "stop", CreatedAt: e.clock.Now()}); err != nil {
		e.t.Fatal(err)
	}
	return map[string]string{"g1": g1, "g2": g2}
}

func readCSV(t *testing.T, b []byte) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		t.Fatalf("csv: %v\n%s", err, b)
	}
	return rows
}

func TestReports(t *testing.T) {
	csvRows := func(n int, check func(t *testing.T, rows [][]string)) func(t *testing.T, e *env, resp *http.Response, b []byte) {
		return func(t *testing.T, e *env, resp *http.Response, b []byte) {
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
				t.Errorf("Content-Type %q", ct)
			}
			rows := readCSV(t, b)
			if len(rows) != n+1 || !slices.Equal(rows[0], deliveryCSVHeader) {
				t.Fatalf("%d rows (want %d + header):\n%s", len(rows)-1, n, b)
			}
			if check != nil {
				check(t, rows)
			}
		}
	}
	deliveries := func(n int) func(t *testing.T, e *env, _ *http.Response, b []byte) {
		return func(t *testing.T, e *env, _ *http.Response, b []byte) {
			if l := decode[deliveryListJSON](t, b); len(l.Deliveries) != n {
				t.Errorf("%d deliveries, want %d", len(l.Deliveries), n)
			}
		}
	}
	runShared(t, seedReports, []scenario{
		{name: "deliveries json", method: "GET", path: "/v1/reports/deliveries", key: "read", status: 200,
			check: deliveries(4), has: []string{`"group_id":"grp0001"`}},
		{name: "deliveries by status", method: "GET", path: "/v1/reports/deliveries?status=delivered", key: "read", status: 200, check: deliveries(2)},
		{name: "deliveries by number", method: "GET", path: "/v1/reports/deliveries?number=%2B15550100001", key: "read", status: 200, check: deliveries(2)},
		{name: "deliveries by class", method: "GET", path: "/v1/reports/deliveries?error_class=recipient", key: "read", status: 200, check: deliveries(1)},
		{name: "deliveries by group", method: "GET", path: "/v1/reports/deliveries?group_id={g2}", key: "read", status: 200, check: deliveries(1)},
		{name: "deliveries since", method: "GET", path: "/v1/reports/deliveries?since=2026-03-01T12:00:30Z", key: "read", status: 200, check: deliveries(1)},
		{name: "deliveries until", method: "GET", path: "/v1/reports/deliveries?until=2026-03-01T12:00:30Z", key: "read", status: 200, check: deliveries(3)},
		{name: "deliveries paged", method: "GET", path: "/v1/reports/deliveries?limit=3", key: "read", status: 200,
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				l := decode[deliveryListJSON](t, b)
				if len(l.Deliveries) != 3 || l.NextCursor == "" {
					t.Fatalf("page %+v", l)
				}
				_, b2 := e.do("GET", "/v1/reports/deliveries?limit=3&cursor="+l.NextCursor, "", "read", nil)
				if l2 := decode[deliveryListJSON](t, b2); len(l2.Deliveries) != 1 || l2.NextCursor != "" {
					t.Errorf("page 2 %+v", l2)
				}
			}},
		{name: "deliveries bad since", method: "GET", path: "/v1/reports/deliveries?since=yesterday", key: "read", status: 400, fields: []string{"since"}},
		{name: "deliveries until before since", method: "GET", path: "/v1/reports/deliveries?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z", key: "read", status: 400, fields: []string{"until"}},
		{name: "deliveries bad status", method: "GET", path: "/v1/reports/deliveries?status=lost", key: "read", status: 400, fields: []string{"status"}},
		{name: "deliveries bad class", method: "GET", path: "/v1/reports/deliveries?error_class=cosmic", key: "read", status: 400, fields: []string{"error_class"}},
		{name: "deliveries bad number", method: "GET", path: "/v1/reports/deliveries?number=call-me", key: "read", status: 400, fields: []string{"number"}},
		{name: "deliveries bad format", method: "GET", path: "/v1/reports/deliveries?format=xml", key: "read", status: 400, fields: []string{"format"}},
		{name: "deliveries need a key", method: "GET", path: "/v1/reports/deliveries", status: 401},
		{name: "deliveries csv", method: "GET", path: "/v1/reports/deliveries?format=csv", key: "read", status: 200,
			check: csvRows(4, func(t *testing.T, rows [][]string) {
				found := false
				for _, r := range rows[1:] {
					if r[1] == "+15550100001" && r[3] == "delivered" && r[9] != "" && r[10] != "" {
						found = true // numbers keep their +; timestamps filled
					}
				}
				if !found {
					t.Errorf("no delivered +15550100001 row with timestamps: %v", rows)
				}
			})},
		{name: "deliveries csv by Accept", method: "GET", path: "/v1/reports/deliveries?status=failed", key: "read",
			header: map[string]string{"Accept": "text/csv"}, status: 200,
			check: csvRows(1, func(t *testing.T, rows [][]string) {
				if rows[1][6] != "40300" || rows[1][7] != "recipient" {
					t.Errorf("failed row %v", rows[1])
				}
			})},
		{name: "deliveries csv limit", method: "GET", path: "/v1/reports/deliveries?format=csv&limit=2", key: "read", status: 200,
			check: csvRows(2, nil)},
		{name: "summary", method: "GET", path: "/v1/reports/summary", key: "read", status: 200,
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				s := decode[summaryJSON](t, b)
				if s.Total != 4 || s.ByStatus["delivered"] != 2 || s.ByStatus["failed"] != 1 || s.ByStatus["pending"] != 1 {
					t.Errorf("summary %+v", s)
				}
				if s.DeliveryRate != 0.5 || s.MedianToDeliveredMS != 2000 || s.P95ToDeliveredMS != 2000 {
					t.Errorf("rate/latency %+v", s)
				}
				if len(s.TopErrorCodes) != 1 || s.TopErrorCodes[0].Code != "40300" || s.TopErrorCodes[0].Count != 1 {
					t.Errorf("codes %+v", s.TopErrorCodes)
				}
			}},
		{name: "summary filtered", method: "GET", path: "/v1/reports/summary?group_id={g2}", key: "read", status: 200,
			has: []string{`"total":1`, `"delivery_rate":1`}},
		{name: "summary csv", method: "GET", path: "/v1/reports/summary?format=csv", key: "read", status: 200,
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				rows := readCSV(t, b)
				m := map[string]string{}
				for _, r := range rows[1:] {
					m[r[0]] = r[1]
				}
				if !slices.Equal(rows[0], []string{"metric", "value"}) || m["total"] != "4" || m["status.delivered"] != "2" ||
					m["delivery_rate"] != "0.5000" || m["error_code.40300"] != "1" {
					t.Errorf("summary csv %v", rows)
				}
			}},
		{name: "recipient history", method: "GET", path: "/v1/reports/recipients/%2B15550100001", key: "read", status: 200,
			has: []string{`"number":"+15550100001"`, `"suppression":null`, `"confirmations":[{"group_id":"grp0002","keyword":"help",` +
				`"text":"Crew alerts. Reply STOP to end.","from":"+15550100000","status":"sent","provider_message_id":"msg-k1",`},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				if r := decode[recipientReportJSON](t, b); len(r.Deliveries) != 2 {
					t.Errorf("history %+v", r)
				}
			}},
		{name: "recipient history shows suppression", method: "GET", path: "/v1/reports/recipients/+15550100003", key: "read", status: 200,
			has: []string{`"reason":"stop"`}},
		{name: "recipient history csv", method: "GET", path: "/v1/reports/recipients/%2B15550100001?format=csv", key: "read", status: 200,
			check: csvRows(2, nil)},
		{name: "recipient history bad number", method: "GET", path: "/v1/reports/recipients/nobody", key: "read", status: 400, fields: []string{"number"}},
		{name: "replies", method: "GET", path: "/v1/replies", key: "read", status: 200,
			has: []string{`"event_id":"in-1"`, `"event_id":"in-2"`}},
		{name: "replies unmatched", method: "GET", path: "/v1/replies?unmatched=true", key: "read", status: 200,
			has: []string{`"event_id":"in-2"`, `"group_id":""`}, hasNot: []string{`"in-1"`}},
		{name: "replies by number", method: "GET", path: "/v1/replies?number=%2B15550100001", key: "read", status: 200,
			has: []string{`"in-1"`, `"possible_opt_out":false`}, hasNot: []string{`"in-2"`}},
		{name: "replies flag possible opt-outs", method: "GET", path: "/v1/replies?number=%2B15550100008", key: "read", status: 200,
			has: []string{`"in-3"`, `"possible_opt_out":true`}},
		{name: "replies ambiguous", method: "GET", path: "/v1/replies?ambiguous=1", key: "read", status: 200,
			has: []string{`"in-4"`, `"ambiguous":true`, `"group_id":""`}, hasNot: []string{`"in-1"`, `"in-2"`, `"in-3"`}},
		{name: "replies not ambiguous", method: "GET", path: "/v1/replies?number=%2B15550100009", key: "read", status: 200,
			has: []string{`"in-2"`, `"ambiguous":false`}},
		{name: "replies bad ambiguous flag", method: "GET", path: "/v1/replies?ambiguous=maybe", key: "read", status: 400, fields: []string{"ambiguous"}},
		{name: "replies bad flag", method: "GET", path: "/v1/replies?unmatched=perhaps", key: "read", status: 400, fields: []string{"unmatched"}},
	})
	runScenarios(t, []scenario{
		{name: "deliveries csv is formula-safe", method: "GET", path: "/v1/reports/deliveries?format=csv", key: "read", status: 200,
			setup: func(e *env) map[string]string {
				_, _, err := e.mini.create(context.Background(), group.Request{From: "+15550100000", Text: "x",
					Recipients: []group.RecipientInput{{Number: "+15550100001", Name: "=cmd|' /C calc'!A0"}}}, tracker.CreateOptions{})
				if err != nil {
					e.t.Fatal(err)
				}
				return nil
			},
			check: csvRows(1, func(t *testing.T, rows [][]string) {
				if rows[1][1] != "+15550100001" || rows[1][2] != "'=cmd|' /C calc'!A0" {
					t.Errorf("row %q: number must keep its +, the name must be defused", rows[1])
				}
			})},
	})
}

func TestSuppressions(t *testing.T) {
	suppressed := func(e *env) map[string]string {
		if err := e.st.AddSuppression(context.Background(), store.Suppression{Number: "+15550100001", Reason: "manual"}); err != nil {
			e.t.Fatal(err)
		}
		return nil
	}
	isSuppressed := func(want bool) func(t *testing.T, e *env, _ *http.Response, _ []byte) {
		return func(t *testing.T, e *env, _ *http.Response, _ []byte) {
			m, err := e.st.Suppressed(context.Background(), []string{"+15550100001"})
			if err != nil {
				t.Fatal(err)
			}
			if _, got := m["+15550100001"]; got != want {
				t.Errorf("suppressed = %v, want %v", got, want)
			}
		}
	}
	runScenarios(t, []scenario{
		{name: "add", method: "POST", path: "/v1/suppressions", body: `{"number":"(555) 010-0001"}`, key: "send", status: 201,
			has: []string{`"number":"+15550100001"`, `"reason":"manual"`}, check: isSuppressed(true)},
		{name: "add with reason", method: "POST", path: "/v1/suppressions", body: `{"number":"+15550100001","reason":"stop"}`, key: "send", status: 201},
		{name: "stop over manual answers manual", setup: suppressed, method: "POST", path: "/v1/suppressions",
			body: `{"number":"+15550100001","reason":"stop"}`, key: "send", status: 201, has: []string{`"reason":"manual"`}},
		{name: "add bad reason", method: "POST", path: "/v1/suppressions", body: `{"number":"+15550100001","reason":"dislike"}`, key: "send", status: 400, fields: []string{"reason"}},
		{name: "add bad number", method: "POST", path: "/v1/suppressions", body: `{"number":"x"}`, key: "send", status: 400, fields: []string{"number"}},
		{name: "read cannot add", method: "POST", path: "/v1/suppressions", body: `{"number":"+15550100001"}`, key: "read", status: 403, check: isSuppressed(false)},
		{name: "list", setup: suppressed, method: "GET", path: "/v1/suppressions", key: "read", status: 200, has: []string{`"+15550100001"`}},
		{name: "remove escaped plus", setup: suppressed, method: "DELETE", path: "/v1/suppressions/%2B15550100001", key: "send", status: 204, check: isSuppressed(false)},
		{name: "remove literal +", setup: suppressed, method: "DELETE", path: "/v1/suppressions/+15550100001", key: "send", status: 204, check: isSuppressed(false)},
		{name: "read cannot remove", setup: suppressed, method: "DELETE", path: "/v1/suppressions/%2B15550100001", key: "read", status: 403, check: isSuppressed(true)},
	})
}

func TestKeys(t *testing.T) {
	runShared(t, nil, []scenario{
		{name: "list never shows secrets", method: "GET", path: "/v1/keys", key: "admin", status: 200,
			has: []string{`"name":"admin"`, `"revoked_at":"20`, `"prefix":`},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				for name, k := range e.keys {
					if strings.Contains(string(b), k[len("cc_")+9:]) {
						t.Errorf("the secret of key %s is listed", name)
					}
				}
				if strings.Contains(string(b), "hash") {
					t.Errorf("hashes are listed: %s", b)
				}
			}},
		{name: "send cannot list", method: "GET", path: "/v1/keys", key: "send", status: 403, code: "forbidden"},
		{name: "read cannot list", method: "GET", path: "/v1/keys", key: "read", status: 403},
		{name: "send cannot create", method: "POST", path: "/v1/keys", body: `{"scopes":["admin"]}`, key: "send", status: 403},
		{name: "create", method: "POST", path: "/v1/keys", body: `{"scopes":["read"],"name":"dashboard"}`, key: "admin", status: 201,
			has: []string{`"key":"cc_`, `"scopes":["read"]`, `"name":"dashboard"`},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				k := decode[newKeyJSON](t, b)
				if r, _ := e.do("GET", "/v1/groups", "", k.Key, nil); r.StatusCode != 200 {
					t.Errorf("new read key cannot read: %d", r.StatusCode)
				}
				if r, _ := e.do("POST", "/v1/groups", createBody, k.Key, nil); r.StatusCode != 403 {
					t.Errorf("new read key can create groups: %d", r.StatusCode)
				}
			}},
		{name: "create needs scopes", method: "POST", path: "/v1/keys", body: `{"name":"x"}`, key: "admin", status: 400, fields: []string{"scopes"}},
		{name: "create bad scope", method: "POST", path: "/v1/keys", body: `{"scopes":["root"]}`, key: "admin", status: 400, fields: []string{"scopes"}},
		{name: "create long name", method: "POST", path: "/v1/keys", body: `{"scopes":["read"],"name":"` + strings.Repeat("n", 101) + `"}`, key: "admin", status: 400, fields: []string{"name"}},
		{name: "revoke unknown", method: "DELETE", path: "/v1/keys/key_nope", key: "admin", status: 404, code: "not_found"},
		{name: "send cannot revoke", method: "DELETE", path: "/v1/keys/{keyid:read}", key: "send", status: 403},
	})
	runScenarios(t, []scenario{
		{name: "revoke", method: "DELETE", path: "/v1/keys/{id}", key: "admin", status: 204,
			setup: func(e *env) map[string]string { return map[string]string{"id": e.keyIDs["read"]} },
			check: func(t *testing.T, e *env, _ *http.Response, _ []byte) {
				if r, _ := e.do("GET", "/v1/groups", "", "read", nil); r.StatusCode != 401 {
					t.Errorf("revoked key still works: %d", r.StatusCode)
				}
			}},
	})
}

func TestOperationsRoutes(t *testing.T) {
	runMixed(t, []scenario{
		{name: "healthz", method: "GET", path: "/healthz", status: 200, has: []string{`"ok"`}},
		{name: "readyz", method: "GET", path: "/readyz", status: 200, has: []string{`"engine":"sqlite"`}},
		{name: "readyz old schema", mod: func(c *Config) { c.MinMigrationVersion = 1 << 40 }, method: "GET", path: "/readyz",
			status: 503, code: "not_ready"},
		{name: "readyz closed store", method: "GET", path: "/readyz", status: 503, code: "not_ready",
			setup: func(e *env) map[string]string { _ = e.st.Close(); return nil }},
		{name: "openapi", method: "GET", path: "/openapi.yaml", status: 200, has: []string{"openapi: 3.0.3"}},
		{name: "version admin", method: "GET", path: "/v1/version", key: "admin", status: 200, has: []string{`"version":"`, `"go":"go1.`, `"provider":"twilio"`},
			mod: func(c *Config) { c.SendingProvider = "twilio" }},
		{name: "version quiet hours", method: "GET", path: "/v1/version", key: "admin", status: 200,
			has: []string{`"quiet_hours":"21:00-07:00"`, `"default_timezone":"America/Chicago"`},
			mod: func(c *Config) {
				c.PolicyDefaults = group.PolicyDefaults{Quiet: &group.QuietHours{Start: 21 * 60, End: 7 * 60}, Timezone: "America/Chicago"}
			}},
		{name: "version no quiet hours", method: "GET", path: "/v1/version", key: "admin", status: 200, has: []string{`"quiet_hours":""`}},
		{name: "version send", method: "GET", path: "/v1/version", key: "send", status: 403},
		{name: "version anonymous", method: "GET", path: "/v1/version", status: 401},
		{name: "debug actors admin", method: "GET", path: "/debug/actors", key: "admin", status: 200, has: []string{`"active":3`}},
		{name: "debug actors send", method: "GET", path: "/debug/actors", key: "send", status: 403},
		{name: "debug actors read", method: "GET", path: "/debug/actors", key: "read", status: 403},
		{name: "debug actors anonymous", method: "GET", path: "/debug/actors", status: 401},
		{name: "debug deadletters not wired", method: "GET", path: "/debug/deadletters", key: "admin", status: 404},
		{name: "debug deadletters admin", method: "GET", path: "/debug/deadletters", key: "admin", status: 200, has: []string{`"count":2`},
			mod: func(c *Config) { c.DebugDeadLetters = func() any { return map[string]int{"count": 2} } }},
		{name: "method not allowed", method: "DELETE", path: "/v1/groups", key: "admin", status: 405, code: "method_not_allowed",
			check: func(t *testing.T, e *env, resp *http.Response, _ []byte) {
				if a := resp.Header.Get("Allow"); !strings.Contains(a, "GET") || !strings.Contains(a, "POST") {
					t.Errorf("Allow %q", a)
				}
			}},
		{name: "method not allowed with wildcard", method: "PUT", path: "/v1/groups/x/cancel", key: "admin", status: 405, code: "method_not_allowed"},
		{name: "unknown api path", method: "GET", path: "/v1/nothing", key: "admin", status: 404, code: "not_found"},
		{name: "no board", method: "GET", path: "/", status: 404, code: "not_found"},
		{name: "board mounted", mod: func(c *Config) {
			c.Board = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("board")) })
		}, method: "GET", path: "/", status: 200, has: []string{"board"}},
	})
}

func TestKeyTouchIsThrottled(t *testing.T) {
	e := newEnv(t, nil)
	lastUsed := func() time.Time {
		keys, err := e.st.ListKeys(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if k.ID == e.keyIDs["read"] {
				return k.LastUsedAt
			}
		}
		t.Fatal("key not found")
		return time.Time{}
	}
	e.do("GET", "/v1/groups", "", "read", nil)
	first := lastUsed()
	if !first.Equal(e.clock.Now()) {
		t.Fatalf("last used %v, want %v", first, e.clock.Now())
	}
	e.clock.Advance(30 * time.Second)
	e.do("GET", "/v1/groups", "", "read", nil)
	if got := lastUsed(); !got.Equal(first) {
		t.Errorf("touched again after 30 s: %v", got)
	}
	e.clock.Advance(31 * time.Second)
	e.do("GET", "/v1/groups", "", "read", nil)
	if got := lastUsed(); !got.Equal(e.clock.Now()) {
		t.Errorf("not touched after 61 s: %v", got)
	}
}
