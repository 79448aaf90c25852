package group

import "testing"

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"  ":                 "",
		"ada@example.org":    "ada@example.org",
		" Ada@Example.ORG ":  "Ada@example.org",
		"a.b+c@mail.example": "a.b+c@mail.example",
	} {
		if got, err := NormalizeEmail(in); err != nil || got != want {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"ada", "ada@", "@example.org", "Ada <ada@example.org>", "ada@localhost",
		"a@b.c, d@e.f", "ada@exa mple.org", "ada@example.org\r\nBcc: x@y.z"} {
		if got, err := NormalizeEmail(in); err == nil {
			t.Errorf("NormalizeEmail(%q) = %q, want an error", in, got)
		}
	}
}
