package httpapi

import (
	"net/http"
	"strconv"
	"sync"
)

// codeTooManyStreams refuses an event stream over a cap.
const codeTooManyStreams = "too_many_streams"

// streamRetryAfter is the Retry-After (seconds) of a refused stream.
const streamRetryAfter = 10

// streamCaps bounds open event streams: in all (the server's memory and
// file descriptors) and per API key (so one key cannot take them all).
type streamCaps struct {
	max, perKey int

	mu    sync.Mutex
	open  int
	byKey map[string]int
}

func newStreamCaps(max, perKey int) *streamCaps {
	return &streamCaps{max: max, perKey: perKey, byKey: map[string]int{}}
}

// acquire counts one more stream of key, or refuses it: 429 when the key
// holds its share, 503 when the server holds its maximum. release must be
// called once when the stream ends.
func (c *streamCaps) acquire(key string) (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.byKey[key] >= c.perKey:
		return nil, tooManyStreams(http.StatusTooManyRequests,
			"this API key has "+strconv.Itoa(c.perKey)+" event streams open, its maximum; close one or retry later")
	case c.open >= c.max:
		return nil, tooManyStreams(http.StatusServiceUnavailable,
			"the server has "+strconv.Itoa(c.max)+" event streams open, its maximum; retry later")
	}
	c.open++
	c.byKey[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.open--
			if c.byKey[key]--; c.byKey[key] <= 0 {
				delete(c.byKey, key)
			}
		})
	}, nil
}

func tooManyStreams(status int, msg string) *apiError {
	e := newError(status, codeTooManyStreams, msg)
	e.Header = http.Header{"Retry-After": {strconv.Itoa(streamRetryAfter)}}
	return e
}
