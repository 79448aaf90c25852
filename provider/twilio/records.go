package twilio

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/apicall"
)

// ListSent asks Twilio's message list (GET .../Messages.json?From=…&
// DateSent>=…, following next_page_uri) for the messages sent from one of
// our numbers since a time: crewcast.SentLister, read after a database
// failover (docs/design.md §19). DateSent>= takes a UTC date, so the
// list is cut at since here; each message carries its body, so a
// recipient is matched by number and text.
func (c *Client) ListSent(ctx context.Context, from string, since time.Time) ([]crewcast.SentMessage, error) {
	q := url.Values{}
	q.Set("From", from)
	q.Set("DateSent>=", since.UTC().Format(time.DateOnly))
	q.Set("PageSize", "1000")
	path := c.messagesPath() + ".json?" + q.Encode()
	var out []crewcast.SentMessage
	for pages := 0; path != ""; pages++ {
		if pages >= 1000 {
			return nil, fmt.Errorf("twilio message list: more than 1000 pages")
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
		if err != nil {
			return nil, invalid("build request: %v", err)
		}
		req.SetBasicAuth(c.accountSID, c.authToken)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "crewcast")
		resp, err := apicall.Do(c.http, ProviderName, req)
		if err != nil {
			return nil, err
		}
		if resp.Status != http.StatusOK {
			return nil, fmt.Errorf("twilio message list: HTTP %d", resp.Status)
		}
		var body struct {
			Messages []struct {
				SID         string `json:"sid"`
				From        string `json:"from"`
				To          string `json:"to"`
				Body        string `json:"body"`
				Direction   string `json:"direction"`
				DateCreated string `json:"date_created"`
			} `json:"messages"`
			NextPageURI *string `json:"next_page_uri"`
		}
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			return nil, fmt.Errorf("twilio message list: %w", err)
		}
		for _, m := range body.Messages {
			if !strings.HasPrefix(m.Direction, "outbound") {
				continue
			}
			created, err := time.Parse(time.RFC1123Z, m.DateCreated)
			if err == nil && created.Before(since.Truncate(time.Second)) {
				continue
			}
			out = append(out, crewcast.SentMessage{MessageID: m.SID, From: m.From, To: m.To, Text: m.Body, CreatedAt: created})
		}
		path = ""
		if body.NextPageURI != nil {
			path = *body.NextPageURI
		}
	}
	return out, nil
}

var _ crewcast.SentLister = (*Client)(nil)
