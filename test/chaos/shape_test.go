package main

import (
	"testing"

	"github.com/crewcast/crewcast/internal/apidoc"
)

// The harness's own copies of the API's shapes read only what
// docs/openapi.yaml documents, with matching JSON types.
func TestShapesMatchTheDocument(t *testing.T) {
	apidoc.CheckCopies(t, apidoc.Copy{Schema: "Group", V: groupView{}}, apidoc.Copy{Schema: "Recipient", V: recipientView{}}, apidoc.Copy{Schema: "Group", V: t18View{}})
}
