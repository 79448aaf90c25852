package httpapi

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// The throttle's tables are bounded, and a full table never refuses a new
// client (that would let anyone with enough addresses lock everyone out):
// it drops refilled buckets first, else an arbitrary idle one.
func TestThrottleTableIsBounded(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	th := newThrottle(ThrottleConfig{AccountBurst: 2, AccountEvery: time.Minute, AddrBurst: 1 << 20, AddrEvery: time.Millisecond})
	th.pairs.max = 10
	fail := func(account, client string) error {
		done, err := th.signIn(now, account, client)
		if err == nil {
			done(now, true)
		}
		return err
	}
	for i := range 10 {
		if err := fail("a"+strconv.Itoa(i)+"@example.com", "192.0.2.1"); err != nil {
			t.Fatalf("account %d: %v", i, err)
		}
	}
	if err := fail("new@example.com", "192.0.2.1"); err != nil {
		t.Fatalf("a new account in a full table: %v", err)
	}
	if len(th.pairs.m) != 10 {
		t.Fatalf("table grew to %d", len(th.pairs.m))
	}
	// Refilled buckets are dropped first.
	now = now.Add(2 * time.Minute)
	if err := fail("newer@example.com", "192.0.2.1"); err != nil {
		t.Fatalf("after the buckets refilled: %v", err)
	}
	if len(th.pairs.m) != 1 {
		t.Fatalf("%d buckets kept, want only the new one", len(th.pairs.m))
	}
	// Retry-After says how long until the next attempt.
	fail("newer@example.com", "192.0.2.1")
	err := fail("newer@example.com", "192.0.2.1")
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != 429 || ae.Header.Get("Retry-After") != "60" {
		t.Fatalf("throttled: %v, want 429 with Retry-After 60", err)
	}
}

// Attempts in flight count as spent: concurrent guesses cannot all pass
// the check before the first failure is recorded. A success spends
// nothing and forgets the (account, client) failures; the same account
// from another client, or another account, is not touched.
func TestThrottleCountsAttemptsInFlightAndOnlyFailures(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	th := newThrottle(ThrottleConfig{AccountBurst: 3, AccountEvery: time.Minute, AddrBurst: 100, AddrEvery: time.Second})
	var dones []func(time.Time, bool)
	for range 3 {
		done, err := th.signIn(now, "x@example.com", "192.0.2.1")
		if err != nil {
			t.Fatal(err)
		}
		dones = append(dones, done)
	}
	if _, err := th.signIn(now, "x@example.com", "192.0.2.1"); err == nil {
		t.Fatal("a 4th concurrent attempt was admitted while 3 were in flight")
	}
	if _, err := th.signIn(now, "x@example.com", "198.51.100.1"); err != nil {
		t.Fatalf("the account from another client: %v", err)
	}
	dones[1](now, true)
	dones[2](now, true)
	dones[0](now, false) // the owner got in: the two failures are forgotten
	for i := range 3 {
		done, err := th.signIn(now, "x@example.com", "192.0.2.1")
		if err != nil {
			t.Fatalf("attempt %d after a success: %v", i, err)
		}
		done(now, true)
	}
	if _, err := th.signIn(now, "x@example.com", "192.0.2.1"); err == nil {
		t.Fatal("a 4th failure went through")
	}
}

// One IPv6 host can use a whole /64: it is one client.
func TestThrottleGroupsIPv6By64(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	th := newThrottle(ThrottleConfig{KeyBurst: 3, KeyEvery: time.Minute})
	for i := range 3 {
		th.keyFailed(now, "2001:db8:1:2::"+strconv.Itoa(i+1))
	}
	if err := th.keyAllowed(now, "2001:db8:1:2:ffff::9"); err == nil {
		t.Fatal("another address of the same /64 was not throttled")
	}
	if err := th.keyAllowed(now, "2001:db8:1:3::1"); err != nil {
		t.Fatalf("another /64: %v", err)
	}
	if err := th.keyAllowed(now, "192.0.2.1"); err != nil {
		t.Fatalf("an IPv4 client: %v", err)
	}
}
