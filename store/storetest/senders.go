package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

func sender(number, provider, pool string) store.Sender {
	return store.Sender{Number: number, Provider: provider, Pool: pool, MPS: 1,
		Registration: store.Registration{Kind: store.Registration10DLC, CampaignID: "C" + number[len(number)-2:],
			Status: store.RegistrationApproved}}
}

// testSenders: sender rows round-trip (a fractional mps included), list by
// pool then number, refuse a taken number, update and delete.
func testSenders(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	a := sender("+15550100002", store.ProviderTelnyx, "dispatch")
	a.MPS = 0.25
	b := sender("+15550100001", store.ProviderTwilio, "dispatch")
	c := sender("+15550100003", store.ProviderTwilio, "")
	c.Registration = store.Registration{Kind: store.RegistrationNone, Status: store.RegistrationUnknown}
	for _, x := range []store.Sender{a, b, c} {
		if err := s.CreateSender(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateSender(ctx, a); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("create taken number: %v, want ErrConflict", err)
	}
	got, err := s.GetSender(ctx, a.Number)
	a.CreatedAt, a.UpdatedAt = t0, t0
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("get = %+v, %v\nwant %+v", got, err, a)
	}
	list, err := s.ListSenders(ctx)
	if err != nil || len(list) != 3 || list[0].Number != c.Number || list[1].Number != b.Number || list[2].Number != a.Number {
		t.Fatalf("list = %+v, %v (want by pool, then number)", list, err)
	}
	clock.Advance(time.Minute)
	a.Pool, a.Provider, a.Registration.Status, a.UpdatedAt = "night", store.ProviderTwilio, store.RegistrationPending, time.Time{}
	if err := s.UpdateSender(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetSender(ctx, a.Number)
	a.UpdatedAt = t0.Add(time.Minute)
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("after update = %+v, %v\nwant %+v", got, err, a)
	}
	if err := s.UpdateSender(ctx, sender("+15550109999", store.ProviderTelnyx, "")); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("update unknown: %v, want ErrNotFound", err)
	}
	if err := s.DeleteSender(ctx, a.Number); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSender(ctx, a.Number); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("get deleted: %v, want ErrNotFound", err)
	}
	if err := s.DeleteSender(ctx, a.Number); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("delete twice: %v, want ErrNotFound", err)
	}
}

// testSendersAuditWithChange: every sender write commits with its audit
// entry or not at all; a write that fails on its own leaves none.
func testSendersAuditWithChange(t *testing.T, o Options) {
	r := newAuditRecorder(t, o)
	s := r.s
	ctx := context.Background()
	a := sender("+15550100001", store.ProviderTelnyx, "dispatch")
	r.refused("CreateSender", s.CreateSender(ctx, a, r.bad()))
	if _, err := s.GetSender(ctx, a.Number); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("sender after a refused create: %v", err)
	}
	if err := s.CreateSender(ctx, a, r.ok("sender.created", a.Number)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSender(ctx, a, store.AuditEntry{At: t0, Actor: r.who, Action: "sender.created", Target: a.Number}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("create taken: %v", err)
	}
	changed := a
	changed.Pool = "night"
	r.refused("UpdateSender", s.UpdateSender(ctx, changed, r.bad()))
	if got, _ := s.GetSender(ctx, a.Number); got.Pool != "dispatch" {
		t.Fatalf("pool after a refused update = %q", got.Pool)
	}
	if err := s.UpdateSender(ctx, changed, r.ok("sender.updated", a.Number)); err != nil {
		t.Fatal(err)
	}
	r.refused("DeleteSender", s.DeleteSender(ctx, a.Number, r.bad()))
	if _, err := s.GetSender(ctx, a.Number); err != nil {
		t.Fatalf("sender after a refused delete: %v", err)
	}
	if err := s.DeleteSender(ctx, a.Number, r.ok("sender.deleted", a.Number)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSender(ctx, a.Number, store.AuditEntry{At: t0, Actor: r.who, Action: "sender.deleted", Target: a.Number}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	r.check()
}

// testSentSince: the sends of the last hour are counted by the from number
// of their group: a claim at the bound counts, one just before it and an
// unclaimed recipient do not, an unconfirmed claim does, and a number
// with none is absent.
func testSentSince(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	since := t0.Add(-time.Hour)
	claimedAt := map[string]time.Time{
		"+15550300001": t0.Add(-30 * time.Minute), "+15550300002": since, "+15550300003": since.Add(-time.Nanosecond),
		"+15550300004": {}, "+15550300005": t0,
	}
	for i, from := range []string{"+15550100001", "+15550100001", "+15550100002", "+15550100003"} {
		id := fmt.Sprintf("g-sent-%d", i)
		g := &store.GroupRow{ID: id, Status: crewcast.GroupSending, From: from, Mode: crewcast.ModeIndividual,
			CreatedAt: t0, UpdatedAt: t0, Counts: map[string]int{}, Seq: 1}
		var ds []store.DeliveryRow
		for number, at := range claimedAt {
			d := store.DeliveryRow{GroupID: id, Number: number, Status: crewcast.StatusSent, ClaimedAt: at, SentAt: at, UpdatedAt: t0}
			switch {
			case at.IsZero():
				d.Status = crewcast.StatusPending
			case number == "+15550300005":
				d.Status, d.SentAt = crewcast.StatusUnconfirmed, time.Time{}
			}
			if i == 3 && !at.IsZero() && !at.Before(since) {
				d.ClaimedAt, d.SentAt = since.Add(-time.Minute), since.Add(-time.Minute) // every send of this group is older
			}
			ds = append(ds, d)
		}
		commitOK(t, s, actor.Unit{Key: id, Events: events("c", 1), Effects: []any{store.Effects{Group: g, Deliveries: ds}}})
	}
	got, err := s.SentSince(ctx, since)
	want := map[string]int{"+15550100001": 6, "+15550100002": 3}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("SentSince = %v, %v; want %v", got, err, want)
	}
	if got, err := s.SentSince(ctx, t0.Add(time.Second)); err != nil || len(got) != 0 {
		t.Fatalf("SentSince(after every claim) = %v, %v; want none", got, err)
	}
}
