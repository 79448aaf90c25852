// Package apidoc checks a Go type's JSON shape against a schema of
// docs/openapi.yaml. The black-box tests (test/e2e, test/chaos, the server's
// tests, the board's fake API) keep their own small copies of the API's
// shapes on purpose, so that they test the wire rather than the server's
// types (package apitype); this package keeps those copies honest: every
// field a copy reads or writes must be a documented property of the named
// schema, of a matching JSON type.
package apidoc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// Load reads docs/openapi.yaml from the repository holding the working
// directory (found by walking up to go.mod).
func Load() (*openapi3.T, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "docs", "openapi.yaml")); err == nil {
				return openapi3.NewLoader().LoadFromFile(filepath.Join(dir, "docs", "openapi.yaml"))
			}
		}
		up := filepath.Dir(dir)
		if up == dir {
			return nil, errors.New("docs/openapi.yaml not found above the working directory")
		}
		dir = up
	}
}

// Check returns what in v's JSON shape (a struct, or a pointer to one)
// schema (a name under components/schemas) does not describe: a field that
// is not a property, or whose Go type cannot hold the property's JSON type.
// Nested structs are checked against the property's schema; a map against
// an object. Fields the copy leaves out are fine (a reader may read less).
func Check(doc *openapi3.T, schema string, v any) []string {
	ref := doc.Components.Schemas[schema]
	if ref == nil || ref.Value == nil {
		return []string{fmt.Sprintf("no schema %q in components/schemas", schema)}
	}
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	check(ref.Value, t, schema, &out)
	return out
}

// Copy is a black-box test's own copy of an API shape and the schema it
// copies.
type Copy struct {
	Schema string
	V      any
}

// CheckCopies loads the document and reports, through t, every field of
// the copies that Check finds undocumented or mistyped.
func CheckCopies(t testing.TB, copies ...Copy) {
	t.Helper()
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range copies {
		if p := Check(doc, c.Schema, c.V); len(p) > 0 {
			t.Errorf("%T against %s:\n%s", c.V, c.Schema, strings.Join(p, "\n"))
		}
	}
}

// Required returns the required properties of schema that v's JSON shape
// does not have: what a copy that produces answers (a fake server) leaves
// out.
func Required(doc *openapi3.T, schema string, v any) []string {
	ref := doc.Components.Schemas[schema]
	if ref == nil || ref.Value == nil {
		return []string{fmt.Sprintf("no schema %q in components/schemas", schema)}
	}
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	have := map[string]bool{}
	for name := range fields(t) {
		have[name] = true
	}
	_, required := flatten(ref.Value)
	var out []string
	for _, r := range required {
		if !have[r] {
			out = append(out, r)
		}
	}
	return out
}

var timeType = reflect.TypeFor[time.Time]()

func check(s *openapi3.Schema, t reflect.Type, at string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s = deref(s)
	if s == nil || t == timeType || t.Kind() == reflect.Interface {
		return
	}
	if _, ok := reflect.New(t).Interface().(json.Unmarshaler); ok {
		if !fits(s, reflect.TypeFor[any]()) && !s.Type.Is(openapi3.TypeObject) && !s.Type.Is(openapi3.TypeString) {
			*out = append(*out, fmt.Sprintf("%s: Go %s (its own JSON) against %v", at, t, typesOf(s)))
		}
		return // its own encoding: the type's tests check it
	}
	if !fits(s, t) {
		*out = append(*out, fmt.Sprintf("%s: Go %s cannot hold %v", at, t, typesOf(s)))
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		props, _ := flatten(s)
		for name, ft := range fields(t) {
			p, ok := props[name]
			if !ok {
				*out = append(*out, fmt.Sprintf("%s.%s is not a documented property", at, name))
				continue
			}
			check(p, ft, at+"."+name, out)
		}
	case reflect.Slice, reflect.Array:
		if s.Items != nil && t.Elem().Kind() != reflect.Uint8 {
			check(s.Items.Value, t.Elem(), at+"[]", out)
		}
	}
}

// fits reports whether a Go type of kind t can hold what schema s allows.
func fits(s *openapi3.Schema, t reflect.Type) bool {
	if s.Type == nil || len(*s.Type) == 0 {
		return true // any, or a composition this check does not reduce
	}
	switch t.Kind() {
	case reflect.String:
		return s.Type.Is(openapi3.TypeString)
	case reflect.Bool:
		return s.Type.Is(openapi3.TypeBoolean)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return s.Type.Is(openapi3.TypeInteger)
	case reflect.Float32, reflect.Float64:
		return s.Type.Is(openapi3.TypeNumber) || s.Type.Is(openapi3.TypeInteger)
	case reflect.Slice, reflect.Array:
		return s.Type.Is(openapi3.TypeArray) || (t.Elem().Kind() == reflect.Uint8 && s.Type.Is(openapi3.TypeString))
	case reflect.Struct, reflect.Map:
		return s.Type.Is(openapi3.TypeObject)
	}
	return true
}

func typesOf(s *openapi3.Schema) []string {
	if s.Type == nil {
		return nil
	}
	return *s.Type
}

// deref follows a schema that is only an allOf of one part (the way the
// document marks a nullable $ref).
func deref(s *openapi3.Schema) *openapi3.Schema {
	for s != nil && len(s.AllOf) == 1 && len(s.Properties) == 0 && s.AllOf[0].Value != nil {
		s = s.AllOf[0].Value
	}
	return s
}

// flatten returns an object schema's properties and required names,
// those of its allOf parts included.
func flatten(s *openapi3.Schema) (map[string]*openapi3.Schema, []string) {
	props := map[string]*openapi3.Schema{}
	var required []string
	for _, part := range s.AllOf {
		if part.Value != nil {
			p, r := flatten(part.Value)
			for k, v := range p {
				props[k] = v
			}
			required = append(required, r...)
		}
	}
	for k, v := range s.Properties {
		if v.Value != nil {
			props[k] = v.Value
		}
	}
	return props, append(required, s.Required...)
}

// fields returns the JSON names of a struct's fields (embedded structs'
// fields promoted, "-" and unexported fields skipped) with their types.
func fields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range fields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
