package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Issue 32 item 5: the preview says what a send costs before it goes —
// segments_total (each texted recipient's rendered text, in segments,
// summed), cost (segments_total × --segment-price, omitted without one) and
// ucs2_chars, the characters that force UCS-2 with their character index.
func TestPreviewCost(t *testing.T) {
	priced := newEnv(t, func(c *Config) { c.SegmentPrice = "0.0079" })
	unpriced := newEnv(t, nil)
	type preview struct {
		Recipients    int              `json:"recipients"`
		Segments      int              `json:"segments"`
		Encoding      string           `json:"encoding"`
		SegmentsTotal *int             `json:"segments_total"`
		Cost          *json.Number     `json:"cost"`
		UCS2Chars     []map[string]any `json:"ucs2_chars"`
	}
	post := func(e *env, body string) (preview, string) {
		t.Helper()
		resp, b := e.do("POST", "/v1/groups/preview", body, "send", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("preview %s = %d %s", body, resp.StatusCode, b)
		}
		var p preview
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		return p, string(b)
	}
	three := `"to":["+15550100001","+15550100002","+15550100003"]`
	cases := []struct {
		name, body string
		enc        string
		total      int
		cost       string
		ucs2       string // JSON of ucs2_chars
	}{
		// 160 GSM-7 septets: one segment each; 161 with the € (2 septets): two.
		{"gsm one", `{"from":"+15550100000",` + three + `,"text":"` + strings.Repeat("a", 160) + `"}`, "GSM-7", 3, "0.0237", `[]`},
		{"gsm extension", `{"from":"+15550100000",` + three + `,"text":"` + strings.Repeat("a", 159) + `€"}`, "GSM-7", 6, "0.0474", `[]`},
		// 70 UCS-2 units in one segment; the emoji are two units each.
		// 71 UCS-2 units: two segments each; the emoji is two units.
		{"ucs2", `{"from":"+15550100000",` + three + `,"text":"` + strings.Repeat("ł", 69) + `😀"}`, "UCS-2", 6, "0.0474", ucs2Run(69, "ł") + `,{"char":"😀","index":69}]`},
		{"mixed", `{"from":"+15550100000","to":["+15550100001"],"text":"Don’t forget: gate {B} – 7 € “sharp”"}`, "UCS-2", 1, "0.0079",
			`[{"char":"’","index":3},{"char":"–","index":23},{"char":"“","index":29},{"char":"”","index":35}]`},
		// Per-recipient texts: Ada's name fits, Łukasz's forces UCS-2 and
		// a second segment; only the texted recipients count.
		{"rendered per recipient", `{"from":"+15550100000","recipients":[{"number":"+15550100001","name":"Ada"},{"number":"+15550100002","name":"Łukasz"}],
			"text":"{{name}} ` + strings.Repeat("x", 66) + `"}`, "UCS-2", 3, "0.0237", `[]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, raw := post(priced, tc.body)
			if p.SegmentsTotal == nil || *p.SegmentsTotal != tc.total || p.Encoding != tc.enc {
				t.Errorf("segments_total/encoding in %s, want %d, %s", raw, tc.total, tc.enc)
			}
			if p.Cost == nil || p.Cost.String() != tc.cost {
				t.Errorf("cost in %s, want %s", raw, tc.cost)
			}
			got, _ := json.Marshal(p.UCS2Chars)
			if p.UCS2Chars == nil {
				got = []byte("null")
			}
			if string(got) != tc.ucs2 {
				t.Errorf("ucs2_chars = %s, want %s", got, tc.ucs2)
			}
			u, raw := post(unpriced, tc.body)
			if strings.Contains(raw, `"cost"`) || u.SegmentsTotal == nil || *u.SegmentsTotal != tc.total {
				t.Errorf("without a segment price: %s, want no cost and segments_total %d", raw, tc.total)
			}
		})
	}
}

// ucs2Run is the opening of a ucs2_chars list: n times c at indexes 0…n-1.
func ucs2Run(n int, c string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"char":"` + c + `","index":` + strconv.Itoa(i) + `}`
	}
	return "[" + strings.Join(parts, ",")
}

func TestParseSegmentPrice(t *testing.T) {
	for in, want := range map[string]string{"0.0079": "0.0237", "1": "3", "0.5": "1.5", "12.000": "36.000"} {
		p, err := ParseSegmentPrice(in)
		if err != nil {
			t.Errorf("ParseSegmentPrice(%q): %v", in, err)
			continue
		}
		if got := p.Cost(3).String(); got != want {
			t.Errorf("ParseSegmentPrice(%q): 3 segments cost %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{"", "-1", "1e3", "1/3", ".5", "5.", "0,5", "$1", " 1", "0.0000000000001"} {
		if _, err := ParseSegmentPrice(in); err == nil {
			t.Errorf("ParseSegmentPrice(%q) accepted", in)
		}
	}
}
