package main

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/crewcast/crewcast/internal/stats"
)

// registry remembers every group the harness created: which group each
// recipient number and each message text belongs to (both are unique per
// group), and how many provider sends each recipient may have.
type registry struct {
	mu       sync.Mutex
	byNumber map[string]string // number → group id
	byText   map[string]string // text → group id
	allowed  map[string]int    // group|number → sends allowed (default 1)
}

func newRegistry() *registry {
	return &registry{byNumber: map[string]string{}, byText: map[string]string{}, allowed: map[string]int{}}
}

// add records a created group.
func (r *registry) add(g groupView, numbers []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range numbers {
		r.byNumber[n] = g.ID
	}
	r.byText[g.Text] = g.ID
}

// allowResend records an explicit operator decision (resolve
// not_delivered) that permits one more send to number.
func (r *registry) allowResend(groupID, number string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := groupID + "|" + number
	if r.allowed[k] == 0 {
		r.allowed[k] = 1
	}
	r.allowed[k]++
}

// addFollowups records a group's follow-up text: its sends count apart
// from the first message (key "<group>/followups|<number>"), up to max per
// person, so the duplicate check holds each person to 1 + max messages.
func (r *registry) addFollowups(groupID, text string, numbers []string, max int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byText[text] = groupID + "/followups"
	for _, n := range numbers {
		r.allowed[groupID+"/followups|"+n] = max
	}
}

func (r *registry) snapshot() (byNumber, byText map[string]string, allowed map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return cloneMap(r.byNumber), cloneMap(r.byText), cloneMap(r.allowed)
}

func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sendCounts counts ledger rows per group|number, using the text to find
// the group; rows of no known group are returned apart.
func sendCounts(ledger []ledgerSend, byText map[string]string) (counts map[string]int, stray []ledgerSend) {
	counts = map[string]int{}
	for _, s := range ledger {
		gid, ok := byText[s.Text]
		if !ok {
			stray = append(stray, s)
			continue
		}
		counts[gid+"|"+s.To]++
	}
	return counts, stray
}

// checkDuplicates counts provider sends beyond what each recipient was
// allowed. Unlike Jepsen's queue checker, any extra send is a failure.
func checkDuplicates(ledger []ledgerSend, byText map[string]string, allowed map[string]int) (int, []string) {
	counts, stray := sendCounts(ledger, byText)
	var problems []string
	for _, s := range stray {
		problems = append(problems, fmt.Sprintf("ledger row %s for a text no chaos group sent", s.ID))
	}
	dups := 0
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		limit := allowed[k]
		if limit == 0 {
			limit = 1
		}
		if n := counts[k]; n > limit {
			dups += n - limit
			problems = append(problems, fmt.Sprintf("DUPLICATE SEND: %s sent %d times (allowed %d)", k, n, limit))
		}
	}
	return dups, problems
}

// groupState is what the API shows of one group after a scenario.
type groupState struct {
	view     groupView
	eventIDs map[string]int // provider event ids in the journal → occurrences
}

// journalEventIDs counts the provider event ids that journal events carry
// (status.observed and reply.received record the webhook's event id).
func journalEventIDs(evs []journalEvent) map[string]int {
	out := map[string]int{}
	for _, e := range evs {
		var d struct {
			EventID string `json:"event_id"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.EventID != "" {
			out[d.EventID]++
		}
	}
	return out
}

// statusRank mirrors crewcast's forward-only order (group.rank).
func statusRank(s string) int {
	switch s {
	case "pending":
		return 0
	case "sending":
		return 1
	case "unconfirmed":
		return 2
	case "sent":
		return 3
	case "unknown":
		return 4
	case "failed", "delivered":
		return 5
	case "opted_out", "canceled", "not_needed":
		return 6
	}
	return -1
}

// impliedStatus is the crewcast status a Telnyx event status stands for,
// where the check can rely on it ("" = only the journal entry is checked).
func impliedStatus(providerStatus string) string {
	switch providerStatus {
	case "sent":
		return "sent"
	case "delivered":
		return "delivered"
	case "delivery_failed", "sending_failed":
		return "failed"
	}
	return ""
}

// checkInput is one scenario's evidence.
type checkInput struct {
	groups   map[string]groupState // the scenario's groups, by id
	byNumber map[string]string     // every chaos number → group id
	counts   map[string]int        // ledger sends per group|number
	records  []webhookRecord       // everything the proxy saw
	// drained: the scenario waited for every send to resolve, so nothing
	// may be left pending or sending.
	drained bool
}

// checkResult is what the checks found.
type checkResult struct {
	acked, lost, unconfirmed int
	problems                 []string
}

// checkGroups checks that every acknowledged webhook about the groups is
// reflected (its event id is in the group's journal and the recipient's
// status is at least what the event says), that unconfirmed recipients
// were never resent, that no recipient has a provider status without a
// send, and (when drained) that nothing is stuck.
func checkGroups(in checkInput) checkResult {
	var res checkResult
	for _, r := range in.records {
		if !r.acked() {
			continue
		}
		gid, known := in.byNumber[r.Number]
		if !known {
			res.problems = append(res.problems, fmt.Sprintf("acknowledged webhook %s (%s) about a number no chaos group has", r.EventID, r.EventType))
			continue
		}
		gs, mine := in.groups[gid]
		if !mine {
			continue // another scenario's group
		}
		res.acked++
		if gs.eventIDs[r.EventID] == 0 {
			res.lost++
			res.problems = append(res.problems, fmt.Sprintf("LOST: acknowledged %s %s for %s in group %s is not in the journal", r.EventType, r.EventID, r.Number, gid))
			continue
		}
		want := impliedStatus(r.Status)
		if r.EventType == "message.received" || want == "" {
			continue
		}
		rv, ok := findRecipient(gs.view, r.Number)
		if !ok {
			res.lost++
			res.problems = append(res.problems, fmt.Sprintf("LOST: group %s has no recipient %s for acknowledged %s", gid, r.Number, r.EventID))
			continue
		}
		if statusRank(rv.Status) < statusRank(want) || (statusRank(want) == 5 && rv.Status != want && statusRank(rv.Status) == 5) {
			res.lost++
			res.problems = append(res.problems, fmt.Sprintf("LOST: acknowledged %s says %s for %s in group %s, status is %s", r.EventID, r.Status, r.Number, gid, rv.Status))
		}
	}
	ids := make([]string, 0, len(in.groups))
	for id := range in.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		stuck := map[string]int{}
		for _, rv := range in.groups[id].view.Recipients {
			n := in.counts[id+"|"+rv.Number]
			switch rv.Status {
			case "unconfirmed":
				res.unconfirmed++
				if n > 1 || rv.Attempts > 1 {
					res.problems = append(res.problems, fmt.Sprintf("UNCONFIRMED RESENT: %s in group %s has %d sends, %d attempts", rv.Number, id, n, rv.Attempts))
				}
			case "sent", "delivered", "unknown":
				if n == 0 {
					res.problems = append(res.problems, fmt.Sprintf("PHANTOM: %s in group %s is %s but the provider never accepted a send", rv.Number, id, rv.Status))
				}
			case "pending", "sending":
				stuck[rv.Status]++
			}
		}
		if in.drained && len(stuck) > 0 {
			res.problems = append(res.problems, fmt.Sprintf("STUCK: group %s still has %d pending and %d sending recipients after the drain", id, stuck["pending"], stuck["sending"]))
		}
	}
	return res
}

func findRecipient(g groupView, number string) (recipientView, bool) {
	for _, r := range g.Recipients {
		if r.Number == number {
			return r, true
		}
	}
	return recipientView{}, false
}

// quantileMS returns the q-quantile (0–1, stats.Quantile) of ds in whole
// milliseconds, rounded up, and the name it has (stats.Label: "p99", or
// "max" when ds are too few to tell a p99 from their maximum); 0 for none.
func quantileMS(ds []time.Duration, q float64) (int64, string) {
	label := stats.Label(q, len(ds))
	v, err := stats.Quantile(ds, q)
	if err != nil {
		return 0, label
	}
	return int64(math.Ceil(float64(v) / float64(time.Millisecond))), label
}

// p99MS is the 0.99-quantile of ds in whole milliseconds (quantileMS).
func p99MS(ds []time.Duration) int64 {
	v, _ := quantileMS(ds, 0.99)
	return v
}

// ackLatencies returns the latencies of acknowledged records.
func ackLatencies(recs []webhookRecord) []time.Duration {
	var out []time.Duration
	for _, r := range recs {
		if r.acked() {
			out = append(out, r.Latency)
		}
	}
	return out
}
