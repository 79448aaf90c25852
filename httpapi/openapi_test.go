package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
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
