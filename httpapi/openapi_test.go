package httpapi

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestOpenAPIDocumentIsValid(t *testing.T) {
	loadDoc(t) // loads and validates; fails the test on any error
}

func TestOpenAPICopyMatchesDocs(t *testing.T) {
	canonical, err := os.ReadFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(canonical, openapiYAML) {
		t.Fatal("httpapi/openapi.yaml differs from docs/openapi.yaml; run go generate ./httpapi")
	}
}

// TestOpenAPIRoutesMatchServer compares the documented (method, path) pairs
// with the route table the server registers.
func TestOpenAPIRoutesMatchServer(t *testing.T) {
	d := loadDoc(t)
	var documented []string
	for path, item := range d.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	var served []string
	for _, rt := range routeTable {
		served = append(served, rt.Method+" "+rt.Pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	for _, s := range served {
		if !slices.Contains(documented, s) {
			t.Errorf("%s is served but not documented", s)
		}
	}
	for _, s := range documented {
		if !slices.Contains(served, s) {
			t.Errorf("%s is documented but not served", s)
		}
	}
}

// TestOpenAPISecurityMatchesAccess checks that every route the table marks
// public is documented without security, and every other with it.
func TestOpenAPISecurityMatchesAccess(t *testing.T) {
	d := loadDoc(t)
	for _, rt := range routeTable {
		op := d.Paths.Value(rt.Pattern).GetOperation(rt.Method)
		open := op.Security != nil && len(*op.Security) == 0
		if open != (rt.Access == public) {
			t.Errorf("%s %s: documented open=%v, served public=%v", rt.Method, rt.Pattern, open, rt.Access == public)
		}
	}
}

// TestRegisteredRoutesAreReachable asks the mux which pattern serves each
// table entry, so a shadowed or mistyped pattern is caught.
func TestRegisteredRoutesAreReachable(t *testing.T) {
	e := newEnv(t, nil)
	mux := e.handler.(*http.ServeMux)
	for _, rt := range routeTable {
		path := strings.NewReplacer("{id}", "x1", "{number}", "%2B15550100001").Replace(rt.Pattern)
		req := httptest.NewRequest(rt.Method, path, nil)
		if _, pattern := mux.Handler(req); pattern != rt.Method+" "+rt.Pattern {
			t.Errorf("%s %s is served by %q", rt.Method, path, pattern)
		}
	}
}

// TestResponseCheckerCatchesDrift makes sure the response validation used
// by every scenario test can fail.
func TestResponseCheckerCatchesDrift(t *testing.T) {
	d := loadDoc(t)
	e := newEnv(t, nil)
	req := httptest.NewRequest("GET", "/v1/groups", nil)
	resp := func(status int) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}}
	}
	if err := checkResponse(d, e.handler, req, resp(200), []byte(`{"groups":[],"next_cursor":""}`)); err != nil {
		t.Fatalf("a valid response was refused: %v", err)
	}
	if err := checkResponse(d, e.handler, req, resp(418), []byte(`{}`)); err == nil {
		t.Error("an undocumented status passed")
	}
	if err := checkResponse(d, e.handler, req, resp(200), []byte(`{"groups":[{"id":1}],"next_cursor":""}`)); err == nil {
		t.Error("a body that breaks the schema passed")
	}
	if err := checkResponse(d, e.handler, req, resp(200), []byte(`{"groups":[],"next_cursor":"","undocumented":1}`)); err == nil {
		t.Error("a body with an undocumented field passed")
	}
	if err := checkResponse(d, e.handler, httptest.NewRequest("GET", "/v1/none", nil), resp(404), []byte(`{"oops":1}`)); err == nil {
		t.Error("a fallback body that is not the error envelope passed")
	}
}

// addField wraps a handler so that every JSON object answer gains the
// field name at the JSON pointer-like path at (keys and array indexes,
// "" for the top level): a handler that starts answering a field the
// document does not describe.
func addField(h http.Handler, at []string, name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var v any
		if json.Unmarshal(rec.Body.Bytes(), &v) == nil {
			target := v
			for _, k := range at {
				switch c := target.(type) {
				case map[string]any:
					target = c[k]
				case []any:
					i, _ := strconv.Atoi(k)
					if i < len(c) {
						target = c[i]
					}
				}
			}
			if obj, ok := target.(map[string]any); ok {
				obj[name] = "surprise"
			}
		}
		b, _ := json.Marshal(v)
		maps.Copy(w.Header(), rec.Header())
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(b)
	})
}

// TestValidatorRefusesAHandlersUndocumentedField serves real answers
// through a handler that adds one field the document does not describe,
// at the top level and nested (a group's recipient, a list's item), and
// checks that the response validation every test uses refuses each, while
// the same answers unchanged pass.
func TestValidatorRefusesAHandlersUndocumentedField(t *testing.T) {
	d := loadDoc(t)
	e := newEnv(t, nil)
	id := e.createGroup("+15550100001", "+15550100002")
	cases := []struct {
		path string
		at   []string
	}{
		{"/v1/groups/" + id, nil},
		{"/v1/groups/" + id, []string{"recipients", "0"}},
		{"/v1/groups/" + id, []string{"counts"}},
		{"/v1/groups", []string{"groups", "0"}},
		{"/v1/groups/" + id + "/recipients", []string{"recipients", "1"}},
		{"/v1/reports/deliveries", []string{"deliveries", "0"}},
		{"/v1/version", nil},
	}
	for _, c := range cases {
		for _, h := range []http.Handler{e.handler, addField(e.handler, c.at, "undocumented_field")} {
			req := httptest.NewRequest("GET", c.path, nil)
			req.Header.Set("Authorization", "Bearer "+e.keys["admin"])
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", c.path, rec.Code, rec.Body.Bytes())
			}
			err := checkResponse(d, e.handler, req, rec.Result(), rec.Body.Bytes())
			changed := h != e.handler
			switch {
			case !changed && err != nil:
				t.Errorf("GET %s as served was refused: %v", c.path, err)
			case changed && err == nil:
				t.Errorf("GET %s with undocumented_field at %v passed the validation:\n%s", c.path, c.at, rec.Body.Bytes())
			case changed && !strings.Contains(err.Error(), "undocumented_field"):
				t.Errorf("GET %s: refused, but not for the added field: %v", c.path, err)
			}
		}
	}
}
