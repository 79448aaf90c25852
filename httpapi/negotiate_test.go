package httpapi

import (
	"net/http/httptest"
	"testing"
)

func TestWantCSVNegotiatesByQAndOrder(t *testing.T) {
	for _, c := range []struct {
		accept, query string
		csv           bool
	}{
		{"", "", false},
		{"*/*", "", false},
		{"application/json", "", false},
		{"text/csv", "", true},
		{"application/json, text/csv", "", false},
		{"text/csv;q=0.1, application/json", "", false},
		{"text/csv, application/json", "", true},
		{"application/json;q=0.5, text/csv", "", true},
		{"text/csv;q=0, */*", "", false},
		{"text/*, application/json;q=0.9", "", true},
		{"application/json, text/csv", "format=csv", true},
		{"text/csv", "format=json", false},
		{"not a media type, text/csv", "", true},
	} {
		r := httptest.NewRequest("GET", "/v1/reports/deliveries?"+c.query, nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		got, err := wantCSV(r)
		if err != nil {
			t.Fatalf("Accept %q ?%s: %v", c.accept, c.query, err)
		}
		if got != c.csv {
			t.Errorf("Accept %q ?%s: csv = %v, want %v", c.accept, c.query, got, c.csv)
		}
	}
}
