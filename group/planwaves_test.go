package group

import (
	"slices"
	"testing"
	"time"
)

func calloutCreated(t *testing.T, q *Quorum) Created {
	t.Helper()
	c, errs := Plan("g1", Request{From: sender, To: numbers(3), Text: "Callout", Responses: calloutOptions, Quorum: q}, Settings{}, nil, t0)
	if errs != nil {
		t.Fatal(errs)
	}
	return c
}

func ptr(s string) *string { return &s }

func fields(errs []FieldError) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	slices.Sort(out)
	return out
}

func TestPlanCalloutFreezesWavesAndMakesQuorumExact(t *testing.T) {
	c := calloutCreated(t, &Quorum{Response: "1", Count: 2})
	in := CalloutInput{Waves: &WavesInput{Size: 4, Every: "5m"}, ConfirmedText: ptr("You're on")}
	if errs := PlanCallout(&c, in, false); errs != nil {
		t.Fatal(errs)
	}
	if c.Policy == nil || *c.Policy.Waves != (Waves{Size: 4, Every: 5 * time.Minute}) || c.Policy.ConfirmedText != "You're on" {
		t.Fatalf("policy %+v", c.Policy)
	}
	if !c.Quorum.Exact {
		t.Fatal("waves did not make the quorum exact by default")
	}
	c = calloutCreated(t, &Quorum{Response: "1", Count: 2})
	if errs := PlanCallout(&c, in, true); errs != nil || c.Quorum.Exact {
		t.Fatalf("exact:false given was overridden: %v %+v", errs, c.Quorum)
	}
}

func TestPlanCalloutErrorsNameFields(t *testing.T) {
	c := calloutCreated(t, nil)
	errs := PlanCallout(&c, CalloutInput{Waves: &WavesInput{Size: 0, Every: "soon"}, FilledText: ptr("Full")}, false)
	want := []string{"filled_text", "waves", "waves.every", "waves.size"}
	if got := fields(errs); !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	if c.Policy != nil {
		t.Fatal("a refused callout changed the group")
	}
	c = calloutCreated(t, &Quorum{Response: "1", Count: 1})
	if got := fields(PlanCallout(&c, CalloutInput{ConfirmedText: ptr("  ")}, false)); !slices.Equal(got, []string{"confirmed_text"}) {
		t.Fatalf("empty confirmed_text: %v", got)
	}
}
