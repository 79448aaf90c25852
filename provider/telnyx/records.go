package telnyx

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/apicall"
)

// ListSent asks Telnyx's Detail Record Search (GET /v2/detail_records,
// filter[record_type]=messaging) for the outbound message detail records
// from one of our numbers created since a time: crewcast.SentLister, read
// after a database failover (docs/design.md §19). Records carry no text;
// a record is matched to a recipient by number and time. Telnyx writes
// MDRs shortly after a send, not in the same instant, so a record can lag
// its acceptance; the reconciliation runs after the failover's gap.
func (c *Client) ListSent(ctx context.Context, from string, since time.Time) ([]crewcast.SentMessage, error) {
	var out []crewcast.SentMessage
	for page := 1; ; page++ {
		q := url.Values{}
		q.Set("filter[record_type]", "messaging")
		q.Set("filter[direction]", "outbound")
		q.Set("filter[cli]", from)
		q.Set("filter[created_at][gte]", since.UTC().Format(time.RFC3339))
		q.Set("sort", "created_at")
		q.Set("page[number]", strconv.Itoa(page))
		q.Set("page[size]", "50")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v2/detail_records?"+q.Encode(), nil)
		if err != nil {
			return nil, c.invalid("build request: %v", err)
		}
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "crewcast")
		resp, err := apicall.Do(c.http, ProviderName, req)
		if err != nil {
			return nil, err
		}
		if resp.Status != http.StatusOK {
			return nil, fmt.Errorf("telnyx detail records: HTTP %d", resp.Status)
		}
		var body struct {
			Data []struct {
				UUID      string    `json:"uuid"`
				CLI       string    `json:"cli"`
				CLD       string    `json:"cld"`
				Direction string    `json:"direction"`
				CreatedAt time.Time `json:"created_at"`
			} `json:"data"`
			Meta struct {
				TotalPages int `json:"total_pages"`
				PageNumber int `json:"page_number"`
			} `json:"meta"`
		}
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			return nil, fmt.Errorf("telnyx detail records: %w", err)
		}
		for _, d := range body.Data {
			if d.Direction != "" && d.Direction != "outbound" {
				continue
			}
			out = append(out, crewcast.SentMessage{MessageID: d.UUID, From: d.CLI, To: d.CLD, CreatedAt: d.CreatedAt})
		}
		if len(body.Data) == 0 || page >= body.Meta.TotalPages {
			return out, nil
		}
	}
}

var _ crewcast.SentLister = (*Client)(nil)
