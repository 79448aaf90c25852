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

// GroupSnapshot's row agrees with its deliveries while commits land: each
// commit marks one more recipient delivered and counts it in the row, and
// every snapshot read meanwhile must count in the row exactly the
// deliveries it returns. Two separate reads (the row, then the deliveries)
// paired a row with the deliveries of a later commit: the group view said
// "awaiting" with every recipient final (a chaos T5 failure).
func testGroupSnapshot(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	if _, _, err := s.GroupSnapshot(ctx, "none"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("GroupSnapshot(missing) = %v", err)
	}
	const n = 150
	row := func(done int) *store.GroupRow {
		st := crewcast.GroupSending
		if done == n {
			st = crewcast.GroupComplete
		}
		return &store.GroupRow{ID: "g-snap", Status: st, From: "+15550100000", Mode: crewcast.ModeIndividual,
			CreatedAt: t0, UpdatedAt: t0, Counts: map[string]int{"pending": n - done, "delivered": done}, Seq: uint64(done + 1)}
	}
	number := func(i int) string { return fmt.Sprintf("+1555030%04d", i) }
	var ds []store.DeliveryRow
	for i := range n {
		ds = append(ds, store.DeliveryRow{GroupID: "g-snap", Number: number(i), Status: crewcast.StatusPending, UpdatedAt: t0})
	}
	commitOK(t, s, actor.Unit{Key: "g-snap", Events: events("c", 1), Effects: []any{store.Effects{Group: row(0), Deliveries: ds}}})
	done := make(chan error, 1)
	go func() {
		for i := range n {
			d := store.DeliveryRow{GroupID: "g-snap", Number: number(i), Status: crewcast.StatusDelivered, UpdatedAt: t0.Add(time.Duration(i+1) * time.Second)}
			u := actor.Unit{Key: "g-snap", ExpectSeq: uint64(i + 1), Events: events("d", 1),
				Effects: []any{store.Effects{Group: row(i + 1), Deliveries: []store.DeliveryRow{d}}}}
			res, err := s.Commit(ctx, []actor.Unit{u})
			if err == nil {
				err = res[0]
			}
			if err != nil {
				done <- fmt.Errorf("commit %d: %w", i, err)
				return
			}
		}
		done <- nil
	}()
	reads, writing := 0, true
	for writing || reads == 0 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			writing = false
		default:
		}
		g, rows, err := s.GroupSnapshot(ctx, "g-snap")
		if err != nil {
			t.Fatal(err)
		}
		reads++
		delivered := 0
		for _, d := range rows {
			if d.Status == crewcast.StatusDelivered {
				delivered++
			}
		}
		if len(rows) != n || g.Counts["delivered"] != delivered || g.Seq != uint64(delivered+1) {
			t.Fatalf("read %d: the row counts %d delivered at seq %d; its %d deliveries have %d", reads, g.Counts["delivered"], g.Seq, len(rows), delivered)
		}
	}
	g, rows, err := s.GroupSnapshot(ctx, "g-snap")
	if err != nil || g.Status != crewcast.GroupComplete || len(rows) != n || rows[0].Number != number(0) || rows[n-1].Number != number(n-1) {
		t.Fatalf("final snapshot: %s, %d rows, %v", g.Status, len(rows), err)
	}
	t.Logf("%d snapshots while %d commits landed", reads, n)
}

func testGroups(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	if _, err := s.GetGroup(ctx, "none"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("GetGroup(missing) = %v", err)
	}
	var want []store.GroupRow // newest first
	for i := range 7 {
		g := store.GroupRow{
			ID: fmt.Sprintf("g-%d", i), Status: crewcast.GroupSending, From: "+15550100000", Mode: crewcast.ModeIndividual,
			Text: fmt.Sprintf("text %d", i), CreatedAt: t0.Add(time.Duration(i/2) * time.Minute), // pairs share a time
			UpdatedAt: t0.Add(time.Hour), Counts: map[string]int{"pending": i}, Seq: 1,
		}
		if i%3 == 0 {
			g.Status, g.PauseReason, g.Mode = crewcast.GroupPaused, "sender rejected", crewcast.ModeGroupMMS
			g.Answers = `{"responses":[{"key":"1","label":"Coming"}]}`
		}
		commitOK(t, s, actor.Unit{Key: g.ID, Events: events("c", 1), Effects: []any{store.Effects{Group: &g}}})
		want = append([]store.GroupRow{g}, want...)
	}
	// Ties on CreatedAt are broken by id, descending, which the reversed
	// insertion order already is.
	got, err := s.GetGroup(ctx, "g-3")
	if err != nil || !reflect.DeepEqual(got, want[indexOfGroup(want, "g-3")]) {
		t.Fatalf("GetGroup = %+v, %v", got, err)
	}
	all := allPages(t, 5, func(cursor string) ([]store.GroupRow, string, error) {
		return s.ListGroups(ctx, store.GroupQuery{Cursor: cursor, Limit: 3})
	})
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("ListGroups pages:\n got %v\nwant %v", groupIDs(all), groupIDs(want))
	}
	paused, next, err := s.ListGroups(ctx, store.GroupQuery{Status: crewcast.GroupPaused})
	if err != nil || next != "" || !reflect.DeepEqual(groupIDs(paused), []string{"g-6", "g-3", "g-0"}) {
		t.Fatalf("paused groups = %v, %q, %v", groupIDs(paused), next, err)
	}
	// An upsert replaces the row.
	up := want[0]
	up.Status, up.Counts, up.Seq = crewcast.GroupComplete, map[string]int{"delivered": 2, "replied": 1}, 2
	commitOK(t, s, actor.Unit{Key: up.ID, ExpectSeq: 1, Events: events("d", 1), Effects: []any{store.Effects{Group: &up}}})
	if got, err := s.GetGroup(ctx, up.ID); err != nil || !reflect.DeepEqual(got, up) {
		t.Fatalf("upserted group = %+v, %v", got, err)
	}
}

// allPages reads a list from the first page to the last, following each
// page's cursor. It fails the test on an error, or when a page numbered
// above maxPage (counting from 0) still returns a cursor.
func allPages[T any](t *testing.T, maxPage int, list func(cursor string) ([]T, string, error)) []T {
	t.Helper()
	var all []T
	cursor := ""
	for page := 0; ; page++ {
		rows, next, err := list(cursor)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rows...)
		if next == "" {
			return all
		}
		if page > maxPage {
			t.Fatal("pagination does not end")
		}
		cursor = next
	}
}

func indexOfGroup(rows []store.GroupRow, id string) int {
	for i, g := range rows {
		if g.ID == id {
			return i
		}
	}
	return -1
}

func groupIDs(rows []store.GroupRow) []string {
	var out []string
	for _, g := range rows {
		out = append(out, g.ID)
	}
	return out
}

func fullDelivery(groupID, number string, i int) store.DeliveryRow {
	return store.DeliveryRow{
		GroupID: groupID, Number: number, Name: "Name " + number, Status: crewcast.StatusDelivered, Attempts: 1 + i%2,
		ProviderMessageID: "pm-" + number, ErrorCode: "", ErrorClass: crewcast.ClassNone,
		ClaimedAt: t0.Add(time.Second), SentAt: t0.Add(2 * time.Second), DeliveredAt: t0.Add(5 * time.Second),
		FailedAt: time.Time{}, RepliedAt: t0.Add(time.Minute), Ack: crewcast.AckYes, LastReply: "yes " + number, Response: "1",
		Code: string(rune('A' + i%3)), UpdatedAt: t0.Add(time.Duration(i) * time.Second),
	}
}

func testDeliveries(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	var rows []store.DeliveryRow
	for i := range 10 {
		gid := "d-a"
		if i%2 == 1 {
			gid = "d-b"
		}
		d := fullDelivery(gid, fmt.Sprintf("+1555010%04d", i), i/3) // UpdatedAt ties across groups
		if i%4 == 0 {
			d.Status, d.ErrorCode, d.ErrorClass, d.FailedAt, d.DeliveredAt = crewcast.StatusFailed, "30008", crewcast.ClassCarrier, t0.Add(9*time.Second), time.Time{}
		}
		rows = append(rows, d)
	}
	var ga, gb []store.DeliveryRow
	for _, d := range rows {
		if d.GroupID == "d-a" {
			ga = append(ga, d)
		} else {
			gb = append(gb, d)
		}
	}
	commitOK(t, s,
		actor.Unit{Key: "d-a", Events: events("a", 1), Effects: []any{store.Effects{Deliveries: ga}}},
		actor.Unit{Key: "d-b", Events: events("b", 1), Effects: []any{store.Effects{Deliveries: gb}}})

	list := func(q store.DeliveryQuery) []store.DeliveryRow {
		t.Helper()
		return allPages(t, 20, func(cursor string) ([]store.DeliveryRow, string, error) {
			q.Cursor = cursor
			page, next, err := s.ListDeliveries(ctx, q)
			if q.Limit > 0 && len(page) > q.Limit {
				t.Fatalf("page of %d, limit %d", len(page), q.Limit)
			}
			return page, next, err
		})
	}
	// Expected order: (UpdatedAt, GroupID, Number).
	want := []store.DeliveryRow{rows[0], rows[2], rows[1], rows[4], rows[3], rows[5], rows[6], rows[8], rows[7], rows[9]}
	if got := list(store.DeliveryQuery{Limit: 3}); !reflect.DeepEqual(got, want) {
		t.Fatalf("ListDeliveries order:\n got %v\nwant %v", numbers(got), numbers(want))
	}
	if got := list(store.DeliveryQuery{GroupID: "d-b", Limit: 2}); !reflect.DeepEqual(numbers(got), numbers(gb)) {
		t.Fatalf("group filter = %v", numbers(got))
	}
	if got := list(store.DeliveryQuery{Number: rows[7].Number}); !reflect.DeepEqual(got, []store.DeliveryRow{rows[7]}) {
		t.Fatalf("number filter = %v", numbers(got))
	}
	if got := list(store.DeliveryQuery{Status: crewcast.StatusFailed}); !reflect.DeepEqual(numbers(got), numbers([]store.DeliveryRow{rows[0], rows[4], rows[8]})) {
		t.Fatalf("status filter = %v", numbers(got))
	}
	if got := list(store.DeliveryQuery{ErrorClass: crewcast.ClassCarrier, GroupID: "d-a"}); len(got) != 3 {
		t.Fatalf("error class filter = %v", numbers(got))
	}
	// Since inclusive, Until exclusive: UpdatedAt in [t0+1s, t0+3s) = rows 3..8.
	got := list(store.DeliveryQuery{Since: t0.Add(time.Second), Until: t0.Add(3 * time.Second), Limit: 4})
	if !reflect.DeepEqual(numbers(got), numbers(want[3:9])) {
		t.Fatalf("time window = %v, want %v", numbers(got), numbers(want[3:9]))
	}
	// Upsert by (GroupID, Number).
	up := rows[1]
	up.Status, up.Attempts, up.UpdatedAt = crewcast.StatusUnconfirmed, 3, t0.Add(time.Hour)
	commitOK(t, s, actor.Unit{Key: "d-b", ExpectSeq: 1, Events: events("c", 1), Effects: []any{store.Effects{Deliveries: []store.DeliveryRow{up}}}})
	if got := list(store.DeliveryQuery{Number: up.Number}); !reflect.DeepEqual(got, []store.DeliveryRow{up}) {
		t.Fatalf("upserted delivery = %+v", got)
	}
	if got := list(store.DeliveryQuery{}); len(got) != 10 {
		t.Fatalf("%d deliveries after upsert, want 10", len(got))
	}
}

// testDeliveriesMany: one unit that writes thousands of delivery rows
// (a large group's creation, then its cancellation) stores every row and
// every field exactly, whatever way the engine splits them into
// statements (sqlite: bulk statements, then smaller ones for the rest),
// and a second such unit upserts them all.
func testDeliveriesMany(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	const n = 2345
	rows := make([]store.DeliveryRow, n)
	for i := range rows {
		rows[i] = fullDelivery("d-many", fmt.Sprintf("+1555%07d", i), i)
		rows[i].Name = fmt.Sprintf("Zoë \"%d\" O'Brien", i)
		if i < 1500 || i >= 1700 && i%50 != 0 {
			// A new recipient's row: only group, number, name, status and
			// update time set (engines may write these more cheaply).
			rows[i] = store.DeliveryRow{GroupID: "d-many", Number: rows[i].Number, Name: rows[i].Name,
				Status: crewcast.StatusPending, UpdatedAt: rows[i].UpdatedAt}
		}
	}
	commitOK(t, s, actor.Unit{Key: "d-many", Events: events("a", 1), Effects: []any{store.Effects{Deliveries: rows}}})
	list := func() []store.DeliveryRow {
		t.Helper()
		return allPages(t, 1000, func(cursor string) ([]store.DeliveryRow, string, error) {
			return s.ListDeliveries(ctx, store.DeliveryQuery{GroupID: "d-many", Limit: 1000, Cursor: cursor})
		})
	}
	if got := list(); !reflect.DeepEqual(got, rows) {
		t.Fatalf("%d deliveries read back, want %d equal to those written", len(got), len(rows))
	}
	for i := range rows {
		rows[i].Status, rows[i].Attempts, rows[i].UpdatedAt = crewcast.StatusCanceled, 7, t0.Add(time.Hour+time.Duration(i))
	}
	commitOK(t, s, actor.Unit{Key: "d-many", ExpectSeq: 1, Events: events("b", 1), Effects: []any{store.Effects{Deliveries: rows}}})
	if got := list(); !reflect.DeepEqual(got, rows) {
		t.Fatalf("%d deliveries after the upsert, want %d equal to those written", len(got), len(rows))
	}
	// A row written twice in one unit: the later one wins, lean or not.
	twice := make([]store.DeliveryRow, 0, 1002)
	twice = append(twice, fullDelivery("d-many", rows[1].Number, 1))
	for i := range 1000 {
		twice = append(twice, store.DeliveryRow{GroupID: "d-many", Number: rows[i].Number, Name: "again",
			Status: crewcast.StatusScheduled, UpdatedAt: t0.Add(2 * time.Hour)})
	}
	last := fullDelivery("d-many", rows[0].Number, 0)
	last.UpdatedAt = t0.Add(3 * time.Hour)
	twice = append(twice, last)
	commitOK(t, s, actor.Unit{Key: "d-many", ExpectSeq: 2, Events: events("c", 1), Effects: []any{store.Effects{Deliveries: twice}}})
	got := map[string]store.DeliveryRow{}
	for _, d := range list() {
		got[d.Number] = d
	}
	if !reflect.DeepEqual(got[rows[0].Number], last) || !reflect.DeepEqual(got[rows[1].Number], twice[2]) || len(got) != n {
		t.Fatalf("rows written twice in a unit: %+v / %+v (%d rows)", got[rows[0].Number], got[rows[1].Number], len(got))
	}
}

func numbers(rows []store.DeliveryRow) []string {
	var out []string
	for _, d := range rows {
		out = append(out, d.GroupID+"/"+d.Number)
	}
	return out
}

func testReplies(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	var want []store.Reply // newest first
	for i := range 6 {
		r := store.Reply{Provider: "telnyx", EventID: fmt.Sprintf("in-%d", i), GroupID: "r-g", Number: fmt.Sprintf("+1555010000%d", i%3),
			To: "+15550100000", Text: fmt.Sprintf("reply %d", i), ReceivedAt: t0.Add(time.Duration(i/2) * time.Second)}
		if i == 1 {
			r.Media = []string{"https://example.com/a.jpg", "https://example.com/b.jpg"}
		}
		if i >= 4 {
			r.GroupID = "" // matched no group
		}
		r.PossibleOptOut = i%2 == 0 // kept as the tracker classified it
		r.Ambiguous = i == 5        // a bare answer to several open groups (design §15)
		want = append([]store.Reply{r}, want...)
		commitOK(t, s, actor.Unit{Key: fmt.Sprintf("r-unit-%d", i), Effects: []any{store.Effects{Replies: []store.Reply{r}}}})
	}
	// A duplicate (Provider, EventID, Number) is ignored.
	dup := want[0]
	dup.Text = "changed"
	commitOK(t, s, actor.Unit{Key: "r-dup", Effects: []any{store.Effects{Replies: []store.Reply{dup}}}})
	// ReceivedAt defaults to the store clock.
	clock.Advance(time.Hour)
	late := store.Reply{Provider: "twilio", EventID: "SM1", Number: "+15550100009", To: "+15550100000", Text: "late"}
	commitOK(t, s, actor.Unit{Key: "r-late", Effects: []any{store.Effects{Replies: []store.Reply{late}}}})
	late.ReceivedAt = clock.Now()
	want = append([]store.Reply{late}, want...)

	list := func(q store.ReplyQuery) []store.Reply {
		t.Helper()
		return allPages(t, 20, func(cursor string) ([]store.Reply, string, error) {
			q.Cursor = cursor
			return s.ListReplies(ctx, q)
		})
	}
	if got := list(store.ReplyQuery{Limit: 2}); !reflect.DeepEqual(got, want) {
		t.Fatalf("ListReplies:\n got %+v\nwant %+v", got, want)
	}
	if got := list(store.ReplyQuery{GroupID: "r-g", Limit: 3}); !reflect.DeepEqual(got, want[3:]) {
		t.Fatalf("group filter:\n got %+v\nwant %+v", got, want[3:])
	}
	if got := list(store.ReplyQuery{Unmatched: true}); !reflect.DeepEqual(got, want[:3]) {
		t.Fatalf("unmatched:\n got %+v\nwant %+v", got, want[:3])
	}
	if got := list(store.ReplyQuery{Ambiguous: true}); len(got) != 1 || got[0].EventID != "in-5" || !got[0].Ambiguous {
		t.Fatalf("ambiguous filter = %+v", got)
	}
	if got := list(store.ReplyQuery{Number: "+15550100001", Limit: 1}); len(got) != 2 || got[0].EventID != "in-4" || got[1].EventID != "in-1" {
		t.Fatalf("number filter = %+v", got)
	}
}

func testSummarize(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	mk := func(n int, status crewcast.Status, sentToDelivered time.Duration, code string, class crewcast.ErrorClass, replied bool, ack crewcast.Ack) store.DeliveryRow {
		d := store.DeliveryRow{GroupID: "s-g", Number: fmt.Sprintf("+1555020%04d", n), Status: status, Attempts: 1,
			ErrorCode: code, ErrorClass: class, Ack: ack, UpdatedAt: t0.Add(time.Duration(n) * time.Second)}
		if status == crewcast.StatusDelivered {
			d.SentAt = t0
			d.DeliveredAt = t0.Add(sentToDelivered)
		}
		if replied {
			d.RepliedAt = t0.Add(time.Hour)
		}
		return d
	}
	var rows []store.DeliveryRow
	// 10 delivered, taking 1s..10s.
	for i := range 10 {
		rows = append(rows, mk(len(rows), crewcast.StatusDelivered, time.Duration(i+1)*time.Second, "", "", i < 3, map[bool]crewcast.Ack{true: crewcast.AckYes}[i < 2]))
	}
	// A delivered row without SentAt is counted but has no duration.
	noSent := mk(len(rows), crewcast.StatusDelivered, 0, "", "", false, "")
	noSent.SentAt = time.Time{}
	rows = append(rows, noSent)
	for range 3 {
		rows = append(rows, mk(len(rows), crewcast.StatusFailed, 0, "30008", crewcast.ClassCarrier, false, ""))
	}
	rows = append(rows, mk(len(rows), crewcast.StatusFailed, 0, "30003", crewcast.ClassRecipient, true, crewcast.AckNo))
	for i := range 12 { // 12 distinct codes seen once each; only 10 codes are reported in all
		rows = append(rows, mk(len(rows), crewcast.StatusUnknown, 0, fmt.Sprintf("9%02d", i), crewcast.ClassUncertain, false, ""))
	}
	rows = append(rows, mk(len(rows), crewcast.StatusOptedOut, 0, "", "", false, ""))
	rows = append(rows, mk(len(rows), crewcast.StatusCanceled, 0, "", "", false, ""))
	rows = append(rows, mk(len(rows), crewcast.StatusPending, 0, "", "", false, ""))
	// Another group that a group filter must exclude.
	other := mk(0, crewcast.StatusFailed, 0, "30008", crewcast.ClassCarrier, false, "")
	other.GroupID = "s-other"
	commitOK(t, s,
		actor.Unit{Key: "s-g", Effects: []any{store.Effects{Deliveries: rows}}},
		actor.Unit{Key: "s-other", Effects: []any{store.Effects{Deliveries: []store.DeliveryRow{other}}}})

	sum, err := s.Summarize(ctx, store.DeliveryQuery{GroupID: "s-g", Limit: 1, Cursor: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	total := len(rows) // 30
	want := store.Summary{
		Total: total,
		ByStatus: map[crewcast.Status]int{crewcast.StatusDelivered: 11, crewcast.StatusFailed: 4, crewcast.StatusUnknown: 12,
			crewcast.StatusOptedOut: 1, crewcast.StatusCanceled: 1, crewcast.StatusPending: 1},
		Replied: 4, Acknowledged: 3,
		DeliveryRate:      11.0 / float64(total-2),
		MedianToDelivered: 5 * time.Second, // nearest rank of 1..10 s
		P95ToDelivered:    10 * time.Second,
	}
	want.TopErrorCodes = []store.CodeCount{{Code: "30008", Class: crewcast.ClassCarrier, Count: 3}, {Code: "30003", Class: crewcast.ClassRecipient, Count: 1}}
	for i := range 8 {
		want.TopErrorCodes = append(want.TopErrorCodes, store.CodeCount{Code: fmt.Sprintf("9%02d", i), Class: crewcast.ClassUncertain, Count: 1})
	}
	want.ErrorCodes = []store.CodeCount{{Code: "30003", Class: crewcast.ClassRecipient, Count: 1}, {Code: "30008", Class: crewcast.ClassCarrier, Count: 3}}
	for i := range 12 {
		want.ErrorCodes = append(want.ErrorCodes, store.CodeCount{Code: fmt.Sprintf("9%02d", i), Class: crewcast.ClassUncertain, Count: 1})
	}
	if !reflect.DeepEqual(sum, want) {
		t.Fatalf("Summarize:\n got %+v\nwant %+v", sum, want)
	}
	// Filters by error code (the carrier-truth classes of the reports).
	byCode, err := s.Summarize(ctx, store.DeliveryQuery{GroupID: "s-g", ErrorCodes: []string{"30003", "30008"}})
	if err != nil || byCode.Total != 4 || byCode.ByStatus[crewcast.StatusFailed] != 4 {
		t.Fatalf("summary of codes 30003, 30008 = %+v, %v; want the 4 failed rows", byCode, err)
	}
	notCode, err := s.Summarize(ctx, store.DeliveryQuery{GroupID: "s-g", Status: crewcast.StatusFailed, NotErrorCodes: []string{"30008", "901"}})
	if err != nil || notCode.Total != 1 || len(notCode.ErrorCodes) != 1 || notCode.ErrorCodes[0].Code != "30003" {
		t.Fatalf("summary of failed rows but code 30008 = %+v, %v; want the one 30003 row", notCode, err)
	}
	listed, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{GroupID: "s-g", ErrorCodes: []string{"905"}})
	if err != nil || len(listed) != 1 || listed[0].ErrorCode != "905" {
		t.Fatalf("ListDeliveries of code 905 = %+v, %v", listed, err)
	}
	all, err := s.Summarize(ctx, store.DeliveryQuery{})
	if err != nil || all.Total != total+1 || all.TopErrorCodes[0].Count != 4 {
		t.Fatalf("unfiltered summary = %+v, %v", all, err)
	}
	none, err := s.Summarize(ctx, store.DeliveryQuery{GroupID: "nothing"})
	if err != nil || none.Total != 0 || none.DeliveryRate != 0 || none.MedianToDelivered != 0 || len(none.TopErrorCodes) != 0 {
		t.Fatalf("empty summary = %+v, %v", none, err)
	}
	window, err := s.Summarize(ctx, store.DeliveryQuery{GroupID: "s-g", Since: t0.Add(10 * time.Second), Until: t0.Add(14 * time.Second), Status: crewcast.StatusFailed})
	if err != nil || window.Total != 3 || window.ByStatus[crewcast.StatusFailed] != 3 {
		t.Fatalf("filtered summary = %+v, %v", window, err)
	}
	// CountByStatus is the cheap part of the unfiltered summary (the
	// /metrics recipients gauge reads it).
	counts, err := s.CountByStatus(ctx)
	if err != nil || !reflect.DeepEqual(counts, all.ByStatus) {
		t.Fatalf("CountByStatus = %v, %v; want %v", counts, err, all.ByStatus)
	}
}

func testSuppressions(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	for i := range 5 {
		sp := store.Suppression{Number: fmt.Sprintf("+1555030000%d", i), Reason: "manual", CreatedAt: t0}
		if err := s.AddSuppression(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Suppressed(ctx, []string{"+15550300001", "+15550300003", "+15550399999"})
	want := map[string]store.Suppression{
		"+15550300001": {Number: "+15550300001", Reason: "manual", CreatedAt: t0},
		"+15550300003": {Number: "+15550300003", Reason: "manual", CreatedAt: t0},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Suppressed = %+v, %v", got, err)
	}
	if got, err := s.Suppressed(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("Suppressed(nil) = %v, %v", got, err)
	}
	// Many numbers at once (engines chunk large IN lists).
	many := make([]string, 1500)
	for i := range many {
		many[i] = fmt.Sprintf("+1555040%04d", i)
	}
	many[1499] = "+15550300004"
	if got, err := s.Suppressed(ctx, many); err != nil || !reflect.DeepEqual(got, map[string]store.Suppression{
		"+15550300004": {Number: "+15550300004", Reason: "manual", CreatedAt: t0}}) {
		t.Fatalf("Suppressed(1500 numbers) = %v, %v", got, err)
	}
	// Many numbers against a longer list (engines may read a shorter list
	// whole instead of looking each number up: both ways are held here).
	var long []store.Suppression
	for i := range 700 {
		long = append(long, store.Suppression{Number: fmt.Sprintf("+1555050%04d", i), Reason: "stop", CreatedAt: t0.Add(time.Duration(i))})
	}
	commitOK(t, s, actor.Unit{Key: "g-long", Effects: []any{store.Effects{Suppress: long}}})
	asked := make([]string, 600)
	wantLong := map[string]store.Suppression{}
	for i := range asked {
		asked[i] = fmt.Sprintf("+1555050%04d", 2*i) // every other one is on the list, up to 1398
		if 2*i < len(long) {
			wantLong[asked[i]] = long[2*i]
		}
	}
	if got, err := s.Suppressed(ctx, asked); err != nil || !reflect.DeepEqual(got, wantLong) {
		t.Fatalf("Suppressed(600 numbers, 705 listed) = %d found, %v; want %d", len(got), err, len(wantLong))
	}
	if got, err := s.Suppressed(ctx, append(asked, many...)); err != nil || len(got) != len(wantLong)+1 {
		t.Fatalf("Suppressed(2100 numbers, 705 listed) = %d found, %v; want %d", len(got), err, len(wantLong)+1)
	}
	for _, sp := range long {
		if err := s.RemoveSuppression(ctx, sp.Number); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RemoveSuppression(ctx, "+15550300001"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveSuppression(ctx, "+15550300001"); err != nil {
		t.Fatalf("removing a missing suppression: %v", err)
	}
	// Through a unit: suppress (CreatedAt defaults to now) and unsuppress
	// (a START: it does not lift the manual suppression of ...02).
	commitOK(t, s, actor.Unit{Key: "g", Effects: []any{store.Effects{
		Suppress:   []store.Suppression{{Number: "+15550300009", Reason: "stop"}},
		Unsuppress: []string{"+15550300002"},
	}}})
	all := allPages(t, 10, func(cursor string) ([]store.Suppression, string, error) {
		return s.ListSuppressions(ctx, cursor, 2)
	})
	wantAll := []store.Suppression{
		{Number: "+15550300000", Reason: "manual", CreatedAt: t0},
		{Number: "+15550300002", Reason: "manual", CreatedAt: t0},
		{Number: "+15550300003", Reason: "manual", CreatedAt: t0},
		{Number: "+15550300004", Reason: "manual", CreatedAt: t0},
		{Number: "+15550300009", Reason: "stop", CreatedAt: clock.Now()},
	}
	if !reflect.DeepEqual(all, wantAll) {
		t.Fatalf("ListSuppressions = %+v\nwant %+v", all, wantAll)
	}
	// Adding again replaces the reason, except that a STOP or provider
	// opt-out never replaces an operator's suppression.
	if err := s.AddSuppression(ctx, store.Suppression{Number: "+15550300009", Reason: "manual", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddSuppression(ctx, store.Suppression{Number: "+15550300000", Reason: "provider_opt_out", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	got, err = s.Suppressed(ctx, []string{"+15550300000", "+15550300009"})
	if err != nil || got["+15550300009"].Reason != "manual" || got["+15550300000"].Reason != "manual" {
		t.Fatalf("re-added suppressions = %+v, %v", got, err)
	}
}

// testSuppressionSources: a START (Effects.Unsuppress) lifts only what a
// STOP or a provider opt-out created; an operator's suppression stays, also
// when a STOP arrives on top of it or both come in one batch (issue 12
// finding 2). RemoveSuppression (the operator) lifts any.
func testSuppressionSources(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	const manual, stop, prov, stopOverManual, batch = "+15550310001", "+15550310002", "+15550310003", "+15550310004", "+15550310005"
	for _, n := range []string{manual, stopOverManual} {
		if err := s.AddSuppression(ctx, store.Suppression{Number: n, Reason: "manual", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	commitOK(t, s, actor.Unit{Key: "g1", Effects: []any{store.Effects{Suppress: []store.Suppression{
		{Number: stop, Reason: "stop"}, {Number: prov, Reason: "provider_opt_out"}, {Number: stopOverManual, Reason: "stop"}}}}})
	// One batch: an operator's suppression, then a STOP and a START.
	commitOK(t, s,
		actor.Unit{Key: "g2", Effects: []any{store.Effects{Suppress: []store.Suppression{{Number: batch, Reason: "manual"}}}}},
		actor.Unit{Key: "g3", Effects: []any{store.Effects{Suppress: []store.Suppression{{Number: batch, Reason: "stop"}}}}},
		actor.Unit{Key: "g4", Effects: []any{store.Effects{Unsuppress: []string{batch}}}},
	)
	commitOK(t, s, actor.Unit{Key: "g5", Effects: []any{store.Effects{Unsuppress: []string{manual, stop, prov, stopOverManual}}}})
	got, err := s.Suppressed(ctx, []string{manual, stop, prov, stopOverManual, batch})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for n, sp := range got {
		reasons[n] = sp.Reason
	}
	want := map[string]string{manual: "manual", stopOverManual: "manual", batch: "manual"}
	if !reflect.DeepEqual(reasons, want) {
		t.Fatalf("after START: %v, want %v", reasons, want)
	}
	if err := s.RemoveSuppression(ctx, manual); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Suppressed(ctx, []string{manual}); err != nil || len(got) != 0 {
		t.Fatalf("operator removal: %v, %v", got, err)
	}
}

// testClaimRefusesSuppressed: a unit that claims a suppressed number fails
// alone with store.ErrSuppressed and writes nothing; the other units of the
// batch commit, and a suppression earlier in the same batch counts (issue
// 12 finding 1: the claim transaction is where "never after a suppression
// committed" is decided).
func testClaimRefusesSuppressed(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	if err := s.AddSuppression(ctx, store.Suppression{Number: "+15550320001", Reason: "manual", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	errs := commit(t, s,
		actor.Unit{Key: "A", Events: events("a", 1), Effects: []any{store.Effects{Claim: []string{"+15550320009", "+15550320001"}}}},
		actor.Unit{Key: "B", Events: events("b", 1), Effects: []any{store.Effects{Claim: []string{"+15550320002"}}}},
		actor.Unit{Key: "C", Effects: []any{store.Effects{Suppress: []store.Suppression{{Number: "+15550320003", Reason: "stop"}}}}},
		actor.Unit{Key: "D", Events: events("d", 1), Effects: []any{store.Effects{Claim: []string{"+15550320003"}}}},
	)
	if !errors.Is(errs[0], store.ErrSuppressed) || errs[1] != nil || errs[2] != nil || !errors.Is(errs[3], store.ErrSuppressed) {
		t.Fatalf("errors = %v, want [ErrSuppressed nil nil ErrSuppressed]", errs)
	}
	wantSeqs(t, s, "A", 0)
	wantSeqs(t, s, "B", 1)
	wantSeqs(t, s, "D", 0)
	// Lifted: the claim commits.
	commitOK(t, s, actor.Unit{Key: "E", Effects: []any{store.Effects{Unsuppress: []string{"+15550320003"}}}})
	commitOK(t, s, actor.Unit{Key: "D", Events: events("d", 1), Effects: []any{store.Effects{Claim: []string{"+15550320003"}}}})
	wantSeqs(t, s, "D", 1)
}

func testAPIKeys(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	k1 := store.APIKey{ID: "key-1", Name: "admin", Prefix: "cc_aaaa", Hash: []byte{1, 2, 3}, Scopes: []string{"admin"}, CreatedAt: t0}
	k2 := store.APIKey{ID: "key-2", Name: "reader", Prefix: "cc_bbbb", Hash: []byte{4, 5, 6}, Scopes: []string{"read", "send"}, CreatedAt: t0.Add(time.Second)}
	for _, k := range []store.APIKey{k1, k2} {
		if err := s.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateKey(ctx, store.APIKey{ID: "key-3", Prefix: "cc_aaaa", Hash: []byte{7}, CreatedAt: t0}); err == nil {
		t.Fatal("CreateKey with a used prefix succeeded")
	}
	if err := s.CreateKey(ctx, store.APIKey{ID: "key-1", Prefix: "cc_cccc", Hash: []byte{7}, CreatedAt: t0}); err == nil {
		t.Fatal("CreateKey with a used id succeeded")
	}
	if got, err := s.KeyByPrefix(ctx, "cc_bbbb"); err != nil || !reflect.DeepEqual(got, k2) {
		t.Fatalf("KeyByPrefix = %+v, %v", got, err)
	}
	if _, err := s.KeyByPrefix(ctx, "cc_zzzz"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("KeyByPrefix(unknown) = %v", err)
	}
	if err := s.TouchKey(ctx, "key-1", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(ctx, "key-2", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(ctx, "key-2", t0.Add(2*time.Hour)); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	if err := s.RevokeKey(ctx, "key-9", t0); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("RevokeKey(unknown) = %v", err)
	}
	if err := s.TouchKey(ctx, "key-9", t0); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("TouchKey(unknown) = %v", err)
	}
	k1.LastUsedAt = t0.Add(time.Minute)
	k2.RevokedAt = t0.Add(time.Hour)
	keys, err := s.ListKeys(ctx)
	if err != nil || !reflect.DeepEqual(keys, []store.APIKey{k1, k2}) {
		t.Fatalf("ListKeys = %+v, %v\nwant %+v", keys, err, []store.APIKey{k1, k2})
	}
}

func testInvalidCursor(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	for name, call := range map[string]func(string) error{
		"groups":       func(c string) error { _, _, err := s.ListGroups(ctx, store.GroupQuery{Cursor: c}); return err },
		"deliveries":   func(c string) error { _, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{Cursor: c}); return err },
		"replies":      func(c string) error { _, _, err := s.ListReplies(ctx, store.ReplyQuery{Cursor: c}); return err },
		"suppressions": func(c string) error { _, _, err := s.ListSuppressions(ctx, c, 10); return err },
	} {
		for _, c := range []string{"%%%", store.EncodeCursor("a", "b", "c", "d")} {
			if err := call(c); !errors.Is(err, store.ErrInvalidCursor) {
				t.Errorf("%s with cursor %q: %v, want ErrInvalidCursor", name, c, err)
			}
		}
	}
}

// testGroupSearch: ListGroups filters by text (a case-insensitive
// substring; LIKE's wildcards are literal), sender and created_at range,
// together with status and across pages.
func testGroupSearch(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	rows := []struct{ id, from, text string }{
		{"s-0", "+15550100000", "Gate CODE changed"},
		{"s-1", "+15550100001", "gate code is 4411"},
		{"s-2", "+15550100000", "Crew call 7am"},
		{"s-3", "+15550100001", "100% on site_a"},
		{"s-4", "+15550100000", "100 on siteXa"},
	}
	for i, r := range rows {
		g := store.GroupRow{ID: r.id, Status: crewcast.GroupSending, From: r.from, Mode: crewcast.ModeIndividual, Text: r.text,
			CreatedAt: t0.Add(time.Duration(i) * time.Hour), UpdatedAt: t0.Add(time.Duration(i) * time.Hour), Counts: map[string]int{}, Seq: 1}
		if i == 2 {
			g.Status = crewcast.GroupComplete
		}
		commitOK(t, s, actor.Unit{Key: g.ID, Events: events("c", 1), Effects: []any{store.Effects{Group: &g}}})
	}
	cases := []struct {
		name string
		q    store.GroupQuery
		want []string
	}{
		{"text, any case", store.GroupQuery{Text: "gate code"}, []string{"s-1", "s-0"}},
		{"wildcards are literal", store.GroupQuery{Text: "100% on site_"}, []string{"s-3"}},
		{"sender", store.GroupQuery{From: "+15550100001"}, []string{"s-3", "s-1"}},
		{"text and sender", store.GroupQuery{Text: "GATE", From: "+15550100000"}, []string{"s-0"}},
		{"since", store.GroupQuery{Since: t0.Add(3 * time.Hour)}, []string{"s-4", "s-3"}},
		{"until is exclusive", store.GroupQuery{Until: t0.Add(time.Hour)}, []string{"s-0"}},
		{"range and status", store.GroupQuery{Since: t0.Add(time.Hour), Until: t0.Add(4 * time.Hour), Status: crewcast.GroupSending}, []string{"s-3", "s-1"}},
		{"nothing", store.GroupQuery{Text: "zebra"}, nil},
	}
	for _, c := range cases {
		got, next, err := s.ListGroups(ctx, c.q)
		if err != nil || next != "" || !reflect.DeepEqual(groupIDs(got), c.want) {
			t.Errorf("%s: %v, %q, %v; want %v", c.name, groupIDs(got), next, err, c.want)
		}
	}
	q := store.GroupQuery{From: "+15550100000", Limit: 1}
	all := allPages(t, 3, func(cursor string) ([]store.GroupRow, string, error) {
		q.Cursor = cursor
		return s.ListGroups(ctx, q)
	})
	if ids := groupIDs(all); !reflect.DeepEqual(ids, []string{"s-4", "s-2", "s-0"}) {
		t.Errorf("sender pages: %v", ids)
	}
}
