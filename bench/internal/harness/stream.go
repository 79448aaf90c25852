package harness

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
)

// StreamEvent is one server-sent event.
type StreamEvent struct {
	ID    string
	Event string
	Data  string
}

// Stream reads a text/event-stream response.
type Stream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

// OpenStream opens an event stream at url with the admin key.
func OpenStream(ctx context.Context, c *http.Client, url string) (*Stream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+AdminKey)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("open stream: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &Stream{resp: resp, sc: sc}, nil
}

// Next returns the next event (comments and retry hints are skipped).
func (s *Stream) Next() (StreamEvent, error) {
	var ev StreamEvent
	var data []string
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "" {
			if ev.Event == "" && len(data) == 0 {
				continue
			}
			ev.Data = strings.Join(data, "\n")
			return ev, nil
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			data = append(data, value)
		}
	}
	if err := s.sc.Err(); err != nil {
		return ev, err
	}
	return ev, fmt.Errorf("stream ended")
}

// Close ends the stream.
func (s *Stream) Close() error { return s.resp.Body.Close() }
