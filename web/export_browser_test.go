package web_test

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardExportCSV is issue 28 item 6, as a dispatcher on the real
// server: after the simulator answers, the group page's Export CSV link
// downloads a file named after the group and its day (the link does not
// override the server's name) whose rows carry each person's text and
// chosen option.
func TestBoardExportCSV(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	ada, bo := "+15550100601", "+15550100602"
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{10, 50}
	faults.Script = map[string]string{ada: "reply:1", bo: "reply:2"}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	id := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{ada, bo},
		"text": "Crew call 7am", "responses": []map[string]string{{"key": "1", "label": "Coming"}, {"key": "2", "label": "Cannot"}}})
	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")
	do("open the group", chromedp.Navigate(srv.URL()+"/#/groups/"+id))
	wait("both answered", counter("response_1")+` === "1" && `+counter("response_2")+` === "1"`)
	if got := webtest.Eval[string](t, ctx, `document.querySelector("#export-csv").getAttribute("download")`); got != "" {
		t.Errorf("the link names the file %q itself; the server's name must win", got)
	}
	raw := webtest.Eval[string](t, ctx, `fetch(document.querySelector("#export-csv").href, {credentials: "same-origin"})`+
		`.then(async r => r.headers.get("content-disposition") + "\n" + await r.text())`, chromedp.EvalAwaitPromise)
	disp, body, _ := strings.Cut(raw, "\n")
	if want := `attachment; filename="crew-call-7am-` + time.Now().UTC().Format("2006-01-02") + `.csv"`; disp != want {
		t.Errorf("Content-Disposition %q, want %q", disp, want)
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv %v: %q", err, body)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	got := map[string]string{}
	for _, r := range rows[1:] {
		got[r[col["number"]]] = r[col["response"]] + " " + r[col["response_label"]] + " | " + r[col["text"]]
	}
	for num, want := range map[string]string{ada: "1 Coming | Crew call 7am\nReply 1 Coming, 2 Cannot", bo: "2 Cannot | Crew call 7am\nReply 1 Coming, 2 Cannot"} {
		if got[num] != want {
			t.Errorf("%s: %q, want %q", num, got[num], want)
		}
	}
}
