package sim

import (
	"net/http"
	"strconv"
	"time"
)

// telnyxDetailRecords answers Telnyx's Detail Record Search for messaging
// (GET /v2/detail_records?filter[record_type]=messaging) from the ledger:
// one outbound message detail record per accepted recipient, filtered by
// filter[cli] (our number), filter[cld] (theirs) and
// filter[created_at][gte], oldest first, page[number] and page[size]
// (at most 50). Records carry no text, as Telnyx's do not.
func (s *Sim) telnyxDetailRecords(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("filter[record_type]") != "messaging" {
		writeTelnyxError(w, http.StatusUnprocessableEntity, tnxErr("10015", "filter[record_type] must be messaging here.", "filter[record_type]"))
		return
	}
	if d := q.Get("filter[direction]"); d != "" && d != "outbound" {
		writeJSON(w, http.StatusOK, map[string]any{"data": []any{}, "meta": map[string]int{"total_pages": 0, "page_number": 1}})
		return
	}
	var since time.Time
	if v := q.Get("filter[created_at][gte]"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeTelnyxError(w, http.StatusUnprocessableEntity, tnxErr("10015", "filter[created_at][gte] is not a date-time.", "filter[created_at][gte]"))
			return
		}
		since = t
	}
	page, size := 1, 20
	if n, err := strconv.Atoi(q.Get("page[number]")); err == nil && n > 0 {
		page = n
	}
	if n, err := strconv.Atoi(q.Get("page[size]")); err == nil && n > 0 {
		size = min(n, 50)
	}
	type record struct {
		RecordType string `json:"record_type"`
		UUID       string `json:"uuid"`
		CLI        string `json:"cli"`
		CLD        string `json:"cld"`
		Direction  string `json:"direction"`
		CreatedAt  string `json:"created_at"`
	}
	cli, cld := q.Get("filter[cli]"), q.Get("filter[cld]")
	var all []record
	s.mu.Lock()
	for _, l := range s.ledger {
		if l.Provider != providerTelnyx || (cli != "" && l.From != cli) || (cld != "" && l.To != cld) || l.ReceivedAt.Before(since) {
			continue
		}
		all = append(all, record{RecordType: "message_detail_record", UUID: l.ID, CLI: l.From, CLD: l.To,
			Direction: "outbound", CreatedAt: tnxTime(l.ReceivedAt)})
	}
	s.mu.Unlock()
	pages := (len(all) + size - 1) / size
	lo := min((page-1)*size, len(all))
	hi := min(lo+size, len(all))
	writeJSON(w, http.StatusOK, map[string]any{"data": all[lo:hi],
		"meta": map[string]int{"total_pages": pages, "page_number": page, "page_size": size, "total_results": len(all)}})
}

// twilioList answers Twilio's message list (GET .../Messages.json) from
// the ledger: the account's messages newest first, as Twilio lists them,
// filtered by From, To and DateSent>= (a UTC date), PageSize (default 50,
// at most 1000) and Page, with next_page_uri while more remain.
func (s *Sim) twilioList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var since time.Time
	if v := q.Get("DateSent>"); v != "" { // "DateSent>=2026-12-03" parses as key "DateSent>", value "=2026-12-03"
		q.Set("DateSent>=", v[min(1, len(v)):])
	}
	if v := q.Get("DateSent>="); v != "" {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			writeTwilioError(w, http.StatusBadRequest, 20001, "DateSent>= is not a date")
			return
		}
		since = t
	}
	size, page := 50, 0
	if n, err := strconv.Atoi(q.Get("PageSize")); err == nil && n > 0 {
		size = min(n, 1000)
	}
	if n, err := strconv.Atoi(q.Get("Page")); err == nil && n >= 0 {
		page = n
	}
	from, to := q.Get("From"), q.Get("To")
	var ms []*message
	s.mu.Lock()
	seen := map[string]bool{}
	for k := len(s.ledger) - 1; k >= 0; k-- {
		l := s.ledger[k]
		if l.Provider != providerTwilio || seen[l.ID] || (from != "" && l.From != from) || (to != "" && l.To != to) || l.ReceivedAt.Before(since) {
			continue
		}
		seen[l.ID] = true
		if m := s.messages[providerTwilio+"|"+l.ID]; m != nil {
			ms = append(ms, m)
		}
	}
	s.mu.Unlock()
	lo := min(page*size, len(ms))
	hi := min(lo+size, len(ms))
	out := make([]twMessage, 0, hi-lo)
	for _, m := range ms[lo:hi] {
		out = append(out, s.twilioView(m))
	}
	var next *string
	if hi < len(ms) {
		nq := r.URL.Query()
		nq.Set("Page", strconv.Itoa(page+1))
		nq.Set("PageSize", strconv.Itoa(size))
		u := r.URL.Path + "?" + nq.Encode()
		next = &u
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": out, "page": page, "page_size": size, "next_page_uri": next})
}
