package server_test

import (
	"testing"

	"github.com/crewcast/crewcast/internal/apidoc"
)

// The tests' own copy of the API's recipient reads only what
// docs/openapi.yaml documents, with matching JSON types.
func TestShapesMatchTheDocument(t *testing.T) {
	t.Parallel() // its own server and database
	apidoc.CheckCopies(t, apidoc.Copy{Schema: "Recipient", V: apiRecipient{}})
}
