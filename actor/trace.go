package actor

import (
	"context"
	"math/rand/v2"
	"strconv"
)

type traceKey struct{}

// WithTraceID returns a context carrying trace id; TellCtx and Ask put it in
// the message envelope.
func WithTraceID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, traceKey{}, id)
}

// TraceID returns the trace id carried by ctx, or "".
func TraceID(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	id, _ := ctx.Value(traceKey{}).(string)
	return id
}

// NewTraceID returns a fresh random trace id (16 hex digits).
func NewTraceID() string {
	var b [16]byte
	s := strconv.AppendUint(b[:0], rand.Uint64()|1<<63, 16)
	return string(s)
}
