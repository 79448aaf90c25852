package store

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/internal/stats"
)

// Helpers shared by the engines, so that cursors, time encoding and summary
// figures mean the same thing whichever engine produced them.

// ErrInvalidCursor is returned by list methods for a cursor they did not
// produce (the HTTP layer maps it to 400).
var ErrInvalidCursor = errors.New("invalid cursor")

// EncodeCursor packs the sort key of the last row of a page into an opaque
// string.
func EncodeCursor(parts ...string) string {
	b, _ := json.Marshal(parts) // a []string always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor unpacks a cursor made by EncodeCursor with exactly n parts.
func DecodeCursor(c string, n int) ([]string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidCursor, err)
	}
	var parts []string
	if err := json.Unmarshal(b, &parts); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidCursor, err)
	}
	if len(parts) != n {
		return nil, fmt.Errorf("%w: %d parts, want %d", ErrInvalidCursor, len(parts), n)
	}
	return parts, nil
}

// CursorInt parses an integer cursor part.
func CursorInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalidCursor, err)
	}
	return v, nil
}

// Nanos encodes t as Unix nanoseconds for storage; the zero time is 0 so
// that "not set" survives a round trip exactly. Engines store integers
// rather than native timestamps so that every engine returns the same
// instants to the nanosecond.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos decodes Nanos: 0 is the zero time, anything else a UTC time.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// ClampLimit applies a list method's default and maximum page size.
func ClampLimit(limit, def, max int) int {
	if limit <= 0 {
		return def
	}
	if limit > max {
		return max
	}
	return limit
}

// FinishSummary fills the derived figures of s (DeliveryRate, median and
// p95) from the counts already in s and the SentAt→DeliveredAt durations of
// the delivered rows. TopErrorCodes is left as the engine read it: most
// frequent first, then by code and class in byte order (the query's ORDER
// BY; both schemas compare text bytewise), at most 10 (its LIMIT).
func FinishSummary(s *Summary, toDelivered []time.Duration) {
	if s.ByStatus == nil {
		s.ByStatus = map[crewcast.Status]int{}
	}
	denom := s.Total - s.ByStatus[crewcast.StatusOptedOut] - s.ByStatus[crewcast.StatusCanceled]
	if denom > 0 {
		s.DeliveryRate = float64(s.ByStatus[crewcast.StatusDelivered]) / float64(denom)
	} else {
		s.DeliveryRate = 0
	}
	// Nearest-rank quantiles; with none delivered (stats.ErrNoSamples,
	// the only error for these qs) both stay 0.
	s.MedianToDelivered, s.P95ToDelivered = 0, 0
	if q, err := stats.Quantiles(toDelivered, 0.5, 0.95); err == nil {
		s.MedianToDelivered, s.P95ToDelivered = q[0], q[1]
	}
}

// EffectsOf returns the store.Effects carried by a unit's effect value (a
// value or a pointer; a nil pointer is no effect), or ErrUnknownEffect.
func EffectsOf(e any) (*Effects, error) {
	switch v := e.(type) {
	case Effects:
		return &v, nil
	case *Effects:
		if v == nil {
			return &Effects{}, nil
		}
		return v, nil
	default:
		return nil, fmt.Errorf("%w: %T", ErrUnknownEffect, e)
	}
}

// SnapshotChecksum is the SHA-256 stored beside a snapshot's state. It
// covers the key and sequence too, so that state copied to another row or
// paired with another sequence is detected as well as flipped bytes.
func SnapshotChecksum(key string, seq uint64, state []byte) []byte {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(key)))
	h.Write(n[:])
	h.Write([]byte(key))
	binary.BigEndian.PutUint64(n[:], seq)
	h.Write(n[:])
	h.Write(state)
	return h.Sum(nil)
}
