package group

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Template is a parsed message text with per-recipient variables
// (docs/design.md §11): {{name}}, {{first_name}} and {{fields.<key>}}, each
// optionally followed by | default "…". Rendering is one pass over the
// parsed parts, so a value that itself contains "{{" is copied as text and
// never expanded: one recipient's data cannot reach another's message, nor
// pull in variables of its own.
type Template struct {
	parts []tmplPart
}

type tmplPart struct {
	lit    string // literal text, when variable is ""
	name   string // "name", "first_name" or "fields"
	field  string // the key of a fields.<key> variable
	def    string
	hasDef bool
}

// TemplateVars is what one recipient brings to a template.
type TemplateVars struct {
	Name   string
	Fields map[string]string
}

// TemplateError says what is wrong with a template; Var names the variable
// when one is at fault.
type TemplateError struct {
	Var     string
	Message string
}

func (e *TemplateError) Error() string {
	if e.Var != "" {
		return fmt.Sprintf("{{%s}}: %s", e.Var, e.Message)
	}
	return e.Message
}

// HasVariables reports whether text uses template syntax at all.
func HasVariables(text string) bool { return strings.Contains(text, "{{") }

// ValidFieldKey reports whether k can name a contact field: 1 to 64
// letters, digits, '_' or '-'.
func ValidFieldKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// ParseTemplate parses text. An unknown variable, an unclosed {{ or a
// malformed filter is a *TemplateError naming it.
func ParseTemplate(text string) (*Template, error) {
	t := &Template{}
	rest := text
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, tmplPart{lit: rest})
			}
			return t, nil
		}
		if i > 0 {
			t.parts = append(t.parts, tmplPart{lit: rest[:i]})
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			return nil, &TemplateError{Message: "a {{ is never closed with }}"}
		}
		p, err := parseVar(rest[i+2 : i+2+j])
		if err != nil {
			return nil, err
		}
		t.parts = append(t.parts, p)
		rest = rest[i+2+j+2:]
	}
}

func parseVar(inner string) (tmplPart, error) {
	expr, filter, hasFilter := strings.Cut(inner, "|")
	expr = strings.TrimSpace(expr)
	var p tmplPart
	switch {
	case expr == "name" || expr == "first_name":
		p.name = expr
	case strings.HasPrefix(expr, "fields."):
		p.name, p.field = "fields", strings.TrimPrefix(expr, "fields.")
		if !ValidFieldKey(p.field) {
			return p, &TemplateError{Var: expr, Message: "a field name is 1 to 64 letters, digits, _ or -"}
		}
	case expr == "":
		return p, &TemplateError{Var: strings.TrimSpace(inner), Message: "empty variable"}
	default:
		return p, &TemplateError{Var: expr, Message: "unknown variable; use name, first_name or fields.<key>"}
	}
	if hasFilter {
		f := strings.TrimSpace(filter)
		arg, ok := strings.CutPrefix(f, "default")
		if !ok {
			return p, &TemplateError{Var: expr, Message: fmt.Sprintf("unknown filter %q; only default \"…\" is known", f)}
		}
		s, err := strconv.Unquote(strings.TrimSpace(arg))
		if err != nil || !strings.HasPrefix(strings.TrimSpace(arg), `"`) {
			return p, &TemplateError{Var: expr, Message: `default needs a quoted value, such as default "there"`}
		}
		p.def, p.hasDef = s, true
	}
	return p, nil
}

// Fields returns the field keys the template uses without a default: a
// recipient lacking one of them cannot be rendered.
func (t *Template) Fields() []string {
	var out []string
	for _, p := range t.parts {
		if p.name == "fields" && !p.hasDef {
			out = append(out, p.field)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Render returns the text for one recipient. A fields variable without a
// default that the recipient lacks is a *TemplateError naming it; name
// and first_name render empty when unknown (or their default).
func (t *Template) Render(v TemplateVars) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		var val string
		switch p.name {
		case "":
			b.WriteString(p.lit)
			continue
		case "name":
			val = strings.TrimSpace(v.Name)
		case "first_name":
			if f := strings.Fields(v.Name); len(f) > 0 {
				val = f[0]
			}
		case "fields":
			val = strings.TrimSpace(v.Fields[p.field])
			if val == "" && !p.hasDef {
				return "", &TemplateError{Var: "fields." + p.field, Message: "missing for this recipient; add | default \"…\""}
			}
		}
		if val == "" {
			val = p.def
		}
		b.WriteString(val)
	}
	return b.String(), nil
}
