package main

import (
	"reflect"
	"testing"
)

func TestParseSendRates(t *testing.T) {
	got, err := parseSendRates(" +1 800 555 0100=20, 5550100000=0.5,+15550100009=0 ")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"+18005550100": 20, "+15550100000": 0.5, "+15550100009": 0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if m, err := parseSendRates(""); err != nil || m != nil {
		t.Fatalf("empty: %v %v", m, err)
	}
	for _, bad := range []string{"+15550100000", "+15550100000=fast", "+15550100000=-1", "nonsense=3"} {
		if _, err := parseSendRates(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
