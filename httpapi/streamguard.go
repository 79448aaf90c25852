package httpapi

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/crewcast/crewcast/apikey"
)

// An open event stream keeps its access only as long as the credential
// it was opened with: a watcher checks that credential again every
// Config.StreamRecheck against the store (so a revocation on another node
// counts too) and ends the stream when the key is revoked or expired, its
// user disabled or deleted, the session signed out or expired, or the
// scopes lowered. Every stream also ends at Config.StreamMaxLifetime, with
// a retry hint; the client reconnects with Last-Event-ID, loses nothing,
// and is authenticated again.

// streamAccess is what a stream was allowed with.
type streamAccess struct {
	need   apikey.Scope
	scopes []apikey.Scope // the principal's at open
	// A bearer key (session == ""), or the board's session id.
	keyID, prefix string
	session       string
}

// accessLost ends a stream whose credential no longer allows it; status
// is 401 (credential gone) or 403 (scope lowered below the stream's).
type accessLost struct{ status int }

func (e accessLost) Error() string { return "stream access lost: " + strconv.Itoa(e.status) }

// Reasons to end a stream with a retry hint rather than an error.
var (
	errStreamLifetime = errors.New("stream lifetime reached")
	errAccessChanged  = errors.New("stream access changed")
)

// streamAccessOf reads the credential of an authorized stream request the
// way authenticate found it: a bearer key wins over the session cookie.
func streamAccessOf(r *http.Request, need apikey.Scope) streamAccess {
	p, _ := principalFrom(r.Context())
	sa := streamAccess{need: need, scopes: p.Scopes, keyID: p.KeyID, prefix: p.Prefix}
	if r.Header.Get("Authorization") == "" {
		if c, err := r.Cookie(sessionCookie); err == nil {
			sa.session = c.Value
		}
	}
	return sa
}

// recheck checks sa again: nil while it still allows the stream,
// accessLost or errAccessChanged when not, another error when the store
// cannot answer.
func (a *api) recheck(ctx context.Context, r *http.Request, sa streamAccess) error {
	var p apikey.Principal
	var touchErr, err error
	switch {
	case sa.session == "":
		p, touchErr, err = a.auth.Check(ctx, sa.prefix, sa.keyID)
	default:
		s, ok, perr := a.sessions.peek(ctx, sa.session)
		switch {
		case perr != nil:
			err = perr
		case !ok:
			return accessLost{http.StatusUnauthorized}
		case s.userID != "":
			p, _, err = a.userPrincipal(ctx, s)
		default:
			p, touchErr, err = a.auth.Check(ctx, s.prefix, s.keyID)
		}
	}
	a.touchFailed(r, touchErr)
	if errors.Is(err, apikey.ErrInvalidKey) || errors.Is(err, errSessionRevoked) {
		return accessLost{http.StatusUnauthorized}
	}
	if err != nil {
		return err
	}
	if !p.Has(sa.need) {
		return accessLost{http.StatusForbidden}
	}
	for _, s := range sa.scopes {
		if !p.Has(s) {
			return errAccessChanged // narrower, still enough: check again on reconnect
		}
	}
	return nil
}

// streamWatch is a stream's watcher: ended is closed, with reason set,
// when the stream must end.
type streamWatch struct {
	ended    chan struct{}
	reason   error
	cancel   context.CancelFunc
	finished chan struct{}
}

// watchStream starts the watcher of the stream r opened; stop it when the
// stream ends.
func (a *api) watchStream(r *http.Request, need apikey.Scope) *streamWatch {
	sa := streamAccessOf(r, need)
	ctx, cancel := context.WithCancel(r.Context())
	w := &streamWatch{ended: make(chan struct{}), cancel: cancel, finished: make(chan struct{})}
	life := a.cfg.StreamMaxLifetime
	life -= rand.N(life/10 + 1) // spread the reconnects of streams opened together
	go func() {
		defer close(w.finished)
		tick := time.NewTicker(a.cfg.StreamRecheck)
		defer tick.Stop()
		end := time.NewTimer(life)
		defer end.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-end.C:
				w.end(errStreamLifetime)
				return
			case <-tick.C:
				if err := a.recheck(ctx, r, sa); err != nil && ctx.Err() == nil {
					w.end(err)
					return
				}
			}
		}
	}()
	return w
}

func (w *streamWatch) end(reason error) {
	w.reason = reason
	close(w.ended)
}

// halted returns why the stream must end, or nil; senders call it before
// each event, so a stream that lost its access sends nothing more even
// in the middle of a long catch-up.
func (w *streamWatch) halted() error {
	select {
	case <-w.ended:
		return w.reason
	default:
		return nil
	}
}

// stop ends the watcher and waits for it.
func (w *streamWatch) stop() {
	w.cancel()
	<-w.finished
}

// endWatched tells the client why its stream ends when the watcher ended
// it, and reports whether it did: an error event when the access is lost
// (a reconnect is refused), a prompt retry hint otherwise.
func (s *sse) endWatched(err error) bool {
	var lost accessLost
	switch {
	case errors.As(err, &lost) && lost.status == http.StatusForbidden:
		_ = s.write("event: error\ndata: {\"code\":\"" + codeForbidden + "\",\"message\":\"access to this stream was lowered; it ended\"}\n\n")
	case errors.As(err, &lost):
		_ = s.write("event: error\ndata: {\"code\":\"" + codeUnauthorized + "\",\"message\":\"the key or session of this stream no longer works; sign in again\"}\n\n")
	case errors.Is(err, errStreamLifetime), errors.Is(err, errAccessChanged):
		// EventSource reconnects after the retry delay; spread them.
		_ = s.write("retry: " + strconv.Itoa(250+rand.N(1000)) + "\n: " + err.Error() + ", reconnect\n\n")
	default:
		return false
	}
	return true
}
