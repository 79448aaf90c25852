package apidoc

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/apitype"
)

// The wire types the server, the webhooks and the command line share are
// what the document describes: every field documented, every required
// property present.
func TestAPITypesMatchTheDocument(t *testing.T) {
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		schema string
		v      any
	}{
		{"Group", apitype.Group{}}, {"Recipient", apitype.Recipient{}}, {"Delivery", apitype.Delivery{}},
		{"Reply", apitype.Reply{}}, {"FollowupStep", apitype.FollowupStep{}},
	} {
		if p := Check(doc, c.schema, c.v); len(p) > 0 {
			t.Errorf("apitype against %s:\n%s", c.schema, strings.Join(p, "\n"))
		}
		if m := Required(doc, c.schema, c.v); len(m) > 0 {
			t.Errorf("apitype against %s: required but absent: %v", c.schema, m)
		}
	}
}

// The check finds an undocumented field, a field of the wrong JSON type
// (also nested), and a required property a producer leaves out.
func TestCheckFindsDrift(t *testing.T) {
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	type recipient struct {
		Number   string `json:"number"`
		Attempts string `json:"attempts"` // an integer in the document
		Nickname string `json:"nickname"` // not documented
	}
	type group struct {
		ID         string      `json:"id"`
		CreatedAt  *time.Time  `json:"created_at"`
		Recipients []recipient `json:"recipients"`
		Seq        bool        `json:"seq"`
	}
	got := Check(doc, "Group", group{})
	want := []string{
		"Group.recipients[].attempts: Go string cannot hold [integer]",
		"Group.recipients[].nickname is not a documented property",
		"Group.seq: Go bool cannot hold [integer]",
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Check found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if m := Required(doc, "Recipient", recipient{}); !slices.Contains(m, "status") || slices.Contains(m, "number") {
		t.Errorf("Required: %v", m)
	}
	if p := Check(doc, "NoSuchSchema", group{}); len(p) != 1 {
		t.Errorf("an unknown schema: %v", p)
	}
}
