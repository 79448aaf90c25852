package apikey

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: t.TempDir() + "/db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestScopesNest(t *testing.T) {
	for _, c := range []struct {
		have, need Scope
		ok         bool
	}{
		{ScopeAdmin, ScopeAdmin, true}, {ScopeAdmin, ScopeSend, true}, {ScopeAdmin, ScopeRead, true},
		{ScopeSend, ScopeAdmin, false}, {ScopeSend, ScopeSend, true}, {ScopeSend, ScopeRead, true},
		{ScopeRead, ScopeAdmin, false}, {ScopeRead, ScopeSend, false}, {ScopeRead, ScopeRead, true},
		{"root", ScopeRead, false}, {ScopeAdmin, "root", false},
	} {
		if got := c.have.Includes(c.need); got != c.ok {
			t.Errorf("%s includes %s = %v, want %v", c.have, c.need, got, c.ok)
		}
	}
	if s, err := ParseScope(" Admin "); err != nil || s != ScopeAdmin {
		t.Errorf("ParseScope: %v %v", s, err)
	}
	if _, err := ParseScope("owner"); err == nil {
		t.Error("unknown scope parsed")
	}
	p := Principal{Scopes: []Scope{ScopeRead, ScopeSend}}
	if !p.Has(ScopeSend) || p.Has(ScopeAdmin) {
		t.Errorf("principal %v", p)
	}
}

func TestGenerateFormatAndStorage(t *testing.T) {
	plain, rec, err := Generate(nil, "ci", []Scope{ScopeSend, ScopeSend}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) != keyLen || !strings.HasPrefix(plain, "cc_"+rec.Prefix+"_") {
		t.Errorf("key %q, prefix %q", plain, rec.Prefix)
	}
	if PrefixOf(plain) != rec.Prefix || len(rec.Prefix) != 8 {
		t.Errorf("PrefixOf %q != %q", PrefixOf(plain), rec.Prefix)
	}
	if !bytes.Equal(rec.Hash, Hash(plain)) || bytes.Contains(rec.Hash, []byte(plain[12:])) {
		t.Error("the record must hold the SHA-256 of the key and nothing of the secret")
	}
	if len(rec.Scopes) != 1 || rec.Scopes[0] != "send" || rec.Name != "ci" || !rec.CreatedAt.Equal(t0) || rec.ID == "" {
		t.Errorf("record %+v", rec)
	}
	other, rec2, _ := Generate(nil, "", []Scope{ScopeRead}, t0)
	if other == plain || rec2.ID == rec.ID || rec2.Prefix == rec.Prefix {
		t.Error("two generated keys collide")
	}
	// A short random source is an error, not a weak key.
	if _, _, err := Generate(bytes.NewReader(make([]byte, 10)), "", []Scope{ScopeRead}, t0); err == nil {
		t.Error("short randomness accepted")
	}
	if _, _, err := Generate(nil, "", nil, t0); err == nil {
		t.Error("no scopes accepted")
	}
	if _, _, err := Generate(nil, "", []Scope{"root"}, t0); err == nil {
		t.Error("unknown scope accepted")
	}
}

func TestPrefixOf(t *testing.T) {
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"cc_abcdefgh_abcdefghijklmnopqrstuvwxyz234567", true},
		{"cc_abcdefgh_abcdefghijklmnopqrstuvwxyz23456", false},  // short
		{"cc_ABCDEFGH_abcdefghijklmnopqrstuvwxyz234567", false}, // not our alphabet
		{"cc_abcdefgh-abcdefghijklmnopqrstuvwxyz234567", false},
		{"an-operator-chosen-secret", true}, // bootstrap keys in any format
		{"short", false},
		{"has a space in it ok?", false},
		{"", false},
	} {
		if got := PrefixOf(c.key) != ""; got != c.want {
			t.Errorf("PrefixOf(%q) valid = %v, want %v", c.key, got, c.want)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	now := t0
	a := NewAuthenticator(st, func() time.Time { return now }, time.Minute)
	plain, rec, err := Create(ctx, st, "ops", []Scope{ScopeSend}, t0)
	if err != nil {
		t.Fatal(err)
	}
	p, touchErr, err := a.Authenticate(ctx, plain)
	if err != nil || touchErr != nil || p.KeyID != rec.ID || !p.Has(ScopeSend) || p.Has(ScopeAdmin) {
		t.Fatalf("authenticate: %+v %v %v", p, touchErr, err)
	}
	// Same prefix, different secret: refused.
	repl := "a"
	if plain[len(plain)-1] == 'a' {
		repl = "b"
	}
	forged := plain[:len(plain)-1] + repl
	for _, k := range []string{forged, "cc_zzzzzzzz_" + strings.Repeat("a", 32), "garbage", ""} {
		if _, _, err := a.Authenticate(ctx, k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("key %q: %v, want ErrInvalidKey", k, err)
		}
	}
	// Check (sessions): the key found by prefix must still have the id.
	if p, _, err := a.Check(ctx, rec.Prefix, rec.ID); err != nil || p.KeyID != rec.ID || !p.Has(ScopeSend) {
		t.Fatalf("Check: %+v %v", p, err)
	}
	for _, c := range []struct{ prefix, id string }{{rec.Prefix, "key_other"}, {"zzzzzzzz", rec.ID}} {
		if _, _, err := a.Check(ctx, c.prefix, c.id); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Check(%q, %q): %v, want ErrInvalidKey", c.prefix, c.id, err)
		}
	}
	if err := st.RevokeKey(ctx, rec.ID, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Authenticate(ctx, plain); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("revoked key: %v", err)
	}
	if _, _, err := a.Check(ctx, rec.Prefix, rec.ID); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("Check of a revoked key: %v", err)
	}
}

// touchCounter wraps a store and counts TouchKey calls.
type touchCounter struct {
	store.Keys
	mu      sync.Mutex
	touches int
	fail    error
}

func (c *touchCounter) TouchKey(ctx context.Context, id string, at time.Time) error {
	c.mu.Lock()
	c.touches++
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return fail
	}
	return c.Keys.TouchKey(ctx, id, at)
}

func TestTouchIsThrottledAndBestEffort(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	plain, rec, err := Create(ctx, st, "", []Scope{ScopeRead}, t0)
	if err != nil {
		t.Fatal(err)
	}
	keys := &touchCounter{Keys: st}
	now := t0
	a := NewAuthenticator(keys, func() time.Time { return now }, time.Minute)
	for range 5 {
		if _, _, err := a.Authenticate(ctx, plain); err != nil {
			t.Fatal(err)
		}
		now = now.Add(10 * time.Second)
	}
	if keys.touches != 1 {
		t.Errorf("%d touches in 50 s, want 1", keys.touches)
	}
	now = t0.Add(2 * time.Minute)
	keys.fail = errors.New("read-only database")
	p, touchErr, err := a.Authenticate(ctx, plain)
	if err != nil || p.KeyID != rec.ID || touchErr == nil {
		t.Errorf("a failed touch must not fail authentication: %v %v", touchErr, err)
	}
	if _, touchErr, _ := a.Authenticate(ctx, plain); touchErr != nil || keys.touches != 2 {
		t.Errorf("a failed touch is throttled too: %v, %d touches", touchErr, keys.touches)
	}
	keys.fail = nil
	a.Forget(rec.ID)
	if _, _, _ = a.Authenticate(ctx, plain); keys.touches != 3 {
		t.Errorf("Forget did not reset the throttle: %d touches", keys.touches)
	}
	got, err := st.KeyByPrefix(ctx, rec.Prefix)
	if err != nil || !got.LastUsedAt.Equal(now) {
		t.Errorf("last used %v (%v), want %v", got.LastUsedAt, err, now)
	}
}

// failingKeys fails every lookup, like a store that is down.
type failingKeys struct{ store.Keys }

func (failingKeys) KeyByPrefix(context.Context, string) (store.APIKey, error) {
	return store.APIKey{}, errors.New("database is locked")
}

func TestAuthenticateStoreDown(t *testing.T) {
	a := NewAuthenticator(failingKeys{}, nil, 0)
	_, _, err := a.Authenticate(context.Background(), "cc_abcdefgh_abcdefghijklmnopqrstuvwxyz234567")
	if err == nil || errors.Is(err, ErrInvalidKey) {
		t.Errorf("a store failure must not look like a bad key (401 would make clients drop a good key): %v", err)
	}
	if _, _, err := a.Check(context.Background(), "abcdefgh", "key_x"); err == nil || errors.Is(err, ErrInvalidKey) {
		t.Errorf("Check: a store failure must not look like a revoked session: %v", err)
	}
}

func TestEnsureBootstrap(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	const key = "bootstrap-admin-key-for-scripts"
	rec, err := EnsureBootstrap(ctx, st, key, t0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := EnsureBootstrap(ctx, st, key, t0.Add(time.Hour))
	if err != nil || again.ID != rec.ID || !again.CreatedAt.Equal(t0) {
		t.Errorf("second call: %+v %v", again, err)
	}
	keys, _ := st.ListKeys(ctx)
	if len(keys) != 1 || keys[0].Scopes[0] != "admin" {
		t.Fatalf("keys %+v", keys)
	}
	p, _, err := NewAuthenticator(st, nil, 0).Authenticate(ctx, key)
	if err != nil || !p.Has(ScopeAdmin) {
		t.Errorf("bootstrap key does not authenticate as admin: %v", err)
	}
	// A revoked bootstrap key stays revoked.
	if err := st.RevokeKey(ctx, rec.ID, t0); err != nil {
		t.Fatal(err)
	}
	if r, err := EnsureBootstrap(ctx, st, key, t0); err != nil || r.RevokedAt.IsZero() {
		t.Errorf("revoked bootstrap key revived: %+v %v", r, err)
	}
	// A generated key works as a bootstrap key too.
	plain, _, _ := Generate(nil, "", []Scope{ScopeRead}, t0)
	if _, err := EnsureBootstrap(ctx, st, plain, t0); err != nil {
		t.Errorf("cc_ bootstrap key: %v", err)
	}
	if _, err := EnsureBootstrap(ctx, st, "short", t0); err == nil {
		t.Error("a short bootstrap key was accepted")
	}
}

func TestEnsureBootstrapConcurrent(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Go(func() {
			rec, err := EnsureBootstrap(ctx, st, "the-same-bootstrap-key-everywhere", t0)
			ids[i], errs[i] = rec.ID, err
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Errorf("call %d: %s %v", i, ids[i], errs[i])
		}
	}
	// The registration is audited once, by the system, with the key.
	entries, _, err := st.ListAudit(ctx, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Action != AuditKeyCreated || entries[0].Actor.Type != store.ActorSystem ||
		entries[0].Actor.ID != "bootstrap" || entries[0].Target != ids[0]+" bootstrap admin" {
		t.Fatalf("audit after 8 bootstrap registrations = %+v, want one key.created by the system", entries)
	}
}

func TestEnsureBootstrapPrefixConflict(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	key := "operator-key-number-one"
	if err := st.CreateKey(ctx, store.APIKey{ID: "k1", Prefix: PrefixOf(key), Hash: Hash("something else")}); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureBootstrap(ctx, st, key, t0); !errors.Is(err, ErrBootstrapConflict) {
		t.Errorf("got %v, want ErrBootstrapConflict", err)
	}
}

// A key made for a user keeps its owner and expiry, is refused once it
// expires and while its owner is disabled, and works again when the owner
// is enabled.
func TestKeyExpiryAndOwner(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	u := store.User{ID: "usr_a", Email: "a@example.com", Name: "A", Role: store.RoleAdmin, PasswordHash: "h", CreatedAt: t0, UpdatedAt: t0}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	exp := t0.Add(time.Hour)
	plain, rec, err := CreateWith(ctx, st, "ci", []Scope{ScopeSend}, Options{CreatedBy: u.ID, ExpiresAt: exp}, t0, nil)
	if err != nil || rec.CreatedBy != u.ID || !rec.ExpiresAt.Equal(exp) {
		t.Fatalf("CreateWith = %+v, %v", rec, err)
	}
	now := t0
	a := NewAuthenticator(st, func() time.Time { return now }, time.Minute)
	accepted := func() error {
		_, _, err1 := a.Authenticate(ctx, plain)
		_, _, err2 := a.Check(ctx, rec.Prefix, rec.ID)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("Authenticate %v but Check %v", err1, err2)
		}
		return err1
	}
	if p, _, err := a.Authenticate(ctx, plain); err != nil || p.Owner != u.ID || !p.ExpiresAt.Equal(exp) {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}
	u.DisabledAt = t0.Add(time.Minute)
	if err := st.UpdateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := accepted(); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("key of a disabled user: %v, want ErrInvalidKey", err)
	}
	u.DisabledAt = time.Time{}
	if err := st.UpdateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := accepted(); err != nil {
		t.Fatalf("key of a re-enabled user: %v", err)
	}
	now = exp.Add(-time.Nanosecond)
	if err := accepted(); err != nil {
		t.Fatalf("just before expiry: %v", err)
	}
	now = exp
	if err := accepted(); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("at expiry: %v, want ErrInvalidKey", err)
	}
	if _, _, err := CreateWith(ctx, st, "old", []Scope{ScopeRead}, Options{ExpiresAt: t0.Add(-time.Second)}, t0, nil); err == nil {
		t.Fatal("a key that expires before it is made was created")
	}
}
