package tracker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// createAsking creates a group to numbers asking calloutOptions.
func (e *env) createAsking(text string, to []string, mod func(*group.Request)) string {
	e.t.Helper()
	req := group.Request{From: from, To: to, Text: text, Responses: calloutOptions}
	if mod != nil {
		mod(&req)
	}
	id, created, err := e.tr.Create(context.Background(), req, CreateOptions{})
	if err != nil || !created {
		e.t.Fatalf("create: %v %v", created, err)
	}
	e.settle()
	return id
}

func (e *env) responseOf(id, number string) string {
	e.t.Helper()
	e.barrier(id)
	g := e.loadGroup(id)
	r := g.Recipient(number)
	if r == nil {
		e.t.Fatalf("%s is not in %s", number, id)
	}
	return r.Response
}

func (e *env) ambiguousReplies(number string) []store.Reply {
	e.t.Helper()
	rows, _, err := e.st.ListReplies(context.Background(), store.ReplyQuery{Ambiguous: true, Number: number})
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

const listingStart = "You have several open requests"

// TestReplyCodesRouteCodedAnswers (issue 29 item 3): with two open groups
// from one number, the second one's hint shows its code (the first, sent
// alone, is unchanged), and coded answers in every shape land in their
// group; the codes are on the groups' journals.
func TestReplyCodesRouteCodedAnswers(t *testing.T) {
	e := newEnv(t, nil)
	bob, ann := nums(2)[0], nums(2)[1]
	a := e.createAsking("North gate 7am", []string{bob, ann}, nil)
	b := e.createAsking("South gate 9am", []string{bob}, nil)
	texts := e.textsTo()
	if got := texts[bob]; len(got) != 2 || got[0] != "North gate 7am\nReply 1 Coming, 2 Cannot" || got[1] != "South gate 9am\nReply 1B Coming, 2B Cannot" {
		t.Fatalf("texts to bob: %q", got)
	}
	if got := texts[ann]; len(got) != 1 || strings.Contains(got[0], "1A") {
		t.Fatalf("ann has one group: her text must be unchanged: %q", got)
	}
	ga, gb := e.loadGroup(a), e.loadGroup(b)
	if ga.Recipient(bob).Code != "A" || ga.ShownCode(0) != "" || gb.ShownCode(0) != "B" {
		t.Fatalf("codes: a %+v, b %+v", ga.Recipient(bob), gb.Recipient(bob))
	}
	for id, want := range map[string]string{a: "", b: "B"} { // the recipient JSON's "code"
		rows, _, err := e.st.ListDeliveries(context.Background(), store.DeliveryQuery{GroupID: id, Number: bob})
		if err != nil || len(rows) != 1 || rows[0].Code != want {
			t.Fatalf("delivery row of bob in %s: %+v %v; want code %q", id, rows, err, want)
		}
	}
	for i, tc := range []struct{ text, group, want string }{
		{"2B", b, "2"}, {"1 A", a, "1"}, {"b1", b, "1"}, {"A 2", a, "2"}, {"yes b", b, "1"},
	} {
		e.reply(bob, tc.text, "code-"+string(rune('a'+i)))
		e.settle()
		if got := e.responseOf(tc.group, bob); got != tc.want {
			t.Fatalf("after %q: %s has %q, want %q", tc.text, tc.group, got, tc.want)
		}
	}
	if n := len(e.ambiguousReplies(bob)); n != 0 {
		t.Fatalf("%d ambiguous replies from coded answers", n)
	}
	// Ann has one group: a bare answer works as today.
	e.reply(ann, "2", "ann-1")
	e.settle()
	if got := e.responseOf(a, ann); got != "2" {
		t.Fatalf("ann's bare answer: %q", got)
	}
}

// TestReplyCodesBareAnswerIsAmbiguous: a bare answer while two groups are
// open is applied to neither, kept as an ambiguous reply, and answered by
// one message listing the open requests with their codes — once, though
// the webhook comes twice and the tracker restarts.
func TestReplyCodesBareAnswerIsAmbiguous(t *testing.T) {
	e := newEnv(t, nil)
	bob := nums(1)[0]
	a := e.createAsking("North gate 7am", []string{bob}, nil)
	b := e.createAsking("South gate 9am", []string{bob}, nil)
	e.reply(bob, "1", "bare-1")
	e.reply(bob, "1", "bare-1")
	outs := e.awaitUnmatchedOutcomes(1)
	for _, o := range outs {
		if o.Status != "sent" {
			t.Fatalf("listing outcome %+v", o)
		}
	}
	if ra, rb := e.responseOf(a, bob), e.responseOf(b, bob); ra != "" || rb != "" {
		t.Fatalf("a bare answer was applied: a %q, b %q", ra, rb)
	}
	amb := e.ambiguousReplies(bob)
	if len(amb) != 1 || amb[0].GroupID != "" || amb[0].Text != "1" {
		t.Fatalf("ambiguous replies %+v", amb)
	}
	listing := e.textsTo()[bob]
	if len(listing) != 3 || !strings.HasPrefix(listing[2], listingStart) ||
		!strings.Contains(listing[2], "A: North gate 7am — Reply 1A Coming, 2A Cannot") ||
		!strings.Contains(listing[2], "B: South gate 9am — Reply 1B Coming, 2B Cannot") {
		t.Fatalf("texts to bob %q", listing)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.tr.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	e.tr = e.start(nil)
	e.reply(bob, "1", "bare-1")
	e.settle()
	if n := countText(listingStart)(e.prov.sent()); n != 1 {
		t.Fatalf("%d listings, want 1", n)
	}
	// What answers nothing ("running late") is a reply like any, to the
	// conversation's latest group: no listing.
	e.reply(bob, "running late", "chatter-1")
	e.settle()
	if n := countText(listingStart)(e.prov.sent()); n != 1 || len(e.ambiguousReplies(bob)) != 1 {
		t.Fatalf("chatter was ambiguous: %d listings", n)
	}
	gb := e.loadGroup(b)
	if r := gb.Recipient(bob); r.LastReply != "running late" || r.Response != "" {
		t.Fatalf("chatter in b: %+v", r)
	}
	// The listing's codes work.
	e.reply(bob, "1A", "coded-1")
	e.settle()
	if got := e.responseOf(a, bob); got != "1" {
		t.Fatalf("1A after the listing: %q", got)
	}
}

// TestReplyCodesOneOpenLeftTakesBareAnswers: once one of the two groups
// no longer asks (its quorum met, or canceled), a bare answer goes to the
// one still open, and a coded answer still reaches the closed one.
func TestReplyCodesOneOpenLeftTakesBareAnswers(t *testing.T) {
	e := newEnv(t, nil)
	bob, ann := nums(2)[0], nums(2)[1]
	a := e.createAsking("North gate 7am", []string{bob, ann}, func(r *group.Request) {
		r.Quorum = &group.Quorum{Response: "1", Count: 1, KeepSending: true}
	})
	b := e.createAsking("South gate 9am", []string{bob}, nil)
	c := e.createAsking("East gate 8am", []string{bob}, nil)
	e.reply(ann, "1", "ann-yes") // ann has only a: her answer meets a's quorum
	e.settle()
	if e.loadGroup(a).Quorum.MetAt.IsZero() {
		t.Fatal("a's quorum not met")
	}
	if err := e.tr.Cancel(context.Background(), c, "test"); err != nil {
		t.Fatal(err)
	}
	e.settle()
	e.reply(bob, "2", "bob-bare")
	e.settle()
	if got := e.responseOf(b, bob); got != "2" {
		t.Fatalf("bare answer with one open group left: b has %q", got)
	}
	if got := e.responseOf(a, bob); got != "" {
		t.Fatalf("a got the bare answer: %q", got)
	}
	e.reply(bob, "1A", "bob-coded")
	e.settle()
	if got := e.responseOf(a, bob); got != "1" {
		t.Fatalf("a coded answer to a met group: %q", got)
	}
	if n := len(e.ambiguousReplies(bob)); n != 0 || countText(listingStart)(e.prov.sent()) != 0 {
		t.Fatalf("%d ambiguous replies", n)
	}
}

// TestReplyCodesListingCrashIsUnconfirmedNeverResent: the process dies
// between the listing's claim and the provider's answer; the claim stays
// without an outcome (unconfirmed) and a second process sends nothing,
// though the ambiguous reply's webhook comes again.
func TestReplyCodesListingCrashIsUnconfirmedNeverResent(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	e := newEnv(t, nil)
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		if strings.HasPrefix(req.Text, listingStart) {
			<-block
			return crewcast.SendResult{}, errors.New("process gone")
		}
		return crewcast.SendResult{MessageID: id}, nil
	}
	bob := nums(1)[0]
	e.createAsking("North gate 7am", []string{bob}, nil)
	e.createAsking("South gate 9am", []string{bob}, nil)
	e.reply(bob, "yes", "bare-crash")
	e.waitSends("the listing in flight", func(s []crewcast.SendRequest) bool { return countText(listingStart)(s) == 1 })
	if claims, outs := e.unmatchedConfirmations(); len(claims) != 1 || len(outs) != 0 {
		t.Fatalf("claims %+v outcomes %+v", claims, outs)
	}

	prov2 := &fakeProvider{}
	st2, tr2 := e.secondProcess(Config{Provider: prov2})
	if _, err := tr2.Ingest(context.Background(), []crewcast.Event{{Provider: "fake", EventID: "bare-crash", Kind: crewcast.KindInbound,
		From: bob, To: from, Text: "yes"}}); err != nil {
		t.Fatal(err)
	}
	if err := tr2.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if s := prov2.sent(); len(s) != 0 {
		t.Fatalf("the second process sent %+v", s)
	}
	rows, _, err := st2.ListReplies(context.Background(), store.ReplyQuery{Ambiguous: true})
	if err != nil || len(rows) != 1 {
		t.Fatalf("ambiguous replies after the crash: %+v %v", rows, err)
	}
}

// TestRetentionHashDeletesTheCodeMap: the code map's key names the
// person's number, so retention's hash stage deletes it with the
// conversation route (here the window outlives the hash age, so the row
// would still be live).
func TestRetentionHashDeletesTheCodeMap(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ReplyCodeWindow = 1000 * 24 * time.Hour })
	ctx := context.Background()
	bob := nums(1)[0]
	id := e.createAsking("North gate 7am", []string{bob}, nil)
	_, rows := e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{statusEvent("evt-code", rows[0], crewcast.StatusDelivered)}); err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "complete", func(g store.GroupRow, _ []store.DeliveryRow) bool { return g.Status == crewcast.GroupComplete })
	if _, err := e.st.GetRoute(ctx, codeKey(from, bob)); err != nil {
		t.Fatalf("no code map after the claim: %v", err)
	}
	e.clk.Advance(91 * 24 * time.Hour)
	for range 2 { // redact, then hash
		if _, err := e.tr.RunRetention(ctx, RetentionPolicy{HashKey: []byte("k")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.st.GetRoute(ctx, codeKey(from, bob)); err == nil {
		t.Fatal("the code map naming the number survived hashing")
	}
}

// TestReplyCodesListingHonoursSuppression: the listing is a message like
// any other: to a number suppressed since, it is not sent (not_sent).
func TestReplyCodesListingHonoursSuppression(t *testing.T) {
	e := newEnv(t, nil)
	bob := nums(1)[0]
	e.createAsking("North gate 7am", []string{bob}, nil)
	e.createAsking("South gate 9am", []string{bob}, nil)
	if err := e.st.AddSuppression(context.Background(), store.Suppression{Number: bob, Reason: "manual", CreatedAt: e.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	e.reply(bob, "1", "bare-suppressed")
	for _, o := range e.awaitUnmatchedOutcomes(1) {
		if o.Status != "not_sent" {
			t.Fatalf("listing to a suppressed number: %+v", o)
		}
	}
	if n := countText(listingStart)(e.prov.sent()); n != 0 {
		t.Fatalf("%d listings sent to a suppressed number", n)
	}
}
