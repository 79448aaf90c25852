package adapter

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Unix(1772348400, 0).UTC()
	cases := []struct {
		value   string
		present bool
		want    time.Duration
	}{
		{"", false, 0},
		{"   ", false, 0},
		{"7", true, 7 * time.Second},
		{" 7 ", true, 7 * time.Second},
		{"0", true, 0},
		{"-5", true, 0},
		// Multiplied by time.Second without a guard this wraps around to
		// a positive 709 ms.
		{"-18446744073", true, 0},
		{"86400", true, MaxRetryAfter},
		{"86401", true, MaxRetryAfter},
		{"99999999999999999", true, MaxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), true, 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), true, 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), true, MaxRetryAfter},
		{"soon", true, 0},
	}
	for _, tc := range cases {
		h := http.Header{}
		if tc.value != "" {
			h.Set("Retry-After", tc.value)
		}
		got, present := RetryAfter(h, now)
		if got != tc.want || present != tc.present {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tc.value, got, present, tc.want, tc.present)
		}
	}
}

func TestHTTPClient(t *testing.T) {
	if c := HTTPClient(nil, 3*time.Second); c.Timeout != 3*time.Second || c.CheckRedirect == nil {
		t.Errorf("default client: timeout %v, redirect policy set %v", c.Timeout, c.CheckRedirect != nil)
	}
	own := &http.Client{Timeout: time.Second}
	c := HTTPClient(own, 3*time.Second)
	if c == own || own.CheckRedirect != nil || c.Timeout != time.Second || c.CheckRedirect == nil {
		t.Error("want a copy of the caller's client with its timeout and the no-redirect policy, the original untouched")
	}
}
