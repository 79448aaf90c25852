package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

type fakeSenderHealth struct{ down string }

func (f fakeSenderHealth) Healthy(provider string) bool { return provider != f.down }

// seedSends commits a group from +15550100001 with 7 recipients claimed in
// the last hour (one unconfirmed), 2 claimed before it and 1 never claimed.
func seedSends(t *testing.T, e *env) {
	now := e.clock.Now()
	row := store.GroupRow{ID: "g-sends", Status: crewcast.GroupSending, From: "+15550100001", Mode: crewcast.ModeIndividual,
		CreatedAt: now, UpdatedAt: now, Counts: map[string]int{}, Seq: 1}
	var ds []store.DeliveryRow
	for i := range 10 {
		at := now.Add(-time.Duration(i*9) * time.Minute) // 0, 9, … 54 min ago, then 63 and 72
		d := store.DeliveryRow{GroupID: row.ID, Number: fmt.Sprintf("+1555020%04d", i), Status: crewcast.StatusSent,
			ClaimedAt: at, SentAt: at, UpdatedAt: now}
		switch i {
		case 0:
			d.Status, d.SentAt = crewcast.StatusUnconfirmed, time.Time{}
		case 9:
			d.Status, d.ClaimedAt, d.SentAt = crewcast.StatusPending, time.Time{}, time.Time{}
		}
		ds = append(ds, d)
	}
	unit := actor.Unit{Key: row.ID, Events: []actor.Event{{Seq: 1, Type: "seed", Data: []byte("{}"), Time: now}},
		Effects: []any{store.Effects{Group: &row, Deliveries: ds}}}
	if res, err := e.st.Commit(context.Background(), []actor.Unit{unit}); err != nil || res[0] != nil {
		t.Fatalf("seed sends: %v %v", err, res)
	}
}

// TestSendersAPI: admins add, list, change and remove senders; the list
// says each one's health and volume; every change is audited; other
// scopes are refused.
func TestSendersAPI(t *testing.T) {
	var changed atomic.Int32
	e := newEnv(t, func(c *Config) {
		c.SenderHealth = fakeSenderHealth{down: "twilio"}
		c.SendersChanged = func(context.Context) { changed.Add(1) }
	})
	admin := e.keys["admin"]
	seedSends(t, e)
	for _, k := range []string{"send", "read"} {
		if resp, _ := e.do("GET", "/v1/senders", "", e.keys[k], nil); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s key lists senders: %d", k, resp.StatusCode)
		}
		if resp, _ := e.do("POST", "/v1/senders", `{"number":"+15550100009","provider":"telnyx"}`, e.keys[k], nil); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s key adds a sender: %d", k, resp.StatusCode)
		}
	}
	for _, body := range []string{
		`{"provider":"telnyx"}`,
		`{"number":"555","provider":"telnyx"}`,
		`{"number":"+15550100001","provider":"plivo"}`,
		`{"number":"+15550100001","provider":"telnyx","mps":-1}`,
		`{"number":"+15550100001","provider":"telnyx","registration":{"kind":"11dlc"}}`,
		`{"number":"+15550100001","provider":"telnyx","registration":{"status":"maybe"}}`,
	} {
		if resp, b := e.do("POST", "/v1/senders", body, admin, nil); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d %s, want 400", body, resp.StatusCode, b)
		}
	}
	resp, b := e.do("POST", "/v1/senders", `{"number":"+15550100001","provider":"telnyx","pool":"dispatch",
		"registration":{"kind":"toll_free","campaign_id":"TF1","status":"approved"}}`, admin, nil)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Location") != "/v1/senders/+15550100001" {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	got := decode[senderJSON](t, b)
	if got.MPS != 3 || !got.Healthy || got.SentLastHour != 7 || got.Registration.Kind != "toll_free" {
		t.Fatalf("created %+v (toll-free default mps 3)", got)
	}
	if resp, b := e.do("POST", "/v1/senders", `{"number":"+15550100001","provider":"twilio"}`, admin, nil); resp.StatusCode != http.StatusConflict {
		t.Fatalf("create twice: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do("POST", "/v1/senders", `{"number":"+15550100002","provider":"twilio","pool":"dispatch","mps":0.5}`, admin, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create second: %d %s", resp.StatusCode, b)
	}
	_, b = e.do("GET", "/v1/senders", "", admin, nil)
	list := decode[struct{ Senders []senderJSON }](t, b)
	if len(list.Senders) != 2 || list.Senders[1].Healthy || list.Senders[1].MPS != 0.5 ||
		list.Senders[1].Registration.Kind != "none" || list.Senders[1].Registration.Status != "unknown" {
		t.Fatalf("list %s", b)
	}
	resp, b = e.do("PATCH", "/v1/senders/+15550100002", `{"pool":"night","registration":{"kind":"10dlc","status":"pending"}}`, admin, nil)
	if got := decode[senderJSON](t, b); resp.StatusCode != http.StatusOK || got.Pool != "night" || got.Registration.Status != "pending" {
		t.Fatalf("patch: %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do("PATCH", "/v1/senders/+15550100002", `{"pool":"night"}`, admin, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("patch changing nothing: %d", resp.StatusCode)
	}
	if resp, _ := e.do("PATCH", "/v1/senders/+15550100002", `{"number":"+15550100003"}`, admin, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("patch of the number: %d", resp.StatusCode)
	}
	if resp, _ := e.do("PATCH", "/v1/senders/+15550100099", `{"pool":"x"}`, admin, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("patch unknown: %d", resp.StatusCode)
	}
	resp, b = e.do("GET", "/v1/senders/+15550100002", "", admin, nil)
	if got := decode[senderJSON](t, b); resp.StatusCode != http.StatusOK || got.Number != "+15550100002" || got.Pool != "night" {
		t.Fatalf("get %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do("DELETE", "/v1/senders/+15550100002", "", admin, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if resp, _ := e.do("DELETE", "/v1/senders/+15550100002", "", admin, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("delete twice: %d", resp.StatusCode)
	}
	if resp, _ := e.do("GET", "/v1/senders/+15550100002", "", admin, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("get deleted: %d", resp.StatusCode)
	}
	if n := changed.Load(); n != 4 {
		t.Fatalf("SendersChanged called %d times, want 4 (2 creates, 1 change, 1 removal)", n)
	}
	entries, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range entries {
		if strings.HasPrefix(a.Action, "sender.") {
			actions = append(actions, a.Action+" "+a.Target)
		}
	}
	want := "sender.deleted …0002,sender.updated …0002,sender.created …0002,sender.created …0001"
	if strings.Join(actions, ",") != want {
		t.Fatalf("audit %q\nwant %q", actions, want)
	}
}

// TestSenderRegistrationGate: a group from a 10DLC or toll-free sender
// whose registration is not approved is refused at create and preview
// with sender_unregistered; an approved one, one with no registration to
// get, and a from that is no sender pass; --allow-unregistered lets all
// through.
func TestSenderRegistrationGate(t *testing.T) {
	for _, allow := range []bool{false, true} {
		e := newEnv(t, func(c *Config) { c.AllowUnregistered = allow })
		ctx := context.Background()
		for _, s := range []store.Sender{
			{Number: "+15550100001", Provider: "telnyx", MPS: 1, Registration: store.Registration{Kind: "10dlc", Status: "pending"}},
			{Number: "+15550100002", Provider: "twilio", MPS: 3, Registration: store.Registration{Kind: "toll_free", Status: "rejected"}},
			{Number: "+15550100003", Provider: "telnyx", MPS: 1, Registration: store.Registration{Kind: "10dlc", Status: "approved"}},
			{Number: "+15550100004", Provider: "telnyx", MPS: 30, Registration: store.Registration{Kind: "short_code", Status: "unknown"}},
			{Number: "+15550100005", Provider: "twilio", MPS: 3, Registration: store.Registration{Kind: "toll_free", Status: "unknown"}},
		} {
			if err := e.st.CreateSender(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		cases := map[string]bool{ // from → refused without --allow-unregistered
			"+15550100001": true, "+1 555 010 0002": true, "+15550100005": true,
			"+15550100003": false, "+15550100004": false, "+15550100099": false,
		}
		for from, refused := range cases {
			body := `{"from":"` + from + `","to":["+15550109001"],"text":"Shift open"}`
			for _, path := range []string{"/v1/groups/preview", "/v1/groups"} {
				resp, b := e.do("POST", path, body, "send", nil)
				if refused && !allow {
					if resp.StatusCode != http.StatusUnprocessableEntity || errorOf(t, b).Code != "sender_unregistered" {
						t.Fatalf("%s from %s: %d %s, want 422 sender_unregistered", path, from, resp.StatusCode, b)
					}
					continue
				}
				if resp.StatusCode >= 300 {
					t.Fatalf("%s from %s (allow %v): %d %s", path, from, allow, resp.StatusCode, b)
				}
			}
		}
	}
}
