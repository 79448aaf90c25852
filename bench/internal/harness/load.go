package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Samples are latencies; Reporter.Latency prints their quantiles.
type Samples []time.Duration

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// NewClient returns an HTTP client for loopback load: keep-alive, at least
// conns idle connections kept per host, no proxy.
func NewClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns * 2,
			MaxIdleConnsPerHost: conns * 2,
			IdleConnTimeout:     60 * time.Second,
		},
	}
}

// PostWebhook posts w to url and reads the whole answer. It returns an
// error for a transport failure or any status but 200.
func PostWebhook(ctx context.Context, c *http.Client, url string, w Webhook) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(w.Body))
	if err != nil {
		return err
	}
	w.SetHeaders(req.Header)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}

// ClosedResult is what a closed-loop run measured.
type ClosedResult struct {
	// OK counts requests answered 200 inside the measured window.
	OK int
	// Errors counts the others (transport errors and non-200 answers).
	Errors int
	// FirstError is the first error seen, for the report.
	FirstError error
	// Elapsed is the measured window: from its start until the last
	// request that started in it ended.
	Elapsed time.Duration
	// Latency has one sample per OK request.
	Latency Samples
	// Exhausted: the supply of requests ran out before the window ended.
	Exhausted bool
}

// Rate is OK requests per second.
func (r ClosedResult) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// RunClosed runs clients concurrent loops, each doing one request after
// the other, for warmup (not measured) and then for window. next hands
// out the request numbers; it reports false when no request is left. do
// makes request n.
func RunClosed(ctx context.Context, clients int, warmup, window time.Duration, next func() (int, bool), do func(ctx context.Context, n int) error) ClosedResult {
	var (
		mu        sync.Mutex
		res       ClosedResult
		measuring atomic.Bool
		exhausted atomic.Bool
		wg        sync.WaitGroup
	)
	start := time.Now()
	measureFrom := start.Add(warmup)
	stopAt := measureFrom.Add(window)
	lastEnd := measureFrom
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat Samples
			ok, bad := 0, 0
			var first error
			var end time.Time
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(stopAt) {
					break
				}
				n, more := next()
				if !more {
					exhausted.Store(true)
					break
				}
				err := do(ctx, n)
				t1 := time.Now()
				if t0.Before(measureFrom) {
					continue
				}
				measuring.Store(true)
				end = t1
				if err != nil {
					bad++
					if first == nil {
						first = err
					}
					continue
				}
				ok++
				lat = append(lat, t1.Sub(t0))
			}
			mu.Lock()
			res.OK += ok
			res.Errors += bad
			if res.FirstError == nil {
				res.FirstError = first
			}
			res.Latency = append(res.Latency, lat...)
			if end.After(lastEnd) {
				lastEnd = end
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.Elapsed = lastEnd.Sub(measureFrom)
	res.Exhausted = exhausted.Load()
	return res
}

// Counter hands out 0, 1, 2, … up to limit (exclusive; limit ≤ 0: no
// limit), safely from many goroutines.
type Counter struct {
	n     atomic.Int64
	limit int64
}

// NewCounter returns a counter that stops at limit.
func NewCounter(limit int) *Counter { return &Counter{limit: int64(limit)} }

// Used is how many numbers were handed out (at most the limit).
func (c *Counter) Used() int {
	v := c.n.Load()
	if c.limit > 0 && v > c.limit {
		v = c.limit
	}
	return int(v)
}

// Next returns the next number, or false past the limit.
func (c *Counter) Next() (int, bool) {
	v := c.n.Add(1) - 1
	if c.limit > 0 && v >= c.limit {
		return 0, false
	}
	return int(v), true
}

// Paced starts do(n) for n = 0…count-1 at a fixed rate, each in its own
// goroutine at its intended time, so a slow answer never delays the next
// request (no coordinated omission). sent receives each request's intended
// start time before it is made. Paced returns when every call returned.
func Paced(ctx context.Context, count int, rate float64, sent func(n int, at time.Time), do func(ctx context.Context, n int) error) (errs int, first error) {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for n := 0; n < count && ctx.Err() == nil; n++ {
		at := start.Add(time.Duration(n) * interval)
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
			}
		}
		sent(n, at)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := do(ctx, n); err != nil {
				mu.Lock()
				errs++
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs, first
}
