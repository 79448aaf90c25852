package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardPreviewShowsCostAndUCS2 (issue 32 item 5): the New message
// preview says how many segments the send takes in all and what it costs,
// marks the characters that force UCS-2, and its button replaces the
// typographic quotes, dashes and ellipsis by plain ones — after which the
// text is GSM-7 and nothing is marked.
func TestBoardPreviewShowsCostAndUCS2(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	faults := sim.DefaultFaults()
	srv, key := startServer(t, "cost", server.Config{DemoFaults: &faults, SegmentPrice: "0.0079", ProviderTimeout: 2 * time.Second,
		Settings: group.Settings{CheckAfter: time.Minute}})
	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	b.signIn(srv.URL()+"/", key)

	do("open the form", chromedp.Click(chromedp.CSS("#nav-new")))
	wait("the create form", `!!document.querySelector("#create-form")`)
	webtest.Type(t, ctx, "#from", "+15550100000")
	webtest.Fill(t, ctx, "#to", "+15550100401\n+15550100402")
	webtest.Fill(t, ctx, "#text", "Don’t be late – gate “B”…\u00a0ok")
	do("preview", chromedp.Click(chromedp.CSS("#preview-button")))
	wait("the preview", `!!document.querySelector("#preview-cost")`)
	if got := text("#preview-cost"); got != "2 SMS segments in all · cost 0.0158" {
		t.Errorf("cost line = %q", got)
	}
	marked := webtest.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#preview-ucs2 mark.ucs2-char"), (m) => m.textContent)`)
	if strings.Join(marked, "") != "’–“”…␣" {
		t.Errorf("marked characters = %q, want ’ – “ ” … and the non-breaking space", marked)
	}
	if got := text("#preview-ucs2"); got != "Don’t be late – gate “B”…␣ok" {
		t.Errorf("marked text = %q", got)
	}
	do("use plain quotes", chromedp.Click(chromedp.CSS("#plain-quotes")))
	wait("the plain text", `document.querySelector("#text").value === "Don't be late - gate \"B\"... ok"`)
	wait("the new preview", `!!document.querySelector("#preview-cost") && !document.querySelector("#preview-ucs2")`)
	if got := text("#preview-summary"); !strings.Contains(got, "(GSM-7)") {
		t.Errorf("after the replacement the preview says %q, want GSM-7", got)
	}
	if n := len(srv.Sim().Ledger()); n != 0 {
		t.Fatalf("the preview sent %d messages", n)
	}
}
