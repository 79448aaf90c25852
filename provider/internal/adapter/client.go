package adapter

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HTTPClient returns the client an adapter makes its API calls with: a
// copy of hc, or a client with timeout when hc is nil, that never follows
// redirects, because a 307/308 would replay the POST. hc is not changed.
func HTTPClient(hc *http.Client, timeout time.Duration) *http.Client {
	c := http.Client{Timeout: timeout}
	if hc != nil {
		c = *hc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// CheckAbsoluteURL reports an error unless s is an absolute http(s) URL.
func CheckAbsoluteURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// MaxRetryAfter caps a provider-supplied wait so a silly header cannot
// park a recipient for days.
const MaxRetryAfter = 24 * time.Hour

// RetryAfter reads h's Retry-After (delay-seconds or an HTTP date) as a
// wait within [0, MaxRetryAfter]. present is false when the header is
// absent or blank; a value that is neither form is present with wait 0.
func RetryAfter(h http.Header, now time.Time) (wait time.Duration, present bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return ClampSeconds(secs), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), MaxRetryAfter), true
	}
	return 0, true
}

// ClampSeconds is a provider-supplied wait of secs seconds within
// [0, MaxRetryAfter].
func ClampSeconds(secs int64) time.Duration {
	switch {
	case secs <= 0:
		return 0
	case secs > int64(MaxRetryAfter/time.Second):
		return MaxRetryAfter
	}
	return time.Duration(secs) * time.Second
}
