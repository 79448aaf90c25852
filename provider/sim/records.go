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
