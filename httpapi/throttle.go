package httpapi

import (
	"errors"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/crewcast/crewcast/apikey"
)

// codeTooManyAttempts refuses a sign-in or an API key over the throttle.
const codeTooManyAttempts = "too_many_attempts"

// throttle slows guessing without giving anyone a way to lock out someone
// else (docs/operations.md, "Sign-in and API key throttling"). It counts
// failures only, in three tables of token buckets:
//
//   - a password's failures per (account, client): one client guessing one
//     account is slowed; the account's owner, from their own client, is
//     not. There is no bucket per account alone, which would let anyone
//     lock an account by failing on it.
//   - a password's failures per client, whatever the account: one client
//     trying many accounts is slowed.
//   - bad API keys (bearer or sign-in) per client. A client that sends
//     many bad keys is answered 429 before its keys are even looked at,
//     but only that client: there is nothing global to exhaust.
//
// A password attempt holds its buckets while the hash is verified (it is
// "in flight" and counts as spent), so that a thousand concurrent guesses
// cannot all pass the check before the first failure is recorded. A
// success forgets its (account, client) failures.
//
// A client is its address (clientAddr) or, for IPv6, its /64, which one
// host can fill at will. The tables are bounded: a full table first drops
// buckets that have refilled, then any other idle one. Dropping a stranger's
// failures helps nobody much (an attacker able to fill the table has that
// many addresses anyway), while refusing new clients would lock everyone
// out.
type throttle struct {
	mu             sync.Mutex
	pairs, clients *table // passwords
	keys           *table // API keys
	links          *table // requests to /a/{token} (unsubscribe.go)
}

// ThrottleConfig sets the throttling of failed sign-ins and bad API keys.
// Zero fields take the defaults.
type ThrottleConfig struct {
	// AccountBurst failed passwords for one account from one client go
	// through at once; then one every AccountEvery. Default 5 and 1 minute.
	AccountBurst int
	AccountEvery time.Duration
	// AddrBurst failed passwords from one client, for any accounts, go
	// through at once; then one every AddrEvery. Default 20 and 10 seconds.
	AddrBurst int
	AddrEvery time.Duration
	// KeyBurst bad API keys from one client go through at once; then one
	// every KeyEvery. Default 20 and 10 seconds.
	KeyBurst int
	KeyEvery time.Duration
}

// maxThrottled bounds each table.
const maxThrottled = 10000

func newThrottle(c ThrottleConfig) *throttle {
	def := func(n *int, d *time.Duration, burst int, every time.Duration) {
		if *n <= 0 {
			*n = burst
		}
		if *d <= 0 {
			*d = every
		}
	}
	def(&c.AccountBurst, &c.AccountEvery, 5, time.Minute)
	def(&c.AddrBurst, &c.AddrEvery, 20, 10*time.Second)
	def(&c.KeyBurst, &c.KeyEvery, 20, 10*time.Second)
	return &throttle{
		pairs:   newTable(c.AccountBurst, c.AccountEvery),
		clients: newTable(c.AddrBurst, c.AddrEvery),
		keys:    newTable(c.KeyBurst, c.KeyEvery),
		links:   newTable(linkBurst, linkEvery),
	}
}

// signIn admits a password attempt at account from client, or returns a
// 429 saying when to try again. The attempt stays in flight until done
// is called with whether it failed.
func (t *throttle) signIn(now time.Time, account, client string) (done func(now time.Time, failed bool), err error) {
	c := clientKey(client)
	pair := account + "\x00" + c
	t.mu.Lock()
	defer t.mu.Unlock()
	wait := max(t.pairs.wait(now, pair), t.clients.wait(now, c))
	if wait > 0 {
		return nil, tooManyAttempts(wait)
	}
	pb, cb := t.pairs.get(now, pair), t.clients.get(now, c)
	if pb == nil || cb == nil {
		return nil, tooManyAttempts(time.Second) // every bucket is in flight
	}
	pb.inflight++
	cb.inflight++
	return func(now time.Time, failed bool) {
		t.mu.Lock()
		defer t.mu.Unlock()
		pb.inflight--
		cb.inflight--
		if failed {
			pb.lim.AllowN(now, 1)
			cb.lim.AllowN(now, 1)
		} else {
			pb.lim = t.pairs.full() // the owner is in: forget the failures
		}
	}, nil
}

// keyAllowed returns a 429 when client has sent too many bad API keys.
func (t *throttle) keyAllowed(now time.Time, client string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if wait := t.keys.wait(now, clientKey(client)); wait > 0 {
		return tooManyAttempts(wait)
	}
	return nil
}

// keyFailed records a bad API key from client.
func (t *throttle) keyFailed(now time.Time, client string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.keys.get(now, clientKey(client)); b != nil {
		b.lim.AllowN(now, 1)
	}
}

// clientKey is the throttled unit of an address: itself, or the /64 of an
// IPv6 address.
func clientKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil || !ip.Is6() {
		return addr
	}
	p, _ := ip.Prefix(64)
	return p.String()
}

// table is one set of buckets; the throttle's mutex guards it.
type table struct {
	every     time.Duration
	burst     int
	max       int
	m         map[string]*bucket
	nextSweep time.Time
}

type bucket struct {
	lim      *rate.Limiter
	inflight int // attempts admitted and not yet done
}

func newTable(burst int, every time.Duration) *table {
	return &table{every: every, burst: burst, max: maxThrottled, m: map[string]*bucket{}}
}

func (tb *table) full() *rate.Limiter { return rate.NewLimiter(rate.Every(tb.every), tb.burst) }

// wait is how long until key may try again (0: now), counting its
// attempts in flight as spent.
func (tb *table) wait(now time.Time, key string) time.Duration {
	b := tb.m[key]
	if b == nil {
		return 0
	}
	tok := b.lim.TokensAt(now) - float64(b.inflight)
	if tok >= 1 {
		return 0
	}
	return time.Duration((1 - tok) * float64(tb.every))
}

// get returns key's bucket, making room for a new one when the table is
// full (nil only when every bucket has an attempt in flight).
func (tb *table) get(now time.Time, key string) *bucket {
	if b, ok := tb.m[key]; ok {
		return b
	}
	if len(tb.m) >= tb.max && !now.Before(tb.nextSweep) {
		for k, b := range tb.m {
			if b.inflight == 0 && b.lim.TokensAt(now) >= float64(tb.burst) {
				delete(tb.m, k)
			}
		}
		tb.nextSweep = now.Add(time.Second) // a table full of live buckets is not swept on every request
	}
	if len(tb.m) >= tb.max {
		for k, b := range tb.m { // map order is random: an arbitrary idle bucket
			if b.inflight == 0 {
				delete(tb.m, k)
				break
			}
		}
	}
	if len(tb.m) >= tb.max {
		return nil
	}
	b := &bucket{lim: tb.full()}
	tb.m[key] = b
	return b
}

func tooManyAttempts(wait time.Duration) *apiError {
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	e := newError(http.StatusTooManyRequests, codeTooManyAttempts, "too many failed attempts; try again in "+strconv.Itoa(secs)+" s")
	e.Header = http.Header{"Retry-After": {strconv.Itoa(secs)}}
	return e
}

// checkKey authenticates an API key presented by r's client (a bearer
// key or a key sign-in), slowed per client: a client over its budget of
// bad keys is answered 429 without the key being looked at, and each bad
// key spends one attempt. Only bad keys count, so a client busy with a
// good key is never slowed, and no client's failures touch another's.
func (a *api) checkKey(r *http.Request, key string) (apikey.Principal, error) {
	client := a.clientAddr(r)
	if err := a.throttle.keyAllowed(a.now(), client); err != nil {
		a.metrics.AuthFailure("throttled")
		return apikey.Principal{}, err
	}
	p, touchErr, err := a.auth.Authenticate(r.Context(), key)
	a.touchFailed(r, touchErr)
	if errors.Is(err, apikey.ErrInvalidKey) {
		a.throttle.keyFailed(a.now(), client)
	}
	return p, err
}
