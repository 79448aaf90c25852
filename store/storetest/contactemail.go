package storetest

import (
	"context"
	"testing"

	"github.com/crewcast/crewcast/store"
)

// testContactEmail: a contact's email (docs/design.md §17) is stored,
// replaced, searched, imported (an email-only change is an update), read
// with a crew's members, and gone with the contact when its number is
// erased.
func testContactEmail(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	ada := store.Contact{ID: "c1", Number: "+15550100001", Name: "Ada", Email: "ada@example.org"}
	if err := s.CreateContact(ctx, ada); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetContact(ctx, "c1"); err != nil || got.Email != "ada@example.org" {
		t.Fatalf("GetContact = %+v, %v", got, err)
	}
	ada.Email = "ada@lovelace.example"
	if err := s.UpdateContact(ctx, ada); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetContact(ctx, "c1"); got.Email != "ada@lovelace.example" {
		t.Fatalf("updated email = %q", got.Email)
	}
	if err := s.CreateContact(ctx, store.Contact{ID: "c2", Number: "+15550100002", Name: "Bo"}); err != nil {
		t.Fatal(err)
	}
	if cs, _, err := s.ListContacts(ctx, store.ContactQuery{Q: "LOVELACE.ex"}); err != nil || len(cs) != 1 || cs[0].ID != "c1" {
		t.Fatalf("search by email = %+v, %v", cs, err)
	}
	counts, err := s.ImportContacts(ctx, []store.Contact{
		{ID: "n1", Number: "+15550100001", Name: "Ada", Email: "ada@lovelace.example"}, // unchanged
		{ID: "n2", Number: "+15550100002", Name: "Bo", Email: "bo@example.org"},        // email only: update
		{ID: "n3", Number: "+15550100003", Name: "Cy", Email: "cy@example.org"},        // create
	}, false)
	if err != nil || counts != (store.ImportCounts{Created: 1, Updated: 1, Unchanged: 1}) {
		t.Fatalf("import = %+v, %v", counts, err)
	}
	m, err := s.ContactsByNumbers(ctx, []string{"+15550100002", "+15550100003"})
	if err != nil || m["+15550100002"].Email != "bo@example.org" || m["+15550100003"].Email != "cy@example.org" {
		t.Fatalf("imported emails = %+v, %v", m, err)
	}
	if err := s.CreateCrew(ctx, store.Crew{ID: "k1", Name: "K", Members: []string{"c1", "c2"}}); err != nil {
		t.Fatal(err)
	}
	cs, err := s.CrewContacts(ctx, "k1")
	if err != nil || len(cs) != 2 || cs[0].Email != "ada@lovelace.example" || cs[1].Email != "bo@example.org" {
		t.Fatalf("crew contacts = %+v, %v", cs, err)
	}
	if _, err := s.EraseNumber(ctx, "+15550100001", "erased:1", ""); err != nil {
		t.Fatal(err)
	}
	left, _, err := s.ListContacts(ctx, store.ContactQuery{Q: "lovelace"})
	if err != nil || len(left) != 0 {
		t.Fatalf("email still stored after erasure: %+v, %v", left, err)
	}
}
