package httpapi

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// The throttle's tables are bounded: when one is full of buckets still
// refilling, a new account is refused (nobody's failures are forgotten);
// once buckets have refilled they are dropped to make room.
func TestThrottleTableIsBounded(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	th := newThrottle(ThrottleConfig{AccountBurst: 2, AccountEvery: time.Minute, AddrBurst: 1 << 20, AddrEvery: time.Millisecond})
	th.max = 10
	for i := range 10 {
		if err := th.allow(now, "a"+strconv.Itoa(i)+"@example.com", "192.0.2.1"); err != nil {
			t.Fatalf("account %d: %v", i, err)
		}
	}
	err := th.allow(now, "new@example.com", "192.0.2.1")
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != 429 || ae.Header.Get("Retry-After") == "" {
		t.Fatalf("a new account in a full table: %v, want 429 with Retry-After", err)
	}
	if len(th.accounts) != 10 {
		t.Fatalf("table grew to %d", len(th.accounts))
	}
	// Refilled buckets are forgotten, making room.
	now = now.Add(2 * time.Minute)
	if err := th.allow(now, "new@example.com", "192.0.2.1"); err != nil {
		t.Fatalf("after the buckets refilled: %v", err)
	}
	if len(th.accounts) != 1 {
		t.Fatalf("%d accounts kept, want only the new one", len(th.accounts))
	}
	// Retry-After says how long until the next attempt.
	th.allow(now, "new@example.com", "192.0.2.1")
	err = th.allow(now, "new@example.com", "192.0.2.1")
	if !errors.As(err, &ae) || ae.Header.Get("Retry-After") != "60" {
		t.Fatalf("throttled: %v (Retry-After %q), want 60", err, ae.Header.Get("Retry-After"))
	}
}
