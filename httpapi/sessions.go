package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"sync"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// ---- sessions ----

// session is one signed-in board: an API key's (keyID, prefix) or a
// user's (userID and the user's session epoch when it was opened: a
// password reset or disable raises the epoch and so ends it on every node).
type session struct {
	hash          []byte // SHA-256 of the session id: the store's key
	keyID, prefix string
	userID        string
	name          string // the key's or user's name at sign-in, for the audit trail
	epoch         int64
	expires       time.Time // absolute end: sign-in + SessionTTL
	lastSeen      time.Time // idle end: lastSeen + SessionIdle
}

// sessions keeps the board's sessions in the store (store.Sessions), so
// that a restart signs no one out and a session opened on one node works
// on every other; signing out, a disable or a delete ends it everywhere.
// The cookie carries a random 256-bit id; the store keeps only its
// SHA-256, so a copy of the database signs no one in.
//
// Idle bookkeeping: a request writes the session's last use only when the
// stored one is touchEvery (a minute) old or more, so a busy board costs
// one write a minute, not one per request. The idle limit is therefore
// exact to within that minute (a session may idle out up to a minute
// early, never late).
//
// The table is bounded twice: each user or key holds at most
// maxSessionsPerKey sessions (a new sign-in beyond that ends the same
// owner's oldest one), and the whole table at most maxSessions (a sign-in
// into a full table is refused). No one's sign-ins can end another's
// session. Ended sessions are deleted by every sign-in and, at most once
// a minute per node, by a request.
type sessions struct {
	st   store.Sessions
	now  func() time.Time
	ttl  time.Duration
	idle time.Duration // ≤ 0: no idle expiry

	touchEvery       time.Duration
	max, maxPerOwner int
	// touchFailed hears a failed last-use write, which does not fail the
	// request: the session was found live.
	touchFailed func(context.Context, error)

	mu        sync.Mutex
	nextSweep time.Time
}

// maxSessions bounds the table; maxSessionsPerKey bounds one owner's
// share (a person signing in from a few browsers stays far below it).
const (
	maxSessions       = 10000
	maxSessionsPerKey = 50
)

// errTooManySessions refuses a sign-in into a full session table.
var errTooManySessions = store.ErrTooManySessions

func newSessions(st store.Sessions, now func() time.Time, ttl time.Duration) *sessions {
	return &sessions{st: st, now: now, ttl: ttl, touchEvery: time.Minute, max: maxSessions, maxPerOwner: maxSessionsPerKey,
		touchFailed: func(context.Context, error) {}}
}

// hashSessionID is what the store keeps of a session id.
func hashSessionID(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// idleBefore is the last use before which a session has idled out at now.
func (s *sessions) idleBefore(now time.Time) time.Time {
	if s.idle <= 0 {
		return time.Time{}
	}
	return now.Add(-s.idle)
}

// live reports whether v has neither reached its absolute end nor been
// idle too long at now.
func (s *sessions) live(v session, now time.Time) bool {
	return now.Before(v.expires) && (s.idle <= 0 || now.Before(v.lastSeen.Add(s.idle)))
}

func (s *sessions) create(ctx context.Context, keyID, prefix string) (id string, expires time.Time, err error) {
	return s.open(ctx, session{keyID: keyID, prefix: prefix})
}

// open stores a new session for v's key or user and returns its id.
func (s *sessions) open(ctx context.Context, v session) (id string, expires time.Time, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", time.Time{}, err
	}
	id = base64.RawURLEncoding.EncodeToString(b[:])
	now := s.now()
	expires = now.Add(s.ttl)
	err = s.st.CreateSession(ctx, store.Session{IDHash: hashSessionID(id), UserID: v.userID, KeyID: v.keyID,
		KeyPrefix: v.prefix, Name: v.name, Epoch: v.epoch, CreatedAt: now, ExpiresAt: expires, LastSeen: now},
		store.SessionLimits{PerOwner: s.maxPerOwner, Total: s.max, IdleBefore: s.idleBefore(now)})
	if err != nil {
		return "", time.Time{}, err
	}
	return id, expires, nil
}

// peek returns a live session without counting it as use, so that a
// stream checking it does not keep it from idling out.
func (s *sessions) peek(ctx context.Context, id string) (session, bool, error) {
	st, err := s.st.SessionByHash(ctx, hashSessionID(id))
	if errors.Is(err, actor.ErrNotFound) {
		return session{}, false, nil
	}
	if err != nil {
		return session{}, false, err
	}
	v := session{hash: st.IDHash, keyID: st.KeyID, prefix: st.KeyPrefix, userID: st.UserID, name: st.Name,
		epoch: st.Epoch, expires: st.ExpiresAt, lastSeen: st.LastSeen}
	if !s.live(v, s.now()) {
		return session{}, false, nil
	}
	return v, true, nil
}

// get returns a live session and counts the request as its use.
func (s *sessions) get(ctx context.Context, id string) (session, bool, error) {
	v, ok, err := s.peek(ctx, id)
	if err != nil || !ok {
		return v, ok, err
	}
	now := s.now()
	if now.Sub(v.lastSeen) >= s.touchEvery {
		if err := s.st.TouchSession(ctx, v.hash, now); err != nil {
			s.touchFailed(ctx, err) // tried again at the next request
		} else {
			v.lastSeen = now
		}
	}
	s.sweep(ctx, now)
	return v, true, nil
}

// sweep deletes ended sessions at most once a minute per node; a failure
// is left for the next sweep (an ended session is refused anyway).
func (s *sessions) sweep(ctx context.Context, now time.Time) {
	s.mu.Lock()
	due := !now.Before(s.nextSweep)
	if due {
		s.nextSweep = now.Add(time.Minute)
	}
	s.mu.Unlock()
	if due {
		_, _ = s.st.PurgeSessions(ctx, now, s.idleBefore(now))
	}
}

// deleteOwner ends every session of a user or key, on every node.
func (s *sessions) deleteOwner(ctx context.Context, owner string) error {
	_, err := s.st.DeleteSessionsOf(ctx, owner)
	return err
}

// delete ends one session, on every node.
func (s *sessions) delete(ctx context.Context, id string) error {
	return s.st.DeleteSession(ctx, hashSessionID(id))
}
