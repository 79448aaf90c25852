package web_test

import (
	"strings"
	"testing"

	"github.com/crewcast/crewcast/internal/apidoc"
)

// The fake API's groups, recipients and counts answer only fields
// docs/openapi.yaml documents, with matching JSON types.
func TestFakeShapesMatchTheDocument(t *testing.T) {
	doc, err := apidoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		schema string
		v      any
	}{{"Group", fakeGroup{}}, {"Recipient", fakeRecipient{}}, {"Counts", fakeCounts{}}} {
		if p := apidoc.Check(doc, c.schema, c.v); len(p) > 0 {
			t.Errorf("%T against %s:\n%s", c.v, c.schema, strings.Join(p, "\n"))
		}
	}
}
