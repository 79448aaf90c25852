package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
)

// TestGroupCSVColumnsAndFilename is issue 28 item 6: the group CSV has
// the text each person got, the chosen option's key and label, whether the
// answer counts for the quorum (selected), follow-ups sent and channel,
// and is named after the group's text and day.
func TestGroupCSVColumnsAndFilename(t *testing.T) {
	e := newEnv(t, nil)
	body := `{"from":"+15550100000","text":"Crew call 7am, {{first_name}}!",
		"recipients":[{"number":"+15550100001","name":"Ada Lovelace"},{"number":"+15550100002","name":"Bo Diddley"}],
		"responses":[{"key":"1","label":"Coming","ack":"yes"},{"key":"2","label":"Cannot","ack":"no"}],
		"quorum":{"response":"1","count":1},"followup":{"after":"10m","max":2}}`
	resp, b := e.do("POST", "/v1/groups", body, "send", nil)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	g := decode[apitype.Group](t, b)
	now := e.clock.Now()
	e.apply(g.ID, group.Claimed{At: now, Sends: []group.Send{{ID: "s0", Indices: []int{0}}, {ID: "s1", Indices: []int{1}}}},
		group.Outcomes{At: now, Outcomes: []group.Outcome{{SendID: "s0", Indices: []int{0}, Result: group.ResultAccepted, MessageID: "m0"},
			{SendID: "s1", Indices: []int{1}, Result: group.ResultAccepted, MessageID: "m1"}}},
		group.FollowupClaimed{At: now.Add(10 * time.Minute), Sends: []group.FollowupSend{{ID: "f1-1", Index: 1, N: 1}}},
		group.FollowupOutcomes{At: now.Add(10 * time.Minute), Outcomes: []group.Outcome{{SendID: "f1-1", Indices: []int{1}, Result: group.ResultAccepted, MessageID: "m2"}}},
		group.Replied{At: now.Add(11 * time.Minute), EventID: "r0", Index: 0, Text: "1", Response: "1"})

	resp, b = e.do("GET", "/v1/reports/deliveries?format=csv&group_id="+g.ID, "", "read", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("csv: %d %s", resp.StatusCode, b)
	}
	want := `attachment; filename="crew-call-7am-first-name-` + g.CreatedAt.UTC().Format("2006-01-02") + `.csv"`
	if got := resp.Header.Get("Content-Disposition"); got != want {
		t.Errorf("Content-Disposition %q, want %q", got, want)
	}
	rows := readCSV(t, b)
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, c := range []string{"text", "response", "response_label", "selected", "followups_sent", "channel"} {
		if _, ok := col[c]; !ok {
			t.Fatalf("no column %q in %v", c, rows[0])
		}
	}
	by := map[string][]string{}
	for _, r := range rows[1:] {
		by[r[col["number"]]] = r
	}
	ada, bo := by["+15550100001"], by["+15550100002"]
	if ada == nil || bo == nil {
		t.Fatalf("rows %v", rows)
	}
	for _, c := range []struct {
		row        []string
		name, want string
	}{
		{ada, "text", "Crew call 7am, Ada!\nReply 1 Coming, 2 Cannot"},
		{bo, "text", "Crew call 7am, Bo!\nReply 1 Coming, 2 Cannot"},
		{ada, "response", "1"}, {ada, "response_label", "Coming"}, {ada, "selected", "true"},
		{bo, "response", ""}, {bo, "response_label", ""}, {bo, "selected", "false"},
		{ada, "followups_sent", "0"}, {bo, "followups_sent", "1"},
		{ada, "channel", "sms"}, {bo, "channel", "sms"},
	} {
		if got := c.row[col[c.name]]; got != c.want {
			t.Errorf("%s %s = %q, want %q", c.row[col["number"]], c.name, got, c.want)
		}
	}
	// Without a group the file keeps its general name.
	resp, _ = e.do("GET", "/v1/reports/deliveries?format=csv", "", "read", nil)
	if got := resp.Header.Get("Content-Disposition"); got != `attachment; filename="deliveries.csv"` {
		t.Errorf("all-groups Content-Disposition %q", got)
	}
}

func TestCSVSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Crew call 7am":                      "crew-call-7am",
		"  Hi {{first_name}}, café at 6!\nx": "hi-first-name-cafe-at-6",
		"☎☎☎":                                "group",
		strings.Repeat("long words ", 20):    "long-words-long-words-long-words-long",
	} {
		if got := csvSlug(in); got != want {
			t.Errorf("csvSlug(%q) = %q, want %q", in, got, want)
		}
	}
}
