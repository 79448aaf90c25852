package storetest

import (
	"context"
	"testing"

	"github.com/crewcast/crewcast/store"
)

// testTemplateFollowup: a template keeps its follow-up (a ladder, as the
// API took it) through create, update and list; nil stays nil.
func testTemplateFollowup(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	ladder := `{"steps":[{"after":"5m","channel":"sms"},{"after":"10m","channel":"email"}]}`
	if err := s.CreateTemplate(ctx, store.Template{ID: "t1", Name: "Ladder", Text: "x", Followup: []byte(ladder)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTemplate(ctx, store.Template{ID: "t2", Name: "Plain", Text: "y"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTemplate(ctx, "t1")
	if err != nil || string(got.Followup) != ladder {
		t.Fatalf("GetTemplate = %q, %v", got.Followup, err)
	}
	if plain, err := s.TemplateByName(ctx, "Plain"); err != nil || plain.Followup != nil {
		t.Fatalf("no follow-up = %q, %v", plain.Followup, err)
	}
	got.Followup = []byte(`{"after":"10m","max":2}`)
	if err := s.UpdateTemplate(ctx, got); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListTemplates(ctx)
	if err != nil || len(list) != 2 || string(list[0].Followup) != `{"after":"10m","max":2}` || list[1].Followup != nil {
		t.Fatalf("ListTemplates = %+v, %v", list, err)
	}
	got.Followup = nil
	if err := s.UpdateTemplate(ctx, got); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.GetTemplate(ctx, "t1"); g.Followup != nil {
		t.Fatalf("cleared follow-up = %q", g.Followup)
	}
}
