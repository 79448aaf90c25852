package web_test

import (
	"testing"

	"github.com/crewcast/crewcast/internal/apidoc"
)

// The fake API's groups, recipients and counts answer only fields
// docs/openapi.yaml documents, with matching JSON types.
func TestFakeShapesMatchTheDocument(t *testing.T) {
	apidoc.CheckCopies(t, apidoc.Copy{Schema: "Group", V: fakeGroup{}}, apidoc.Copy{Schema: "Recipient", V: fakeRecipient{}}, apidoc.Copy{Schema: "Counts", V: fakeCounts{}})
}
