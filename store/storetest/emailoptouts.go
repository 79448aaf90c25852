package storetest

import (
	"context"
	"testing"
)

// testEmailOptOuts: an opted-out address hash stays opted out (twice is
// once); another is not.
func testEmailOptOuts(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	if out, err := s.EmailOptedOut(ctx, "h1"); err != nil || out {
		t.Fatalf("before = %v, %v", out, err)
	}
	for range 2 {
		if err := s.OptOutEmail(ctx, "h1"); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.EmailOptedOut(ctx, "h1"); err != nil || !out {
		t.Fatalf("after = %v, %v", out, err)
	}
	if out, err := s.EmailOptedOut(ctx, "h2"); err != nil || out {
		t.Fatalf("another = %v, %v", out, err)
	}
}
