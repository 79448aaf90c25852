package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/tracker"
)

// A request that ended on the client's side is answered 503 if anyone is
// still listening, but is not logged as an internal failure; a deadline
// inside crewcast is one.
func TestRequestCancellationIsNotAnInternalFailure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		internal bool
	}{
		{"client deadline", fmt.Errorf("%w: store webhook: %w", tracker.ErrCanceled, context.DeadlineExceeded), false},
		{"client cancel", fmt.Errorf("%w: store webhook: %w", tracker.ErrCanceled, context.Canceled), false},
		{"internal deadline", fmt.Errorf("%w: store webhook: %w", tracker.ErrUnavailable, context.DeadlineExceeded), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, internal := publicError(tc.err)
			if e.Status != 503 || internal != tc.internal {
				t.Fatalf("publicError: %d internal=%v, want 503 internal=%v", e.Status, internal, tc.internal)
			}
			var logs bytes.Buffer
			a := &api{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			rec := httptest.NewRecorder()
			a.writeError(rec, httptest.NewRequest("POST", "/webhooks/telnyx", nil), "POST /webhooks/telnyx", tc.err)
			if rec.Code != 503 {
				t.Fatalf("status %d", rec.Code)
			}
			if got := strings.Contains(logs.String(), "level=ERROR"); got != tc.internal {
				t.Fatalf("logged at ERROR: %v, want %v: %s", got, tc.internal, logs.String())
			}
		})
	}
}
