// Package apikey creates, parses and checks crewcast API keys.
//
// A key looks like cc_<prefix>_<secret>: "cc_", 8 lowercase base32
// characters that identify the key (stored, not secret), "_", and 32
// lowercase base32 characters (160 random bits) that are the secret. Only
// the prefix and the SHA-256 of the whole key are stored, so a database
// leak reveals no usable key. Lookups go by prefix and compare hashes in
// constant time.
//
// Scopes nest: admin ⊇ send ⊇ read. read allows GET requests only; send
// adds creating and operating groups and editing suppressions; admin adds
// key management and the debug endpoints.
//
// Concurrency: every function is safe for concurrent use; an
// Authenticator may be shared by all requests.
package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Scope is a permission level of an API key.
type Scope string

// Scopes, from least to most powerful; each includes the ones before it.
const (
	ScopeRead  Scope = "read"
	ScopeSend  Scope = "send"
	ScopeAdmin Scope = "admin"
)

// AllScopes lists every scope from least to most powerful.
var AllScopes = []Scope{ScopeRead, ScopeSend, ScopeAdmin}

// rank orders scopes so that a higher rank includes every lower one.
func (s Scope) rank() int {
	switch s {
	case ScopeRead:
		return 1
	case ScopeSend:
		return 2
	case ScopeAdmin:
		return 3
	}
	return 0
}

// Valid reports whether s is a known scope.
func (s Scope) Valid() bool { return s.rank() > 0 }

// Includes reports whether a key holding s may do what need requires.
func (s Scope) Includes(need Scope) bool { return s.Valid() && need.Valid() && s.rank() >= need.rank() }

// ParseScope parses a scope name.
func ParseScope(name string) (Scope, error) {
	s := Scope(strings.TrimSpace(strings.ToLower(name)))
	if !s.Valid() {
		return "", fmt.Errorf("unknown scope %q (want read, send or admin)", name)
	}
	return s, nil
}

// Key format parts.
const (
	keyPrefix    = "cc_"
	prefixChars  = 8
	secretChars  = 32
	keyLen       = len(keyPrefix) + prefixChars + 1 + secretChars
	minForeignLn = 16 // shortest bootstrap key accepted in a foreign format
)

// encoding is lowercase base32 without padding: case-insensitive readers
// and URL-safe, and no ambiguous 0/1/8/9 digits.
var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Errors callers branch on.
var (
	// ErrInvalidKey: the key is malformed, unknown or revoked. The HTTP
	// layer answers 401 and never says which.
	ErrInvalidKey = errors.New("invalid API key")
	// ErrBootstrapConflict: a different key already uses the bootstrap
	// key's prefix.
	ErrBootstrapConflict = errors.New("bootstrap key prefix already used by another key")
)

// Hash returns the SHA-256 of a whole key, as stored.
func Hash(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// PrefixOf returns the lookup prefix of a key: the prefix part of a
// cc_ key, or for a key in any other format (an operator-chosen bootstrap
// key) "x" followed by 15 hex digits of its hash, so that such keys can be
// looked up the same way. It returns "" for a string that cannot be a key.
func PrefixOf(key string) string {
	if len(key) == keyLen && strings.HasPrefix(key, keyPrefix) && key[len(keyPrefix)+prefixChars] == '_' {
		p := key[len(keyPrefix) : len(keyPrefix)+prefixChars]
		s := key[len(keyPrefix)+prefixChars+1:]
		if isBase32(p) && isBase32(s) {
			return p
		}
		return ""
	}
	if len(key) < minForeignLn || len(key) > 512 || strings.HasPrefix(key, keyPrefix) {
		return ""
	}
	for i := 0; i < len(key); i++ {
		if key[i] <= ' ' || key[i] > '~' {
			return ""
		}
	}
	return "x" + hex.EncodeToString(Hash(key))[:15]
}

func isBase32(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// Generate makes a new random key from r (crypto/rand.Reader when nil) and
// the record to store for it. The plaintext is returned only here.
func Generate(r io.Reader, name string, scopes []Scope, now time.Time) (plaintext string, rec store.APIKey, err error) {
	if r == nil {
		r = rand.Reader
	}
	if len(scopes) == 0 {
		return "", store.APIKey{}, errors.New("apikey: at least one scope is required")
	}
	names := make([]string, 0, len(scopes))
	for _, s := range scopes {
		if !s.Valid() {
			return "", store.APIKey{}, fmt.Errorf("apikey: unknown scope %q", s)
		}
		if !slices.Contains(names, string(s)) {
			names = append(names, string(s))
		}
	}
	var b [5 + 20 + 10]byte // prefix, secret, id
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", store.APIKey{}, fmt.Errorf("apikey: random: %w", err)
	}
	prefix := encoding.EncodeToString(b[:5])
	plaintext = keyPrefix + prefix + "_" + encoding.EncodeToString(b[5:25])
	rec = store.APIKey{
		ID:        "key_" + encoding.EncodeToString(b[25:]),
		Name:      name,
		Prefix:    prefix,
		Hash:      Hash(plaintext),
		Scopes:    names,
		CreatedAt: now.UTC(),
	}
	return plaintext, rec, nil
}

// Audit actions of key changes (docs/design.md §14), for the API and the CLI.
const (
	AuditKeyCreated = "key.created"
	AuditKeyRevoked = "key.revoked"
)

// AuditTarget is how the audit log names a key: its id, name and scopes
// (never the key).
func AuditTarget(k store.APIKey) string {
	return k.ID + " " + k.Name + " " + strings.Join(k.Scopes, ",")
}

// Create generates a key and stores it. The plaintext is returned only here.
func Create(ctx context.Context, keys store.Keys, name string, scopes []Scope, now time.Time) (string, store.APIKey, error) {
	return CreateAudited(ctx, keys, name, scopes, now, nil)
}

// CreateAudited is Create with the audit entry that records the key,
// built by audit from the new key (nil: none) and committed in the same
// store transaction as the key.
func CreateAudited(ctx context.Context, keys store.Keys, name string, scopes []Scope, now time.Time, audit func(store.APIKey) store.AuditEntry) (string, store.APIKey, error) {
	return CreateWith(ctx, keys, name, scopes, Options{}, now, audit)
}

// Options are a new key's optional properties.
type Options struct {
	// CreatedBy is the user the key belongs to ("" for none).
	CreatedBy string
	// ExpiresAt is when the key stops working (zero: never); it must be
	// after now.
	ExpiresAt time.Time
}

// ErrExpiresInPast refuses a key that would expire before it is made.
var ErrExpiresInPast = errors.New("apikey: the expiry time has passed")

// CreateWith is CreateAudited for a key with opts.
func CreateWith(ctx context.Context, keys store.Keys, name string, scopes []Scope, opts Options, now time.Time, audit func(store.APIKey) store.AuditEntry) (string, store.APIKey, error) {
	if !opts.ExpiresAt.IsZero() && !opts.ExpiresAt.After(now) {
		return "", store.APIKey{}, ErrExpiresInPast
	}
	plaintext, rec, err := Generate(nil, name, scopes, now)
	if err != nil {
		return "", store.APIKey{}, err
	}
	rec.CreatedBy = opts.CreatedBy
	if !opts.ExpiresAt.IsZero() {
		rec.ExpiresAt = opts.ExpiresAt.UTC()
	}
	var entries []store.AuditEntry
	if audit != nil {
		entries = append(entries, audit(rec))
	}
	if err := keys.CreateKey(ctx, rec, entries...); err != nil {
		return "", store.APIKey{}, fmt.Errorf("apikey: store key: %w", err)
	}
	return plaintext, rec, nil
}

// EnsureBootstrap registers plaintext (CREWCAST_ADMIN_KEY) as an admin key
// named "bootstrap" unless it is already registered, so that a fresh
// server can be driven by scripts. Calling it again, from this or another
// process, changes nothing; a bootstrap key an operator revoked stays
// revoked. The key may be a cc_ key or any printable string of at least 16
// characters.
func EnsureBootstrap(ctx context.Context, keys store.Keys, plaintext string, now time.Time) (store.APIKey, error) {
	prefix := PrefixOf(plaintext)
	if prefix == "" {
		return store.APIKey{}, fmt.Errorf("apikey: bootstrap key must be a cc_ key or at least %d printable characters", minForeignLn)
	}
	hash := Hash(plaintext)
	existing, err := keys.KeyByPrefix(ctx, prefix)
	switch {
	case err == nil:
		if subtle.ConstantTimeCompare(existing.Hash, hash) != 1 {
			return store.APIKey{}, ErrBootstrapConflict
		}
		return existing, nil
	case !errors.Is(err, actor.ErrNotFound):
		return store.APIKey{}, fmt.Errorf("apikey: bootstrap: %w", err)
	}
	rec := store.APIKey{
		ID:        "key_bootstrap_" + prefix,
		Name:      "bootstrap",
		Prefix:    prefix,
		Hash:      hash,
		Scopes:    []string{string(ScopeAdmin)},
		CreatedAt: now.UTC(),
	}
	// Audited, by the system (the key comes from the configuration), in
	// the key's own transaction: a process that loses the race to
	// register it writes neither.
	entry := store.AuditEntry{At: rec.CreatedAt, Actor: store.AuditActor{Type: store.ActorSystem, ID: "bootstrap", Name: "CREWCAST_ADMIN_KEY"},
		Action: AuditKeyCreated, Target: AuditTarget(rec)}
	if err := keys.CreateKey(ctx, rec, entry); err != nil {
		// Another process may have registered it at the same moment.
		if again, gerr := keys.KeyByPrefix(ctx, prefix); gerr == nil && subtle.ConstantTimeCompare(again.Hash, hash) == 1 {
			return again, nil
		}
		return store.APIKey{}, fmt.Errorf("apikey: bootstrap: %w", err)
	}
	return rec, nil
}

// Principal is who made a request: an API key that passed Authenticate.
type Principal struct {
	KeyID  string
	Name   string
	Prefix string
	Scopes []Scope
	// Owner is the user the key belongs to ("" for none); ExpiresAt when
	// it stops working (zero: never).
	Owner     string
	ExpiresAt time.Time
}

// Has reports whether any of the principal's scopes includes need.
func (p Principal) Has(need Scope) bool {
	for _, s := range p.Scopes {
		if s.Includes(need) {
			return true
		}
	}
	return false
}

// PrincipalOf turns a stored key into a Principal, dropping scope names it
// does not know (a key created by a newer version keeps working with the
// scopes this version understands).
func PrincipalOf(k store.APIKey) Principal {
	p := Principal{KeyID: k.ID, Name: k.Name, Prefix: k.Prefix, Owner: k.CreatedBy, ExpiresAt: k.ExpiresAt}
	for _, s := range k.Scopes {
		if Scope(s).Valid() {
			p.Scopes = append(p.Scopes, Scope(s))
		}
	}
	return p
}

// DefaultTouchInterval is how often at most an Authenticator records a
// key's last use.
const DefaultTouchInterval = time.Minute

// Authenticator checks presented keys against the store and records their
// last use, at most once per TouchInterval per key so that reads do not
// each cost a write.
type Authenticator struct {
	keys  store.Keys
	now   func() time.Time
	every time.Duration

	mu      sync.Mutex
	touched map[string]time.Time // key id → last recorded use
}

// NewAuthenticator returns an Authenticator over keys. now defaults to
// time.Now and touchEvery (≤ 0) to DefaultTouchInterval.
func NewAuthenticator(keys store.Keys, now func() time.Time, touchEvery time.Duration) *Authenticator {
	if now == nil {
		now = time.Now
	}
	if touchEvery <= 0 {
		touchEvery = DefaultTouchInterval
	}
	return &Authenticator{keys: keys, now: now, every: touchEvery, touched: map[string]time.Time{}}
}

// Authenticate returns the principal of a presented key. It returns
// ErrInvalidKey for a malformed, unknown, revoked or expired key and for
// the key of a disabled user, and a wrapped
// store error when the store cannot answer (the caller answers 503, not
// 401, so clients retry instead of discarding a good key).
//
// Recording the last use is best effort: its error is returned as touchErr
// beside a successful authentication, because last-used is advisory and a
// store that cannot write must not stop reads.
func (a *Authenticator) Authenticate(ctx context.Context, key string) (p Principal, touchErr error, err error) {
	prefix := PrefixOf(key)
	if prefix == "" {
		return Principal{}, nil, ErrInvalidKey
	}
	k, err := a.lookup(ctx, prefix)
	if err != nil {
		return Principal{}, nil, err
	}
	if subtle.ConstantTimeCompare(k.Hash, Hash(key)) != 1 || !a.usable(k) {
		return Principal{}, nil, ErrInvalidKey
	}
	return PrincipalOf(k), a.touch(ctx, k.ID), nil
}

// Check returns the principal of a stored key found by prefix if it still
// has the given id and may be used as Authenticate judges it (sessions
// and open event streams re-check their key, so revoking a key ends them).
func (a *Authenticator) Check(ctx context.Context, prefix, id string) (p Principal, touchErr error, err error) {
	k, err := a.lookup(ctx, prefix)
	if err != nil {
		return Principal{}, nil, err
	}
	if k.ID != id || !a.usable(k) {
		return Principal{}, nil, ErrInvalidKey
	}
	return PrincipalOf(k), a.touch(ctx, k.ID), nil
}

// usable reports whether a stored key may be used now: not revoked, not
// expired, and not suspended (its owner disabled).
func (a *Authenticator) usable(k store.APIKey) bool {
	return k.RevokedAt.IsZero() && !k.Suspended && (k.ExpiresAt.IsZero() || a.now().Before(k.ExpiresAt))
}

// lookup finds a stored key by prefix: ErrInvalidKey when there is none,
// a wrapped store error when the store cannot answer.
func (a *Authenticator) lookup(ctx context.Context, prefix string) (store.APIKey, error) {
	k, err := a.keys.KeyByPrefix(ctx, prefix)
	if errors.Is(err, actor.ErrNotFound) {
		return store.APIKey{}, ErrInvalidKey
	}
	if err != nil {
		return store.APIKey{}, fmt.Errorf("apikey: look up key: %w", err)
	}
	return k, nil
}

// touch records a use unless one was recorded less than every ago. A failed
// write is throttled too, so a broken store is not hammered.
func (a *Authenticator) touch(ctx context.Context, id string) error {
	now := a.now()
	a.mu.Lock()
	last, ok := a.touched[id]
	due := !ok || now.Sub(last) >= a.every
	if due {
		a.touched[id] = now
		if len(a.touched) > 100000 { // bounded: forget everything rather than grow forever
			clear(a.touched)
			a.touched[id] = now
		}
	}
	a.mu.Unlock()
	if !due {
		return nil
	}
	if err := a.keys.TouchKey(ctx, id, now.UTC()); err != nil {
		return fmt.Errorf("apikey: record key use: %w", err)
	}
	return nil
}

// Forget drops the throttle state of a key (after it is revoked).
func (a *Authenticator) Forget(id string) {
	a.mu.Lock()
	delete(a.touched, id)
	a.mu.Unlock()
}
