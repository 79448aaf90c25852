package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// RequestIDHeader carries a request's id, in the request (from a proxy or
// client that already assigned one) and always in the answer.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// WithRequestID gives every request an id: the incoming X-Request-Id when
// it is short and plain (letters, digits, '-', '_', '.', ':'; at most 64),
// so a proxy's id follows the request through, otherwise a new random one.
// The id goes into the answer's X-Request-Id header and the request's
// context, where the logger (LogHandler) adds it to every record logged
// with that context. Each request is also logged at debug level, by route
// pattern (never the path, which can carry a phone number). The server
// wraps the whole handler New returns with it.
func WithRequestID(next http.Handler, log *slog.Logger) http.Handler {
	log = slog.New(LogHandler(log.Handler()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		if !log.Enabled(r.Context(), slog.LevelDebug) {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		status := sw.status
		if !sw.wrote {
			status = http.StatusOK
		}
		log.LogAttrs(r.Context(), slog.LevelDebug, "http request", slog.String("method", r.Method),
			slog.String("route", r.Pattern), slog.Int("status", status), slog.Duration("duration", time.Since(start)))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// LogHandler wraps h so that every record logged with a request's context
// carries request_id. Wrap the server's logger with it once.
func LogHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h // already wrapped: one request_id per record
	}
	return requestIDHandler{h}
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
