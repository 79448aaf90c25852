package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardShowsCarrierTruth (issue 32 item 4): recipients the simulator
// fails with 30007 (filtered as spam), 30034 (unregistered sender) and
// 30003 (unreachable) are counted in tiles of their own, not as "Failed",
// and each row explains its error in plain words with the provider's link.
func TestBoardShowsCarrierTruth(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	crew := []string{"+15550100301", "+15550100302", "+15550100303", "+15550100304", "+15550100305"}
	want := map[string]struct{ code, tile, words string }{
		crew[0]: {"30007", "carrier_filtered", "spam"},
		crew[1]: {"30034", "carrier_unregistered", "not registered"},
		crew[2]: {"30003", "carrier_unreachable", "unreachable"},
	}
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{20, 100}
	faults.Script = map[string]string{crew[3]: "deliver", crew[4]: "fail:40008"}
	for n, w := range want {
		faults.Script[n] = "fail:" + w.code
	}
	srv, key := startServer(t, "carrier", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	id := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": crew, "text": "Crew call 6am, north gate."})

	b := openTab(t)
	ctx, wait := b.ctx, b.wait
	b.signIn(srv.URL()+"/#/groups/"+id, key)
	wait("the roster", `document.querySelectorAll("#roster-body tr.recipient").length === 5`)
	for name, v := range map[string]string{"delivered": "1", "failed": "1", "carrier_filtered": "1", "carrier_unregistered": "1", "carrier_unreachable": "1"} {
		wait("counter "+name+" = "+v, counter(name)+" === "+webtest.JS(v))
	}
	label := func(name string) string {
		return webtest.Eval[string](t, ctx, fmt.Sprintf(`document.querySelector('[data-counter=%q] .tile-label').textContent`, name))
	}
	if got := label("carrier_filtered"); got != "Blocked by carrier (spam filter)" {
		t.Errorf("filtered tile label = %q", got)
	}
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll('[data-counter="carrier_landline"]').length`); n != 0 {
		t.Errorf("%d landline tiles for no landline", n)
	}
	for number, w := range want {
		detail := b.text(row(number) + " .error-detail")
		if !strings.Contains(detail, w.words) {
			t.Errorf("%s (%s): error detail %q does not say %q", number, w.code, detail, w.words)
		}
		href := webtest.Eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%s).getAttribute("href")`, webtest.JS(row(number)+" .error-link")))
		if href != "https://www.twilio.com/docs/api/errors/"+w.code {
			t.Errorf("%s: error link %q", number, href)
		}
	}
	// The summary and the attention banner name the carrier's blocks
	// apart from the one plain failure (40008).
	wait("the summary", `document.querySelector("#summary").textContent.includes("blocked by the carrier")`)
	if got := b.text("#summary"); !strings.Contains(got, "1 failed") || !strings.Contains(got, "3 blocked by the carrier") {
		t.Errorf("summary %q: want 1 failed and 3 blocked by the carrier", got)
	}
	if got := b.text("#attention"); !strings.Contains(got, "1 failed, 3 blocked by the carrier") {
		t.Errorf("attention banner %q: want \"1 failed, 3 blocked by the carrier\"", got)
	}
	_, shot := webtest.SaveScreenshot(t, ctx, "board-carrier-truth.png", webtest.DesktopWidth, webtest.DesktopHeight)
	t.Logf("screenshot: %s", shot)

	// The groups list reads only the group's counts (carrier_blocked),
	// not the recipients: its card says the same.
	b.do("open the groups list", chromedp.Navigate(srv.URL()+"/#/groups"))
	card := fmt.Sprintf(`[data-group-id=%q] .summary-main`, id)
	wait("the card", fmt.Sprintf(`!!document.querySelector(%s)`, webtest.JS(card)))
	wait("the card's blocked count", fmt.Sprintf(`document.querySelector(%s).textContent.includes("3 blocked by the carrier")`, webtest.JS(card)))
	if got := b.text(card); !strings.Contains(got, "1 failed") {
		t.Errorf("groups list card %q: want 1 failed beside the blocked ones", got)
	}
}
