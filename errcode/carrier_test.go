package errcode_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/errcode"
)

// TestCarrierTruthClasses: the carrier's own verdicts are classes of their
// own (docs/operations.md, "Carrier truth"), not a plain failure.
func TestCarrierTruthClasses(t *testing.T) {
	cases := []struct {
		code  string
		base  crewcast.ErrorClass
		class string
		words string // the plain-language detail says this
	}{
		{"30007", crewcast.ClassCarrier, errcode.ClassFiltered, "spam"},
		{"40002", crewcast.ClassNotSent, errcode.ClassFiltered, "spam"},
		{"40003", crewcast.ClassSender, errcode.ClassFiltered, "spam"},
		{"40015", crewcast.ClassCarrier, errcode.ClassFiltered, "spam"},
		{"30034", crewcast.ClassCarrier, errcode.ClassUnregistered, "not registered"},
		{"40010", crewcast.ClassSender, errcode.ClassUnregistered, "not registered"},
		{"30003", crewcast.ClassCarrier, errcode.ClassUnreachable, "unreachable"},
		{"30005", crewcast.ClassCarrier, errcode.ClassUnreachable, "no longer in service"},
		{"40006", crewcast.ClassCarrier, errcode.ClassUnreachable, "unavailable"},
		{"30006", crewcast.ClassRecipient, errcode.ClassLandline, "landline"},
		{"40001", crewcast.ClassRecipient, errcode.ClassLandline, "landline"},
		{"21635", crewcast.ClassRecipient, errcode.ClassLandline, "landline"},
		{"21614", crewcast.ClassRecipient, errcode.ClassLandline, "cannot receive texts"},
	}
	for _, tc := range cases {
		if got := errcode.Class(tc.code, tc.base); got != tc.class {
			t.Errorf("Class(%s, %s) = %q, want %q", tc.code, tc.base, got, tc.class)
		}
		e, ok := errcode.Lookup(tc.code)
		if !ok || e.Class != tc.class {
			t.Errorf("Lookup(%s) = %+v, %v; want class %q", tc.code, e, ok, tc.class)
		}
		if d := errcode.Detail(tc.code, tc.base); !strings.Contains(d, tc.words) {
			t.Errorf("Detail(%s) = %q, want it to say %q", tc.code, d, tc.words)
		}
		if u := errcode.URL(tc.code); !strings.HasPrefix(u, "https://") {
			t.Errorf("URL(%s) = %q", tc.code, u)
		}
		if !slices.Contains(errcode.Codes(tc.class), tc.code) {
			t.Errorf("Codes(%s) = %v, want it to hold %s", tc.class, errcode.Codes(tc.class), tc.code)
		}
	}
	// Codes without a carrier verdict keep their class; so does no code.
	for code, base := range map[string]crewcast.ErrorClass{"30008": crewcast.ClassCarrier, "21211": crewcast.ClassRecipient,
		"": crewcast.ClassUncertain, "99999": crewcast.ClassCarrier, "40005": crewcast.ClassUncertain} {
		if got := errcode.Class(code, base); got != string(base) {
			t.Errorf("Class(%q, %s) = %q, want the class unchanged", code, base, got)
		}
	}
	if got := errcode.Class("", crewcast.ClassNone); got != "" {
		t.Errorf("Class of no error = %q", got)
	}
	for _, c := range errcode.Classes() {
		if !errcode.IsClass(c) {
			t.Errorf("IsClass(%q) = false", c)
		}
	}
	for _, c := range []string{"filtered", "unregistered", "unreachable", "landline", "not_sent", "recipient", "sender", "carrier", "uncertain"} {
		if !slices.Contains(errcode.Classes(), c) {
			t.Errorf("Classes() = %v lacks %q", errcode.Classes(), c)
		}
	}
	if errcode.IsClass("failed") || errcode.IsClass("") {
		t.Error("IsClass accepts a word that is no class")
	}
	if errcode.Codes("carrier") != nil {
		t.Errorf("Codes(carrier) = %v, want nil (a base class has no code list)", errcode.Codes("carrier"))
	}
}
