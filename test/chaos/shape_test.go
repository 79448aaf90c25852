package main

import (
	"strings"
	"testing"

	"github.com/crewcast/crewcast/internal/apidoc"
)

// The harness's own copies of the API's shapes read only what
// docs/openapi.yaml documents, with matching JSON types.
func TestShapesMatchTheDocument(t *testing.T) {
	doc, err := apidoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		schema string
		v      any
	}{{"Group", groupView{}}, {"Recipient", recipientView{}}, {"Group", t18View{}}} {
		if p := apidoc.Check(doc, c.schema, c.v); len(p) > 0 {
			t.Errorf("%T against %s:\n%s", c.v, c.schema, strings.Join(p, "\n"))
		}
	}
}
