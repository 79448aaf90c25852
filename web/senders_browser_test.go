package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardSenders: on the #/senders page an admin adds a sender (a bad
// number and a bad rate are refused on their fields first), sees it listed
// with its registration, health and the sends of the last hour from it,
// and removes it through the confirmation dialog; both changes are in the
// audit log. axe stays clean on the page.
func TestBoardSenders(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "senders", server.Config{})
	base := srv.URL()
	gid := createVia(t, base+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{"+15550100001", "+15550100002"},
		"text": "Crew call: site B, 7:00 tomorrow."})
	waitClaimed(t, base, key, gid)

	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	b.signIn(base+"/", key)
	wait("admin links shown", `!document.querySelector('[data-nav="senders"]').hidden`)
	do("open senders", chromedp.Click(chromedp.CSS(`[data-nav="senders"]`)))
	wait("the empty list", `location.hash === "#/senders" && (document.querySelector("#sender-rows") || {}).textContent?.includes("No senders yet")`)
	if got := webtest.Eval[string](t, ctx, `document.title`); got != "Senders — crewcast" {
		t.Errorf("title %q", got)
	}
	b.axeClean(t, "senders, empty")
	// Both providers of the demo, their circuits closed.
	wait("the providers' circuits", `document.querySelectorAll("#provider-states li[data-circuit=closed]").length === 2`)
	if got := text("#provider-states"); !strings.Contains(got, "Telnyx: up") || !strings.Contains(got, "Twilio: up") {
		t.Errorf("providers %q", got)
	}

	// Mistakes the board can tell: on their fields, the first one focused.
	webtest.Fill(t, ctx, "#sender-number", "call me")
	webtest.Fill(t, ctx, "#sender-mps", "fast")
	do("add a bad one", chromedp.Click(chromedp.CSS("#sender-submit")))
	wait("the number error", `document.querySelector("#sender-number").getAttribute("aria-invalid") === "true" && document.activeElement.id === "sender-number"`)
	if got := text("#sender-mps-error"); !strings.Contains(got, "0.01 and 1000") {
		t.Errorf("rate error %q", got)
	}
	// A number the server refuses: its message lands on the number field.
	webtest.Fill(t, ctx, "#sender-number", "+1 555")
	webtest.Fill(t, ctx, "#sender-mps", "")
	do("add a short number", chromedp.Click(chromedp.CSS("#sender-submit")))
	wait("the server's number error", `(document.querySelector("#sender-number-error").textContent || "").includes("international format") && !document.querySelector("#sender-mps").hasAttribute("aria-invalid")`)
	b.axeClean(t, "senders, field errors")

	webtest.Fill(t, ctx, "#sender-number", "+15550100000")
	webtest.Fill(t, ctx, "#sender-pool", "dispatch")
	webtest.Fill(t, ctx, "#sender-mps", "2.5")
	webtest.Fill(t, ctx, "#sender-kind", "toll_free")
	webtest.Fill(t, ctx, "#sender-campaign", "TF-77")
	webtest.Fill(t, ctx, "#sender-status", "approved")
	do("add", chromedp.Click(chromedp.CSS("#sender-submit")))
	sel := `#sender-rows tr[data-number="+15550100000"]`
	wait("the sender listed", `!!document.querySelector(`+webtest.JS(sel)+`)`)
	cells := webtest.Eval[[]string](t, ctx, `[...document.querySelectorAll(`+webtest.JS(sel+" td")+`)].map((td) => td.textContent)`)
	want := []string{"+15550100000", "Telnyx", "dispatch", "2.5", "Toll-free · approved · TF-77", "Healthy", "2", "Remove"}
	if strings.Join(cells, "|") != strings.Join(want, "|") {
		t.Errorf("row %q, want %q", cells, want)
	}
	if webtest.Eval[bool](t, ctx, `document.querySelector("#sender-number").hasAttribute("aria-invalid")`) {
		t.Error("the number field stayed invalid after a good add")
	}
	b.axeClean(t, "senders, one listed")

	// The same number again: the server's conflict, said on the field.
	webtest.Fill(t, ctx, "#sender-number", "+15550100000")
	do("add it twice", chromedp.Click(chromedp.CSS("#sender-submit")))
	wait("the conflict", `(document.querySelector("#sender-number-error").textContent || "").includes("already a sender")`)

	do("remove", chromedp.Click(chromedp.CSS(sel+" button.sender-remove")))
	wait("the dialog", `document.querySelector("#confirm-dialog").open && document.querySelector("#confirm-title").textContent === "Remove +15550100000?"`)
	b.axeClean(t, "senders, confirming removal")
	do("confirm", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="remove"]`)))
	wait("gone", `!document.querySelector(`+webtest.JS(sel)+`) && document.querySelector("#sender-rows").textContent.includes("No senders yet")`)

	var list struct{ Senders []struct{ Number string } }
	getJSON(t, base+"/v1/senders", key, &list)
	if len(list.Senders) != 0 {
		t.Fatalf("senders after remove: %+v", list.Senders)
	}
	for _, action := range []string{"sender.created", "sender.deleted"} {
		var log struct {
			Entries []struct{ Action, Target string }
		}
		getJSON(t, base+"/v1/audit?action="+action, key, &log)
		if len(log.Entries) != 1 || !strings.HasSuffix(log.Entries[0].Target, "0000") {
			t.Errorf("audit %s: %+v", action, log.Entries)
		}
	}
}

// waitClaimed polls the group until every recipient's send is claimed, so
// the senders list has its sends to count.
func waitClaimed(t *testing.T, base, key, gid string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var g struct {
			Recipients []struct {
				ClaimedAt *time.Time `json:"claimed_at"`
			}
		}
		getJSON(t, base+"/v1/groups/"+gid, key, &g)
		claimed := 0
		for _, r := range g.Recipients {
			if r.ClaimedAt != nil {
				claimed++
			}
		}
		if claimed == len(g.Recipients) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s: %d of %d recipients claimed", gid, claimed, len(g.Recipients))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// addSender registers a sender through the API (its answer has no id, so
// not createVia).
func addSender(t *testing.T, base, key string, v map[string]any) {
	t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/v1/senders", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		raw, _ := io.ReadAll(res.Body)
		t.Fatalf("POST /v1/senders: %d %s", res.StatusCode, raw)
	}
}
