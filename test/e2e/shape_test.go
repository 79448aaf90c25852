package e2e

import (
	"testing"

	"github.com/crewcast/crewcast/internal/apidoc"
)

// The tests' own copies of the API's shapes read only what
// docs/openapi.yaml documents, with matching JSON types.
func TestShapesMatchTheDocument(t *testing.T) {
	t.Parallel() // its own processes, files and ports; the kill and database-cut tests stay serial
	apidoc.CheckCopies(t, apidoc.Copy{Schema: "Group", V: groupView{}}, apidoc.Copy{Schema: "Recipient", V: recipientView{}}, apidoc.Copy{Schema: "Group", V: calloutView{}})
}
