package group

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func planErrs(req Request) []FieldError {
	_, errs := Plan("g", req, Settings{}, nil, t0)
	return errs
}

func hasField(errs []FieldError, field string) *FieldError {
	for i := range errs {
		if errs[i].Field == field {
			return &errs[i]
		}
	}
	return nil
}

// Issue 12 finding 14: text length was counted in runes, so 1,600 emoji
// (49 segments) passed a "10 segments" rule.
func TestTextIsLimitedBySegments(t *testing.T) {
	base := Request{From: sender, To: []string{"+15550100001"}}
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{strings.Repeat("😀", 1600), false},
		{strings.Repeat("😀", 330), true},  // 10 parts of 33
		{strings.Repeat("😀", 331), false}, // 11
		{strings.Repeat("x", 1530), true},
		{strings.Repeat("x", 1531), false},
	} {
		req := base
		req.Text = tc.text
		e := hasField(planErrs(req), "text")
		if tc.ok != (e == nil) {
			t.Errorf("%d runes (%+v): error %v, want ok=%v", len([]rune(tc.text)), Segments(tc.text), e, tc.ok)
		}
		if e != nil && !strings.Contains(e.Message, "segments") {
			t.Errorf("text error %q does not speak of segments", e.Message)
		}
	}
}

// Issue 12 finding 14: media_urls were unchecked (http://, metadata
// addresses and 502 URLs were accepted).
func TestMediaURLsAreChecked(t *testing.T) {
	bad := []string{
		"http://example.com/a.jpg",
		"ftp://example.com/a.jpg",
		"/relative.jpg",
		"https://",
		"https://localhost/a.jpg",
		"https://api.localhost/a.jpg",
		"https://127.0.0.1/a.jpg",
		"https://10.1.2.3/a.jpg",
		"https://192.168.0.9/a.jpg",
		"https://172.16.0.1/a.jpg",
		"https://169.254.169.254/latest/meta-data/",
		"https://[::1]/a.jpg",
		"https://[fe80::1]/a.jpg",
		"https://[fd00:ec2::254]/a.jpg",
		"https://[::ffff:127.0.0.1]/a.jpg",
		"https://0.0.0.0/a.jpg",
		"https://2130706433/a.jpg", // 127.0.0.1 as one number
		"https://0x7f.1/a.jpg",
		"https://metadata.google.internal/computeMetadata/v1/",
		"https://user:pass@example.com/a.jpg",
		"https://example.com/" + strings.Repeat("a", 2100),
	}
	for _, u := range bad {
		req := Request{From: sender, To: []string{"+15550100001"}, Text: "x", MediaURLs: []string{u}}
		if hasField(planErrs(req), "media_urls[0]") == nil {
			t.Errorf("%.60s accepted", u)
		}
	}
	good := []string{"https://example.com/a.jpg", "https://cdn.example.org:8443/x/y.png?sig=1", "https://93.184.216.34/a.gif"}
	req := Request{From: sender, To: []string{"+15550100001"}, Text: "x", MediaURLs: good}
	if errs := planErrs(req); errs != nil {
		t.Errorf("good URLs refused: %v", errs)
	}
	many := make([]string, 11)
	for i := range many {
		many[i] = fmt.Sprintf("https://example.com/%d.jpg", i)
	}
	req.MediaURLs = many
	if e := hasField(planErrs(req), "media_urls"); e == nil || !strings.Contains(e.Message, "10") {
		t.Errorf("11 media URLs: %v", planErrs(req))
	}
	req.MediaURLs = make([]string, 502)
	for i := range req.MediaURLs {
		req.MediaURLs[i] = "http://x"
	}
	if errs := planErrs(req); len(errs) > MaxFieldErrors {
		t.Errorf("502 bad URLs gave %d errors, want at most %d", len(errs), MaxFieldErrors)
	}
}

// Issue 11: the server reported a cleaned number ("notanumber") and the
// board only the first bad line; every bad line must come back, with what
// was typed.
func TestEveryBadLineIsReportedVerbatim(t *testing.T) {
	req := Request{From: "call-me", To: []string{"+15550100001", "not-a-number", " 12 ", "+15550100001", "(555) 010-0002"}, Text: "x"}
	errs := planErrs(req)
	want := map[string]string{"from": "call-me", "to[1]": "not-a-number", "to[2]": " 12 "}
	for f, in := range want {
		e := hasField(errs, f)
		if e == nil {
			t.Errorf("no error on %s: %v", f, errs)
			continue
		}
		if e.Input != in || !strings.Contains(e.Message, fmt.Sprintf("%q", strings.TrimSpace(in))) {
			t.Errorf("%s: %+v, want input %q verbatim and named in the message", f, e, in)
		}
	}
	if len(errs) != 3 {
		t.Errorf("errors %v, want exactly the three bad lines (a duplicate is merged, not an error)", errs)
	}
}

func TestFromInLocalFormatSaysHowToWriteIt(t *testing.T) {
	// 5550100000 is a possible US number, read as +15550100000; a bad
	// sender gets advice in international format.
	e := hasField(planErrs(Request{From: "555010", To: []string{"+15550100001"}, Text: "x"}), "from")
	if e == nil || !strings.Contains(e.Message, "international format") {
		t.Errorf("from 555010: %+v", e)
	}
}

// Issue 12 finding 7: 520,000 empty numbers gave 520,000 errors (a 38 MB
// answer). Errors are capped, the total is counted, and an oversized list
// is refused before any number is parsed.
func TestErrorsAreCappedAndHugeListsRefusedEarly(t *testing.T) {
	req := Request{From: sender, To: make([]string, 5000), Text: "x"}
	_, errs, total := PlanWith("g", req, Settings{}, nil, t0, NormalizeNumber)
	if len(errs) != MaxFieldErrors || total != 5000 {
		t.Fatalf("5,000 empty numbers: %d errors listed, total %d; want %d listed, total 5000", len(errs), total, MaxFieldErrors)
	}
	parsed := 0
	count := func(s string) (string, error) { parsed++; return NormalizeNumber(s) }
	req.To = make([]string, 520000)
	start := time.Now()
	_, errs, total = PlanWith("g", req, Settings{}, nil, t0, count)
	if len(errs) != 1 || total != 1 || errs[0].Field != "to" || !strings.Contains(errs[0].Message, "100000") {
		t.Fatalf("520,000 numbers: %v (total %d), want one error naming the 100000 limit", errs, total)
	}
	if parsed > 1 {
		t.Fatalf("520,000 numbers: %d parsed before refusing, want none but the sender (took %s)", parsed, time.Since(start))
	}
	if e := TooMany(len(req.To)); e == nil {
		t.Fatal("TooMany(520000) = nil")
	}
	named := Request{Recipients: make([]RecipientInput, MaxRecipients+1)}
	if e := named.TooMany(); e == nil || e.Field != "recipients" {
		t.Fatalf("TooMany of %d named recipients = %v, want an error on recipients", MaxRecipients+1, e)
	}
	if e := TooMany(MaxRecipients); e != nil {
		t.Fatalf("TooMany(MaxRecipients) = %v", e)
	}
}
