package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// codeTooManyAttempts refuses a sign-in over the throttle.
const codeTooManyAttempts = "too_many_attempts"

// throttle slows repeated sign-ins (design.md §14): every attempt spends
// a token of the account's bucket (by the email tried, whether or not it
// exists, so the answer tells nothing about existence) and of the
// address's. A successful sign-in refills its account. A bucket that has
// refilled completely is forgotten, and the tables are bounded: when one
// is full of live buckets, new accounts or addresses are refused until
// some refill, rather than forgetting anyone's failures.
type throttle struct {
	accountEvery, addrEvery time.Duration
	accountBurst, addrBurst int
	max                     int

	mu       sync.Mutex
	accounts map[string]*rate.Limiter
	addrs    map[string]*rate.Limiter
}

// ThrottleConfig sets sign-in throttling. Zero fields take the defaults.
type ThrottleConfig struct {
	// AccountBurst attempts per account go through at once; then one
	// every AccountEvery. Default 5 and 1 minute.
	AccountBurst int
	AccountEvery time.Duration
	// AddrBurst attempts per client address go through at once; then one
	// every AddrEvery. Default 20 and 10 seconds.
	AddrBurst int
	AddrEvery time.Duration
}

func newThrottle(c ThrottleConfig) *throttle {
	if c.AccountBurst <= 0 {
		c.AccountBurst = 5
	}
	if c.AccountEvery <= 0 {
		c.AccountEvery = time.Minute
	}
	if c.AddrBurst <= 0 {
		c.AddrBurst = 20
	}
	if c.AddrEvery <= 0 {
		c.AddrEvery = 10 * time.Second
	}
	return &throttle{accountEvery: c.AccountEvery, addrEvery: c.AddrEvery, accountBurst: c.AccountBurst,
		addrBurst: c.AddrBurst, max: 10000, accounts: map[string]*rate.Limiter{}, addrs: map[string]*rate.Limiter{}}
}

// allow spends one attempt of account (skipped when "") and of addr, or
// returns a 429 saying when to try again.
func (t *throttle) allow(now time.Time, account, addr string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lims []*rate.Limiter
	for _, b := range []struct {
		m     map[string]*rate.Limiter
		key   string
		every time.Duration
		burst int
	}{{t.addrs, addr, t.addrEvery, t.addrBurst}, {t.accounts, account, t.accountEvery, t.accountBurst}} {
		if b.key == "" {
			continue
		}
		lim := t.bucket(b.m, b.key, b.every, b.burst, now)
		if lim == nil {
			return tooManyAttempts(b.every)
		}
		if tok := lim.TokensAt(now); tok < 1 {
			return tooManyAttempts(time.Duration((1 - tok) * float64(b.every)))
		}
		lims = append(lims, lim)
	}
	for _, lim := range lims {
		lim.AllowN(now, 1)
	}
	return nil
}

// bucket returns key's limiter, making one when there is room (nil when
// the table is full of live buckets).
func (t *throttle) bucket(m map[string]*rate.Limiter, key string, every time.Duration, burst int, now time.Time) *rate.Limiter {
	if lim, ok := m[key]; ok {
		return lim
	}
	if len(m) >= t.max {
		for k, lim := range m {
			if lim.TokensAt(now) >= float64(burst) {
				delete(m, k)
			}
		}
		if len(m) >= t.max {
			return nil
		}
	}
	lim := rate.NewLimiter(rate.Every(every), burst)
	m[key] = lim
	return lim
}

// succeeded forgets an account's failures after a successful sign-in.
func (t *throttle) succeeded(account string) {
	t.mu.Lock()
	delete(t.accounts, account)
	t.mu.Unlock()
}

func tooManyAttempts(wait time.Duration) *apiError {
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	e := newError(http.StatusTooManyRequests, codeTooManyAttempts, "too many sign-in attempts; try again in "+strconv.Itoa(secs)+" s")
	e.Header = http.Header{"Retry-After": {strconv.Itoa(secs)}}
	return e
}
