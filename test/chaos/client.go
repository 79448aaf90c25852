package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// httpc is the harness's own HTTP client for the API and the simulator.
var httpc = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}}

// doJSON sends a JSON request and decodes a JSON answer into out (when
// non-nil). It returns the status code; a non-2xx answer is an error
// carrying the body.
func doJSON(ctx context.Context, method, u, bearer string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return 0, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// The simulator's ledger of a 30-minute soak at 200 recipients/s is
	// about 65 MB; a body past the cap is an error, never a truncated read
	// (which failed the soak's final check as "unexpected end of JSON").
	const maxBody = 512 << 20
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return resp.StatusCode, err
	}
	if len(rb) > maxBody {
		return resp.StatusCode, fmt.Errorf("%s %s: response larger than %d MB", method, u, maxBody>>20)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, u, resp.StatusCode, strings.TrimSpace(string(rb)))
	}
	if out != nil {
		if err := json.Unmarshal(rb, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode: %w", method, u, err)
		}
	}
	return resp.StatusCode, nil
}

// recipientView is one recipient in GET /v1/groups/{id}.
type recipientView struct {
	Number            string `json:"number"`
	Status            string `json:"status"`
	Attempts          int    `json:"attempts"`
	ProviderMessageID string `json:"provider_message_id"`
	ReplyText         string `json:"reply_text"`
	Ack               string `json:"ack"`
	// Follow-ups (T14).
	RepliedAt      *time.Time `json:"replied_at"`
	FollowupsSent  int        `json:"followups_sent"`
	NextFollowupAt *time.Time `json:"next_followup_at"`
}

// groupView is GET /v1/groups/{id}.
type groupView struct {
	ID         string          `json:"id"`
	Status     string          `json:"status"`
	From       string          `json:"from"`
	Text       string          `json:"text"`
	Recipients []recipientView `json:"recipients"`
}

// journalEvent is one entry of GET /v1/groups/{id}/events.
type journalEvent struct {
	Seq  uint64          `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// api is a crewcast server's HTTP API.
type api struct {
	base string
	key  string
}

// createGroup posts a group in individual mode; checkAfter may be "".
func (a api) createGroup(ctx context.Context, from string, to []string, text, checkAfter string) (groupView, error) {
	body := map[string]any{"from": from, "to": to, "text": text, "mode": "individual"}
	if checkAfter != "" {
		body["check_after"] = checkAfter
	}
	var g groupView
	_, err := doJSON(ctx, http.MethodPost, a.base+"/v1/groups", a.key, body, &g)
	return g, err
}

// sendingGroups returns the ids of the groups whose status is sending
// (GET /v1/groups?status=sending: the list, without recipients).
func (a api) sendingGroups(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	cursor := ""
	for range 100 {
		var page struct {
			Groups     []groupView `json:"groups"`
			NextCursor string      `json:"next_cursor"`
		}
		u := a.base + "/v1/groups?status=sending&limit=500"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		if _, err := doJSON(ctx, http.MethodGet, u, a.key, nil, &page); err != nil {
			return nil, err
		}
		for _, g := range page.Groups {
			out[g.ID] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			return out, nil
		}
	}
	return out, nil
}

func (a api) group(ctx context.Context, id string) (groupView, error) {
	var g groupView
	_, err := doJSON(ctx, http.MethodGet, a.base+"/v1/groups/"+id, a.key, nil, &g)
	return g, err
}

// journal reads a group's whole journal.
func (a api) journal(ctx context.Context, id string) ([]journalEvent, error) {
	var all []journalEvent
	var after uint64
	for range 1000 {
		var page struct {
			Events    []journalEvent `json:"events"`
			NextAfter uint64         `json:"next_after"`
			HasMore   bool           `json:"has_more"`
		}
		u := fmt.Sprintf("%s/v1/groups/%s/events?limit=10000&after=%d", a.base, id, after)
		if _, err := doJSON(ctx, http.MethodGet, u, a.key, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Events...)
		if !page.HasMore {
			return all, nil
		}
		after = page.NextAfter
	}
	return nil, fmt.Errorf("journal of %s: too many pages", id)
}

// resolve records an operator decision for an unconfirmed recipient.
func (a api) resolve(ctx context.Context, id, number, outcome string) error {
	u := a.base + "/v1/groups/" + id + "/recipients/" + url.PathEscape(number) + "/resolve"
	_, err := doJSON(ctx, http.MethodPost, u, a.key, map[string]string{"outcome": outcome}, nil)
	return err
}

// ready polls /readyz until it answers 200 or the timeout passes.
func (a api) ready(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		_, err := doJSON(ctx, http.MethodGet, a.base+"/readyz", "", nil, nil)
		if err == nil {
			return nil
		}
		last = err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(50 * time.Millisecond) // polling an external process
	}
	return fmt.Errorf("server not ready within %s: %v", timeout, last)
}

// metric reads one unlabelled gauge from /metrics, or -1.
func (a api) metric(ctx context.Context, name string) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/metrics", nil)
	if err != nil {
		return -1
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	return -1
}

// ledgerSend is one row of GET /sim/ledger.
type ledgerSend struct {
	ID         string    `json:"id"`
	Provider   string    `json:"provider"`
	From       string    `json:"from"`
	To         string    `json:"to"`
	Text       string    `json:"text"`
	Channel    string    `json:"channel"` // "voice" for a call
	ReceivedAt time.Time `json:"received_at"`
}

// simKeys is GET /sim/keys.
type simKeys struct {
	TelnyxPublicKey  string `json:"telnyx_public_key"`
	TelnyxAPIKey     string `json:"telnyx_api_key"`
	TwilioAccountSID string `json:"twilio_account_sid"` // T17
	TwilioAuthToken  string `json:"twilio_auth_token"`
}

// simAPI is the simulator's control plane.
type simAPI struct{ base, token string } // token: the control token of its /sim/* routes

func (s simAPI) keys(ctx context.Context) (simKeys, error) {
	var k simKeys
	_, err := doJSON(ctx, http.MethodGet, s.base+"/sim/keys", s.token, nil, &k)
	return k, err
}

func (s simAPI) ledger(ctx context.Context) ([]ledgerSend, error) {
	var l struct {
		Sends []ledgerSend `json:"sends"`
	}
	_, err := doJSON(ctx, http.MethodGet, s.base+"/sim/ledger", s.token, nil, &l)
	return l.Sends, err
}

// setFaults applies the given knobs over the current ones.
func (s simAPI) setFaults(ctx context.Context, knobs map[string]any) error {
	_, err := doJSON(ctx, http.MethodPost, s.base+"/sim/faults", s.token, knobs, nil)
	return err
}
