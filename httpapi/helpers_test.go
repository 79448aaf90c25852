package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"go.uber.org/goleak"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/metrics"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
	"github.com/crewcast/crewcast/tracker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(coverageRun{m}) }

// The seam with the tracker: the real one must satisfy Service.
var _ Service = (*tracker.Tracker)(nil)

// ---- clock ----

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// ---- fake Service ----

// fakeService is a hand-written Service: each method calls its Func field.
type fakeService struct {
	CreateFunc  func(ctx context.Context, req group.Request, opts tracker.CreateOptions) (string, bool, error)
	CancelFunc  func(ctx context.Context, id, by string) error
	ResolveFunc func(ctx context.Context, id, number, outcome, by string) error
	RetryFunc   func(ctx context.Context, id, number, by string) error
	ResumeFunc  func(ctx context.Context, id, by string) error
	IngestFunc  func(ctx context.Context, events []crewcast.Event) (bool, error)
	hub         *tracker.Hub
}

func (f *fakeService) Create(ctx context.Context, req group.Request, opts tracker.CreateOptions) (string, bool, error) {
	return f.CreateFunc(ctx, req, opts)
}
func (f *fakeService) Cancel(ctx context.Context, id, by string) error {
	return f.CancelFunc(ctx, id, by)
}
func (f *fakeService) Resolve(ctx context.Context, id, number, outcome, by string) error {
	return f.ResolveFunc(ctx, id, number, outcome, by)
}
func (f *fakeService) Retry(ctx context.Context, id, number, by string) error {
	return f.RetryFunc(ctx, id, number, by)
}
func (f *fakeService) Resume(ctx context.Context, id, by string) error {
	return f.ResumeFunc(ctx, id, by)
}
func (f *fakeService) Ingest(ctx context.Context, events []crewcast.Event) (bool, error) {
	return f.IngestFunc(ctx, events)
}
func (f *fakeService) Hub() *tracker.Hub { return f.hub }

// miniTracker gives the fake Service realistic behaviour: groups planned
// and applied by the real domain package, committed to the real store
// (journal + projections in one unit) and published on the hub, like the
// tracker does.
type miniTracker struct {
	st  store.Store
	hub *tracker.Hub
	now func() time.Time

	mu     sync.Mutex
	n      int
	groups map[string]*group.Group
	seq    map[string]uint64
	idem   map[string][2]string // key → {request hash, group id}
}

func newMiniTracker(st store.Store, hub *tracker.Hub, now func() time.Time) *miniTracker {
	return &miniTracker{st: st, hub: hub, now: now, groups: map[string]*group.Group{}, seq: map[string]uint64{},
		idem: map[string][2]string{}}
}

func (m *miniTracker) create(ctx context.Context, req group.Request, opts tracker.CreateOptions) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, _ := json.Marshal(struct {
		R group.Request
		C time.Duration
	}{req, opts.CheckAfter})
	hash := fmt.Sprintf("%x", sha256.Sum256(b))
	idemKey := opts.By + "\x00" + opts.IdempotencyKey // scoped to the caller, like the tracker
	if opts.IdempotencyKey != "" {
		if e, ok := m.idem[idemKey]; ok {
			if e[0] != hash {
				return "", false, tracker.ErrIdempotencyMismatch
			}
			return e[1], false, nil
		}
	}
	m.n++
	id := fmt.Sprintf("grp%04d", m.n)
	created, errs, total := group.PlanWith(id, req, group.DefaultSettings(), nil, m.now(), group.NormalizeNumber)
	if len(errs) > 0 {
		return "", false, &tracker.ValidationError{Fields: errs, Total: total}
	}
	if errs := group.PlanPolicy(&created, req, group.PolicyDefaults{}, group.NormalizeNumber); len(errs) > 0 {
		return "", false, &tracker.ValidationError{Fields: errs, Total: len(errs)}
	}
	if errs := group.PlanCallout(&created, req.CalloutInput, req.ExactGiven); len(errs) > 0 {
		return "", false, &tracker.ValidationError{Fields: errs, Total: len(errs)}
	}
	g := &group.Group{}
	if err := m.applyLocked(ctx, g, created); err != nil {
		return "", false, err
	}
	m.groups[id] = g
	if opts.IdempotencyKey != "" {
		m.idem[idemKey] = [2]string{hash, id}
	}
	return id, true, nil
}

// apply appends events to a group (as the group actor would).
func (m *miniTracker) apply(ctx context.Context, id string, evs ...group.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[id]
	if !ok {
		return tracker.ErrNotFound
	}
	return m.applyLocked(ctx, g, evs...)
}

func (m *miniTracker) applyLocked(ctx context.Context, g *group.Group, evs ...group.Event) error {
	var unit actor.Unit
	var views []tracker.EventView
	for _, ev := range evs {
		if err := g.Apply(ev); err != nil {
			return err
		}
		typ, data, err := group.Encode(ev)
		if err != nil {
			return err
		}
		seq := m.seq[g.ID] + uint64(len(unit.Events)) + 1
		at := m.now()
		unit.Events = append(unit.Events, actor.Event{Seq: seq, Type: typ, Data: data, Time: at})
		views = append(views, tracker.EventView{Seq: seq, Type: typ, Time: at, Data: data})
	}
	unit.Key, unit.ExpectSeq = g.ID, m.seq[g.ID]
	last := m.seq[g.ID] + uint64(len(evs))
	row := store.GroupRow{ID: g.ID, Status: g.Status, From: g.From, Mode: g.Mode, Text: g.Text,
		PauseReason: g.PauseReason, CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt, Counts: g.Counts(), Seq: last,
		Answers: g.AnswersJSON()}
	eff := store.Effects{Group: &row}
	for _, i := range g.TakeDirty() {
		r := g.Recipients[i]
		eff.Deliveries = append(eff.Deliveries, store.DeliveryRow{GroupID: g.ID, Number: r.Number, Name: r.Name,
			Status: r.Status, Attempts: r.Attempts, ProviderMessageID: r.MessageID, ErrorCode: r.ErrorCode,
			ErrorClass: r.ErrorClass, ClaimedAt: r.ClaimedAt, SentAt: r.SentAt, DeliveredAt: r.DeliveredAt,
			FailedAt: r.FailedAt, RepliedAt: r.RepliedAt, Ack: r.Ack, LastReply: r.LastReply, UpdatedAt: g.UpdatedAt,
			Response: r.Response})
	}
	unit.Effects = []any{eff}
	results, err := m.st.Commit(ctx, []actor.Unit{unit})
	if err != nil {
		return fmt.Errorf("%w: %v", tracker.ErrUnavailable, err)
	}
	if results[0] != nil {
		return fmt.Errorf("%w: %v", tracker.ErrUnavailable, results[0])
	}
	m.seq[g.ID] = last
	m.hub.Publish(tracker.Change{GroupID: g.ID, Seq: last, Events: views})
	return nil
}

func (m *miniTracker) command(ctx context.Context, id string, fn func(g *group.Group, now time.Time) (group.Event, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[id]
	if !ok {
		return tracker.ErrNotFound
	}
	ev, err := fn(g, m.now())
	if err != nil {
		return err
	}
	return m.applyLocked(ctx, g, ev)
}

// ---- environment ----

type env struct {
	t       *testing.T
	clock   *fakeClock
	st      *sqlite.Store
	path    string // the store's database file
	svc     *fakeService
	mini    *miniTracker
	reg     *metrics.Registry
	handler http.Handler
	srv     *httptest.Server
	done    chan struct{}
	// keys by name: admin, send, read, revoked.
	keys   map[string]string
	keyIDs map[string]string
}

// newEnv starts the API on a real SQLite store with a miniTracker-backed
// fake Service. mod may change the Config before New.
func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	ctx := context.Background()
	clock := newClock()
	path := t.TempDir() + "/db"
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, Now: clock.Now})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	hub := tracker.NewHub()
	mini := newMiniTracker(st, hub, clock.Now)
	svc := &fakeService{hub: hub, CreateFunc: mini.create,
		CancelFunc: func(ctx context.Context, id, by string) error {
			return mini.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.Cancel(now, by) })
		},
		ResumeFunc: func(ctx context.Context, id, by string) error {
			return mini.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.Resume(now, by) })
		},
		ResolveFunc: func(ctx context.Context, id, number, outcome, by string) error {
			return mini.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) {
				return g.Resolve(number, outcome, now, by)
			})
		},
		RetryFunc: func(ctx context.Context, id, number, by string) error {
			return mini.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.Retry(number, now, by) })
		},
		IngestFunc: func(context.Context, []crewcast.Event) (bool, error) { return true, nil },
	}
	e := &env{t: t, clock: clock, st: st, path: path, svc: svc, mini: mini, reg: metrics.New(), done: make(chan struct{}),
		keys: map[string]string{}, keyIDs: map[string]string{}}
	for _, k := range []struct {
		name  string
		scope apikey.Scope
	}{{"admin", apikey.ScopeAdmin}, {"send", apikey.ScopeSend}, {"read", apikey.ScopeRead}, {"revoked", apikey.ScopeAdmin}} {
		plain, rec, err := apikey.Create(ctx, st, k.name, []apikey.Scope{k.scope}, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		e.keys[k.name], e.keyIDs[k.name] = plain, rec.ID
	}
	if err := st.RevokeKey(ctx, e.keyIDs["revoked"], clock.Now()); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: st, Service: svc, Now: clock.Now, Metrics: e.reg, Done: e.done,
		DebugActors: func() any { return map[string]int{"active": 3} }}
	if mod != nil {
		mod(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.handler = h
	e.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		select {
		case <-e.done:
		default:
			close(e.done)
		}
		e.srv.Close()
	})
	return e
}

// createGroup makes a group through the fake service and returns its id.
func (e *env) createGroup(numbers ...string) string {
	e.t.Helper()
	req := group.Request{From: "+15550100000", Text: "Crew call 7am"}
	for i, n := range numbers {
		req.Recipients = append(req.Recipients, group.RecipientInput{Number: n, Name: fmt.Sprintf("Person %d", i+1)})
	}
	id, _, err := e.mini.create(context.Background(), req, tracker.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create group: %v", err)
	}
	return id
}

// apply appends events to a group.
func (e *env) apply(id string, evs ...group.Event) {
	e.t.Helper()
	if err := e.mini.apply(context.Background(), id, evs...); err != nil {
		e.t.Fatalf("apply: %v", err)
	}
}

// sendAndDeliver claims, accepts and delivers recipient i of a group, so
// that it has timestamps, a message id and several journal events.
func (e *env) sendAndDeliver(id string, i int, delivered bool) {
	e.t.Helper()
	now := e.clock.Now()
	sid := fmt.Sprintf("s%d", i)
	mid := fmt.Sprintf("msg-%s-%d", id, i)
	e.apply(id, group.Claimed{At: now, Sends: []group.Send{{ID: sid, Indices: []int{i}}}})
	e.clock.Advance(time.Second)
	e.apply(id, group.Outcomes{At: e.clock.Now(), Outcomes: []group.Outcome{{SendID: sid, Indices: []int{i},
		Result: group.ResultAccepted, MessageID: mid}}})
	e.clock.Advance(2 * time.Second)
	st, code, class := crewcast.StatusDelivered, "", crewcast.ClassNone
	if !delivered {
		st, code, class = crewcast.StatusFailed, "40300", crewcast.ClassRecipient
	}
	e.apply(id, group.Observed{At: e.clock.Now(), EventID: "ev-" + mid, Source: group.SourceWebhook, Index: i,
		MessageID: mid, Status: st, Code: code, Class: class})
}

// do sends a request to the test server. key names one of env.keys, or is
// a literal Authorization value when it contains a space, or "" for none.
func (e *env) do(method, path, body, key string, header map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case key == "":
	case strings.Contains(key, " "):
		req.Header.Set("Authorization", key)
	case e.keys[key] != "":
		req.Header.Set("Authorization", "Bearer "+e.keys[key])
	default:
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	validateResponse(e.t, e.handler, req, resp, b)
	return resp, b
}

// decode unmarshals a JSON response body.
func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, b)
	}
	return v
}

// ---- OpenAPI response validation ----

var (
	docOnce sync.Once
	doc     *openapi3.T
	docErr  error
)

func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	d, err := docForCoverage()
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return d
}

// docForCoverage loads, validates and makes strict the document, once.
func docForCoverage() (*openapi3.T, error) {
	docOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, docErr = loader.LoadFromData(openapiYAML)
		if docErr == nil {
			docErr = doc.Validate(context.Background())
		}
		if docErr == nil {
			strictObjects(doc)
		}
	})
	return doc, docErr
}

// strictObjects makes the checked document refuse what it does not
// describe: every object schema that names its properties and says nothing
// of others gets additionalProperties: false, and an allOf of objects is
// flattened into one object first (each part on its own would refuse the
// other's properties). Generated clients in strict languages throw on
// unknown fields, so an undocumented field in a response fails the test.
func strictObjects(d *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(*openapi3.SchemaRef)
	walk = func(r *openapi3.SchemaRef) {
		if r == nil || r.Value == nil || seen[r.Value] {
			return
		}
		s := r.Value
		seen[s] = true
		for _, group := range [][]*openapi3.SchemaRef{s.AllOf, s.OneOf, s.AnyOf} {
			for _, m := range group {
				walk(m)
			}
		}
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		walk(s.AdditionalProperties.Schema)
		flattenAllOf(s)
		if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			no := false
			s.AdditionalProperties.Has = &no
		}
	}
	for _, r := range d.Components.Schemas {
		walk(r)
	}
	for _, r := range d.Components.Responses {
		if r.Value != nil {
			for _, mt := range r.Value.Content {
				walk(mt.Schema)
			}
		}
	}
	for _, item := range d.Paths.Map() {
		for _, op := range item.Operations() {
			for _, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for _, mt := range r.Value.Content {
					walk(mt.Schema)
				}
			}
		}
	}
}

// flattenAllOf turns an allOf whose parts are all objects into one object
// holding every part's properties and required names.
func flattenAllOf(s *openapi3.Schema) {
	if len(s.AllOf) == 0 {
		return
	}
	props := openapi3.Schemas{}
	var required []string
	for _, m := range s.AllOf {
		if m.Value == nil || len(m.Value.Properties) == 0 || m.Value.AdditionalProperties.Schema != nil {
			return
		}
		for k, v := range m.Value.Properties {
			props[k] = v
		}
		required = append(required, m.Value.Required...)
	}
	for k, v := range s.Properties {
		props[k] = v
	}
	s.Properties, s.Required, s.AllOf = props, append(required, s.Required...), nil
	s.Type = &openapi3.Types{openapi3.TypeObject}
	s.AdditionalProperties = openapi3.AdditionalProperties{}
}

// validateResponse fails the test when checkResponse finds a response
// that openapi.yaml does not describe.
func validateResponse(t *testing.T, h http.Handler, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if err := checkResponse(loadDoc(t), h, req, resp, body); err != nil {
		t.Errorf("%s %s: %v", req.Method, req.URL.Path, err)
	}
}

// checkResponse checks a response against the OpenAPI document: its
// status must be documented for the operation and a JSON body must match
// the schema. Responses of the mux's fallbacks (404/405) must still be the
// documented error envelope.
func checkResponse(d *openapi3.T, h http.Handler, req *http.Request, resp *http.Response, body []byte) error {
	mux := h.(*http.ServeMux)
	_, pattern := mux.Handler(req)
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		path = pattern
	}
	var op *openapi3.Operation
	var item *openapi3.PathItem
	if ok {
		item = d.Paths.Value(path)
		if item != nil {
			op = item.GetOperation(method)
		}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if op == nil {
		if path == "/" && resp.StatusCode == http.StatusOK {
			return nil // the board
		}
		if ct != "application/json" {
			return fmt.Errorf("fallback answered %d with %q, want the JSON error envelope", resp.StatusCode, ct)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("fallback body is not JSON: %v", err)
		}
		if err := d.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
			return fmt.Errorf("fallback body does not match Error: %v", err)
		}
		return nil
	}
	if op.Responses.Status(resp.StatusCode) == nil {
		return fmt.Errorf("status %d of %s %s is not documented in openapi.yaml", resp.StatusCode, method, path)
	}
	validated.Store(method+" "+path, true)
	if resp.StatusCode < 300 {
		validatedOK.Store(method+" "+path, true)
	}
	if ct != "application/json" {
		if ct != "" && (len(body) > 0 || ct == "text/event-stream") && op.Responses.Status(resp.StatusCode).Value.Content.Get(ct) == nil {
			return fmt.Errorf("content type %q of status %d of %s %s is not documented", ct, resp.StatusCode, method, path)
		}
		return nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req,
			Route:   &routers.Route{Spec: d, Path: path, PathItem: item, Method: method, Operation: op},
			Options: &openapi3filter.Options{ExcludeRequestBody: true},
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s → %d does not match openapi.yaml: %v\nbody: %s", method, path, resp.StatusCode, err, body)
	}
	return nil
}

// errorOf decodes the error envelope.
func errorOf(t *testing.T, b []byte) errorJSON {
	t.Helper()
	return decode[errorBody](t, b).Error
}

// errs is a failing store used to simulate outages.
var errDiskFull = errors.New("disk I/O error: database or disk is full")
