package server_test

import (
	"strings"
	"testing"

	"github.com/crewcast/crewcast/internal/apidoc"
)

// The tests' own copy of the API's recipient reads only what
// docs/openapi.yaml documents, with matching JSON types.
func TestShapesMatchTheDocument(t *testing.T) {
	t.Parallel() // its own server and database
	doc, err := apidoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	if p := apidoc.Check(doc, "Recipient", apiRecipient{}); len(p) > 0 {
		t.Errorf("apiRecipient against Recipient:\n%s", strings.Join(p, "\n"))
	}
}
