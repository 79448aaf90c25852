package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// testContacts: CRUD, uniqueness by number, search over name and number,
// tag and crew filters, cursor paging.
func testContacts(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	ada := store.Contact{ID: "c1", Number: "+15550100001", Name: "Ada Lovelace", Tags: []string{"night", " ops ", "night"},
		Timezone: "Europe/London", Fields: map[string]string{"site": "North"}}
	if err := s.CreateContact(ctx, ada); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetContact(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Number != ada.Number || got.Name != ada.Name || !slices.Equal(got.Tags, []string{"night", "ops"}) ||
		got.Timezone != "Europe/London" || got.Fields["site"] != "North" || !got.CreatedAt.Equal(t0) {
		t.Fatalf("GetContact = %+v", got)
	}
	dup := ada
	dup.ID = "c2"
	if err := s.CreateContact(ctx, dup); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("same number again: %v, want ErrConflict", err)
	}
	if _, err := s.GetContact(ctx, "nope"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("missing contact: %v", err)
	}
	for i, c := range []store.Contact{
		{ID: "c2", Number: "+15550100002", Name: "Grace Hopper", Tags: []string{"day"}},
		{ID: "c3", Number: "+15550100003", Name: "ada_2 100%", Tags: []string{"night"}},
		{ID: "c4", Number: "+4915550100004", Name: "Bob"},
	} {
		if err := s.CreateContact(ctx, c); err != nil {
			t.Fatalf("contact %d: %v", i, err)
		}
	}
	ids := func(q store.ContactQuery) []string {
		t.Helper()
		cs, _, err := s.ListContacts(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for _, tc := range []struct {
		q    store.ContactQuery
		want []string
	}{
		{store.ContactQuery{}, []string{"c1", "c4", "c2", "c3"}}, // byte order of names: "Ada", "Bob", "Grace", "ada_2"
		{store.ContactQuery{Q: "ADA"}, []string{"c1", "c3"}},
		{store.ContactQuery{Q: "100%"}, []string{"c3"}},    // % is literal
		{store.ContactQuery{Q: "a_2"}, []string{"c3"}},     // _ is literal
		{store.ContactQuery{Q: "0100002"}, []string{"c2"}}, // number substring
		{store.ContactQuery{Q: "+49"}, []string{"c4"}},
		{store.ContactQuery{Tag: "night"}, []string{"c1", "c3"}},
		{store.ContactQuery{Tag: "night", Q: "lovelace"}, []string{"c1"}},
	} {
		if got := ids(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("ListContacts(%+v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	// Paging with a cursor visits every contact once.
	var all []string
	q := store.ContactQuery{Limit: 3}
	for {
		cs, next, err := s.ListContacts(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			all = append(all, c.ID)
		}
		if next == "" {
			break
		}
		q.Cursor = next
	}
	if !slices.Equal(all, []string{"c1", "c4", "c2", "c3"}) {
		t.Fatalf("paged = %v", all)
	}
	if _, _, err := s.ListContacts(ctx, store.ContactQuery{Cursor: "garbage!"}); !errors.Is(err, store.ErrInvalidCursor) {
		t.Fatalf("bad cursor: %v", err)
	}
	// Update replaces everything, tags index included; number clash is a conflict.
	upd := got
	upd.Name, upd.Tags, upd.Fields = "Ada King", []string{"day"}, map[string]string{"site": "South"}
	if err := s.UpdateContact(ctx, upd); err != nil {
		t.Fatal(err)
	}
	if g := ids(store.ContactQuery{Tag: "day"}); !slices.Equal(g, []string{"c1", "c2"}) {
		t.Fatalf("tag day after update = %v", g)
	}
	if g := ids(store.ContactQuery{Tag: "night"}); !slices.Equal(g, []string{"c3"}) {
		t.Fatalf("tag night after update = %v", g)
	}
	upd.Number = "+15550100002"
	if err := s.UpdateContact(ctx, upd); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("update to a taken number: %v", err)
	}
	if err := s.UpdateContact(ctx, store.Contact{ID: "nope", Number: "+15550100009"}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
	byNum, err := s.ContactsByNumbers(ctx, []string{"+15550100002", "+15550100999"})
	if err != nil || len(byNum) != 1 || byNum["+15550100002"].ID != "c2" {
		t.Fatalf("ContactsByNumbers = %v, %v", byNum, err)
	}
	byID, err := s.ContactsByIDs(ctx, []string{"c3", "zz"})
	if err != nil || len(byID) != 1 || byID["c3"].Name != "ada_2 100%" {
		t.Fatalf("ContactsByIDs = %v, %v", byID, err)
	}
	tagged, err := s.ContactsByTag(ctx, "day")
	if err != nil || len(tagged) != 2 {
		t.Fatalf("ContactsByTag = %v, %v", tagged, err)
	}
	// Crews: members in order, crew filter, a deleted contact leaves its crews.
	if err := s.CreateCrew(ctx, store.Crew{ID: "k1", Name: "Night shift", Members: []string{"c3", "c1", "c3"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateCrew(ctx, store.Crew{ID: "k2", Name: "Night shift"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate crew name: %v", err)
	}
	if err := s.CreateCrew(ctx, store.Crew{ID: "k3", Name: "Ghosts", Members: []string{"c404"}}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("crew with an unknown member: %v", err)
	}
	if _, err := s.GetCrew(ctx, "k3"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("failed crew was stored: %v", err)
	}
	k, err := s.CrewByName(ctx, "Night shift")
	if err != nil || k.ID != "k1" || !slices.Equal(k.Members, []string{"c3", "c1"}) {
		t.Fatalf("CrewByName = %+v, %v", k, err)
	}
	if g := ids(store.ContactQuery{Crew: "k1"}); !slices.Equal(g, []string{"c1", "c3"}) {
		t.Fatalf("crew filter = %v", g)
	}
	if f, err := s.FindCrew(ctx, "Night shift"); err != nil || f.ID != "k1" || f.Members != nil {
		t.Fatalf("FindCrew(name) = %+v, %v", f, err)
	}
	if f, err := s.FindCrew(ctx, "k1"); err != nil || f.Name != "Night shift" {
		t.Fatalf("FindCrew(id) = %+v, %v", f, err)
	}
	if _, err := s.FindCrew(ctx, "nope"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("FindCrew(missing) = %v", err)
	}
	if cs, err := s.CrewContacts(ctx, "k1"); err != nil || len(cs) != 2 || cs[0].ID != "c3" || cs[1].Name != "Ada King" && cs[1].Name != "Ada Lovelace" {
		t.Fatalf("CrewContacts = %+v, %v", cs, err)
	}
	k.Members = []string{"c2", "c1"}
	k.Description = "22:00-06:00"
	if err := s.UpdateCrew(ctx, k); err != nil {
		t.Fatal(err)
	}
	// The same members in another order: the order is the crew's
	// priority list (docs/design.md §15), kept as given.
	for _, order := range [][]string{{"c1", "c2"}, {"c2", "c1"}} {
		k.Members = order
		if err := s.UpdateCrew(ctx, k); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetCrew(ctx, "k1"); err != nil || !slices.Equal(got.Members, order) {
			t.Fatalf("GetCrew after reordering to %v = %+v, %v", order, got, err)
		}
		if cs, err := s.CrewContacts(ctx, "k1"); err != nil || len(cs) != 2 || cs[0].ID != order[0] || cs[1].ID != order[1] {
			t.Fatalf("CrewContacts after reordering to %v = %+v, %v", order, cs, err)
		}
	}
	if err := s.DeleteContact(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteContact(ctx, "c1"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	crews, err := s.ListCrews(ctx)
	if err != nil || len(crews) != 1 || !slices.Equal(crews[0].Members, []string{"c2"}) || crews[0].Description != "22:00-06:00" {
		t.Fatalf("ListCrews = %+v, %v", crews, err)
	}
	if err := s.DeleteCrew(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetContact(ctx, "c2"); err != nil {
		t.Fatalf("deleting a crew removed its contact: %v", err)
	}
	if crews, _ := s.ListCrews(ctx); len(crews) != 0 {
		t.Fatalf("crews after delete = %v", crews)
	}
}

// testImportContacts: upsert by number in one transaction with
// created/updated/unchanged counts; a dry run writes nothing.
func testImportContacts(t *testing.T, o Options) {
	s, c, _ := open(t, o)
	ctx := context.Background()
	if err := s.CreateContact(ctx, store.Contact{ID: "old", Number: "+15550100001", Name: "Ada", Tags: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateContact(ctx, store.Contact{ID: "same", Number: "+15550100002", Name: "Bo", Tags: []string{"b"},
		Fields: map[string]string{"x": "1"}}); err != nil {
		t.Fatal(err)
	}
	c.Advance(1000)
	rows := []store.Contact{
		{ID: "n1", Number: "+15550100001", Name: "Ada L", Tags: []string{"z"}},                                   // update
		{ID: "n2", Number: "+15550100002", Name: "Bo", Tags: []string{"b"}, Fields: map[string]string{"x": "1"}}, // unchanged
		{ID: "n3", Number: "+15550100003", Name: "Cy"},                                                           // create
		{ID: "n4", Number: "+15550100003", Name: "Cy two", Tags: []string{"t"}},                                  // same number: last wins
	}
	dry, err := s.ImportContacts(ctx, rows, true)
	if err != nil {
		t.Fatal(err)
	}
	if dry != (store.ImportCounts{Created: 1, Updated: 1, Unchanged: 1}) {
		t.Fatalf("dry run = %+v", dry)
	}
	if m, _ := s.ContactsByNumbers(ctx, []string{"+15550100003"}); len(m) != 0 {
		t.Fatal("dry run wrote a contact")
	}
	got, err := s.ImportContacts(ctx, rows, false)
	if err != nil || got != dry {
		t.Fatalf("import = %+v, %v; want %+v", got, err, dry)
	}
	m, err := s.ContactsByNumbers(ctx, []string{"+15550100001", "+15550100003"})
	if err != nil {
		t.Fatal(err)
	}
	if a := m["+15550100001"]; a.ID != "old" || a.Name != "Ada L" || !slices.Equal(a.Tags, []string{"z"}) || !a.CreatedAt.Equal(t0) {
		t.Fatalf("updated contact = %+v", a)
	}
	if cy := m["+15550100003"]; cy.Name != "Cy two" || !slices.Equal(cy.Tags, []string{"t"}) {
		t.Fatalf("created contact = %+v", cy)
	}
	if tagged, _ := s.ContactsByTag(ctx, "a"); len(tagged) != 0 {
		t.Fatalf("old tag kept after update: %v", tagged)
	}
	again, err := s.ImportContacts(ctx, rows, false)
	if err != nil || again != (store.ImportCounts{Unchanged: 3}) {
		t.Fatalf("second import = %+v, %v", again, err)
	}
	// A larger import spans several statements.
	var many []store.Contact
	for i := range 1234 {
		many = append(many, store.Contact{ID: fmt.Sprintf("m%d", i), Number: fmt.Sprintf("+1555020%04d", i),
			Name: fmt.Sprintf("P%d", i), Tags: []string{"bulk", fmt.Sprintf("t%d", i%3)}})
	}
	if n, err := s.ImportContacts(ctx, many, false); err != nil || n.Created != 1234 {
		t.Fatalf("bulk import = %+v, %v", n, err)
	}
	if tagged, err := s.ContactsByTag(ctx, "bulk"); err != nil || len(tagged) != 1234 {
		t.Fatalf("bulk tag = %d, %v", len(tagged), err)
	}
}

// testTemplates: CRUD and unique names.
func testTemplates(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	tp := store.Template{ID: "t1", Name: "Call-in", Text: "Hi {{first_name}}", Responses: []byte(`[{"key":"1","label":"Coming"}]`)}
	if err := s.CreateTemplate(ctx, tp); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTemplate(ctx, store.Template{ID: "t2", Name: "Call-in"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate name: %v", err)
	}
	got, err := s.TemplateByName(ctx, "Call-in")
	if err != nil || got.ID != "t1" || got.Text != tp.Text || string(got.Responses) != string(tp.Responses) {
		t.Fatalf("TemplateByName = %+v, %v", got, err)
	}
	got.Text = "Hello {{name}}"
	got.Responses = nil
	if err := s.UpdateTemplate(ctx, got); err != nil {
		t.Fatal(err)
	}
	g2, err := s.GetTemplate(ctx, "t1")
	if err != nil || g2.Text != "Hello {{name}}" || string(g2.Responses) != "[]" {
		t.Fatalf("after update = %+v, %v", g2, err)
	}
	if err := s.CreateTemplate(ctx, store.Template{ID: "t0", Name: "Alpha", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListTemplates(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "Alpha" {
		t.Fatalf("ListTemplates = %+v, %v", list, err)
	}
	if err := s.DeleteTemplate(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTemplate(ctx, "t1"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if err := s.UpdateTemplate(ctx, store.Template{ID: "t1", Name: "x"}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
}

// testLargeCrewContacts: a crew large enough that engines may read it in
// parts comes back whole, once each, in member order (not id order), with
// every contact's fields, before and after its membership changes.
func testLargeCrewContacts(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	const n = 4501
	cs := make([]store.Contact, n)
	for i := range cs {
		cs[i] = store.Contact{ID: fmt.Sprintf("ct_%06d", i), Number: fmt.Sprintf("+1555%07d", i), Name: fmt.Sprintf("Person %d", i),
			Timezone: "America/Chicago", CreatedAt: t0, UpdatedAt: t0}
		if i%3 == 0 {
			cs[i].Fields = map[string]string{"site": fmt.Sprintf("Site %d", i%7), "note": `say "hi" <now>`}
		}
	}
	if _, err := s.ImportContacts(ctx, cs, false); err != nil {
		t.Fatal(err)
	}
	byID := make(map[string]store.Contact, n)
	for _, c := range cs {
		byID[c.ID] = c
	}
	members := make([]string, n)
	for i := range members {
		members[i] = cs[(i*7919)%n].ID // every contact once, not in id order
	}
	check := func(members []string) {
		t.Helper()
		got, err := s.CrewContacts(ctx, "big")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(members) {
			t.Fatalf("CrewContacts: %d contacts, want %d", len(got), len(members))
		}
		for i, c := range got {
			want := byID[members[i]]
			if c.ID != want.ID || c.Number != want.Number || c.Name != want.Name || c.Timezone != want.Timezone ||
				!maps.Equal(c.Fields, want.Fields) || !c.CreatedAt.Equal(t0) {
				t.Fatalf("CrewContacts[%d] = %+v, want %+v", i, c, want)
			}
		}
	}
	if err := s.CreateCrew(ctx, store.Crew{ID: "big", Name: "Everyone", Members: members}); err != nil {
		t.Fatal(err)
	}
	check(members)
	k, err := s.GetCrew(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	k.Members = slices.Clone(members[100:])
	slices.Reverse(k.Members)
	if err := s.UpdateCrew(ctx, k); err != nil {
		t.Fatal(err)
	}
	check(k.Members)
}
