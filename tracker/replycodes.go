package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// Reply codes (docs/design.md §15; the pure rules are group/replycode.go).
//
// Where the codes live: one route row per conversation, key
// "k:<our number>:<their number>", whose value is the conversation's code
// map (letter → group and when it last texted them; codeMap). It is
// written in the claim commit of every send of a group with response
// options, beside the conversation route ("c:…") that commit writes
// anyway, so it is as durable as the claim and every node reads the same
// map. The route's expiry is the answer window (Config.ReplyCodeWindow)
// after the latest claim; erasure and retention find it as they find the
// conversation route (its key ends in their number).
//
// A group's own letter for a person is also journaled in the group
// (group.CodesAssigned, with the claim), so its texts and its parsing of
// answers never depend on reading the map again.
//
// Assignment is a read-modify-write of the map: group actors of this
// process serialise it per conversation (codeLocks, held from the read to
// the claim's commit). Two nodes claiming for the same person in the same
// instant could still both read the map before either committed; the
// later commit then wins the row and the earlier group's letter is
// missing from it, so that group's coded answers route as bare ones.

// DefaultReplyCodeWindow is how long after a group last texted a person
// it counts as an open request of theirs.
const DefaultReplyCodeWindow = 24 * time.Hour

func codeKey(ours, theirs string) string { return "k:" + ours + ":" + theirs }

// codeEntry is one group's place in a conversation's code map.
type codeEntry struct {
	Group string `json:"g"`
	At    int64  `json:"at"` // unix nanoseconds of its latest claim to them
}

// codeMap is a conversation's codes: letter → group.
type codeMap map[string]codeEntry

func decodeCodeMap(v string) codeMap {
	m := codeMap{}
	if v != "" {
		_ = json.Unmarshal([]byte(v), &m) // an unreadable map is an empty one
	}
	return m
}

func (m codeMap) encode() string {
	b, _ := json.Marshal(m) // plain data always marshals
	return string(b)
}

// live drops entries past the window.
func (m codeMap) live(now time.Time, window time.Duration) codeMap {
	out := codeMap{}
	for l, e := range m {
		if now.Sub(time.Unix(0, e.At)) < window {
			out[l] = e
		}
	}
	return out
}

func (m codeMap) letterOf(groupID string) string {
	for l, e := range m {
		if e.Group == groupID {
			return l
		}
	}
	return ""
}

func (m codeMap) letters() []string {
	out := make([]string, 0, len(m))
	for l := range m {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// codeLocks serialises code assignment per conversation within a process.
type codeLocks struct{ stripes [64]sync.Mutex }

// lock takes the stripes of the conversations (their code-map keys), in
// stripe order, and returns their release.
func (l *codeLocks) lock(keys []string) func() {
	seen := map[uint32]bool{}
	var idx []int
	for _, k := range keys {
		h := fnv.New32a()
		h.Write([]byte(k))
		s := h.Sum32() % uint32(len(l.stripes))
		if !seen[s] {
			seen[s] = true
			idx = append(idx, int(s))
		}
	}
	sort.Ints(idx)
	for _, i := range idx {
		l.stripes[i].Lock()
	}
	return func() {
		for _, i := range idx {
			l.stripes[i].Unlock()
		}
	}
}

// readRoutes reads keys in one query when the store can, one by one
// otherwise; missing and expired keys are absent from the result.
func readRoutes(ctx context.Context, st store.Store, keys []string) (map[string]string, error) {
	out := make(map[string]string, len(keys))
	if br, ok := st.(store.RouteBatchReader); ok {
		got, err := br.GetRoutes(ctx, keys)
		if err != nil {
			return nil, err
		}
		for k, r := range got {
			out[k] = r.Value
		}
		return out, nil
	}
	for _, k := range keys {
		r, err := st.GetRoute(ctx, k)
		switch {
		case err == nil:
			out[k] = r.Value
		case !errors.Is(err, actor.ErrNotFound):
			return nil, err
		}
	}
	return out, nil
}

// codeGroup is a group named in a code map, as its projection has it:
// status, text, options and quorum.
type codeGroup struct {
	row     store.GroupRow
	answers group.Answers
}

// readCodeGroups reads each group of ids not in have into it; a missing
// group stays absent.
func readCodeGroups(ctx context.Context, st store.Store, ids []string, have map[string]codeGroup) error {
	for _, id := range ids {
		if _, ok := have[id]; ok {
			continue
		}
		row, err := st.GetGroup(ctx, id)
		if errors.Is(err, actor.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		var a group.Answers
		if row.Answers != "" {
			_ = json.Unmarshal([]byte(row.Answers), &a) // unreadable: asks nothing
		}
		have[id] = codeGroup{row: row, answers: a}
	}
	return nil
}

func (cg codeGroup) open(e codeEntry, now time.Time, window time.Duration) bool {
	return group.RequestOpen(cg.row.Status, cg.answers, time.Unix(0, e.At), now, window)
}

// assignCodes gives the recipients of claim cl their reply codes (a
// group with response options, individual mode): it journals
// group.CodesAssigned (before the claim, so the texts show them) and
// writes each conversation's code map with the claim. The returned
// release must be called once the claim's commit is over; ok is false
// when the maps could not be read (claim nothing then).
func (a *groupActor) assignCodes(ctx context.Context, cl group.Claimed, now time.Time) (release func(), ok bool) {
	g, e := a.g, a.env
	if len(g.Responses) == 0 || g.Mode != crewcast.ModeIndividual || e.codes == nil {
		return func() {}, true
	}
	var idx []int
	var keys []string
	for _, s := range cl.Sends {
		for _, i := range s.Indices {
			idx = append(idx, i)
			// A pool group texts each person from their own number:
			// the conversation, and so the code map, is that number's.
			keys = append(keys, codeKey(g.FromFor(i), g.Recipients[i].Number))
		}
	}
	if len(idx) == 0 {
		return func() {}, true
	}
	window := e.cfg.ReplyCodeWindow
	release = e.codes.lock(keys)
	rctx, cancel := context.WithTimeout(ctx, e.cfg.CommitTimeout)
	defer cancel()
	vals, err := readRoutes(rctx, e.st, keys)
	if err != nil {
		release()
		return nil, false
	}
	maps := make([]codeMap, len(idx))
	var others []string
	for k := range idx {
		maps[k] = decodeCodeMap(vals[keys[k]]).live(now, window)
		for _, en := range maps[k] {
			if en.Group != a.key {
				others = append(others, en.Group)
			}
		}
	}
	groups := map[string]codeGroup{}
	if err := readCodeGroups(rctx, e.st, others, groups); err != nil {
		release()
		return nil, false
	}
	var ca group.CodesAssigned
	for k, i := range idx {
		r, m := g.Recipients[i], maps[k]
		otherOpen := false
		for l, en := range m {
			if en.Group == a.key {
				continue
			}
			cg, found := groups[en.Group]
			if !found || cg.row.Status == crewcast.GroupCanceled {
				delete(m, l) // gone or canceled: its letter is free again
				continue
			}
			otherOpen = otherOpen || cg.open(en, now, window)
		}
		// Once given, a recipient's letter stays (it is in their texts).
		code := r.Code
		if code == "" {
			code = m.letterOf(a.key)
		}
		if code == "" {
			code = group.FreeCode(m.letters())
		}
		if code == "" {
			continue // 26 groups in the window: this one routes as without codes
		}
		if l := m.letterOf(a.key); l != "" && l != code {
			delete(m, l)
		}
		m[code] = codeEntry{Group: a.key, At: now.UnixNano()}
		if code != r.Code || (otherOpen && !r.CodeShown) {
			ca.Codes = append(ca.Codes, group.AssignedCode{Index: i, Code: code, Shown: otherOpen || r.CodeShown})
		}
		a.eff.Routes = append(a.eff.Routes, store.Route{Key: keys[k], Value: m.encode(), ExpiresAt: now.Add(window)})
	}
	if len(ca.Codes) > 0 {
		ca.At = now
		a.emit(ca)
	}
	return release, true
}

// codeRoute is what the router decided for an inbound message by the
// sender's code map.
type codeRoute struct {
	group     string // deliver to this group ("": route as without codes)
	ambiguous bool   // a bare answer while several groups are open
	listing   string // the message listing the open requests (ambiguous)
}

// routeByCode decides where an inbound message goes when its sender has
// several groups in their code map (docs/design.md §15): a coded answer
// to its group, a bare answer to the one open group, or, with several
// open, to none (ambiguous). Keywords (STOP, HELP…) and everything with
// fewer than two groups in the map route as without codes.
func (t *Tracker) routeByCode(ctx context.Context, ev crewcast.Event) (codeRoute, error) {
	if ev.Kind != crewcast.KindInbound || len(ev.CC) > 0 {
		return codeRoute{}, nil
	}
	now := t.cfg.Clock.Now()
	window := t.cfg.ReplyCodeWindow
	vals, err := readRoutes(ctx, t.st, []string{codeKey(ev.To, ev.From)})
	if err != nil {
		return codeRoute{}, fmt.Errorf("read reply codes: %w", err)
	}
	m := decodeCodeMap(vals[codeKey(ev.To, ev.From)]).live(now, window)
	if len(m) < 2 {
		return codeRoute{}, nil
	}
	ids := make([]string, 0, len(m))
	for _, en := range m {
		ids = append(ids, en.Group)
	}
	groups := map[string]codeGroup{}
	if err := readCodeGroups(ctx, t.st, ids, groups); err != nil {
		return codeRoute{}, fmt.Errorf("read groups of reply codes: %w", err)
	}
	var coded []group.CodedGroup
	for _, l := range m.letters() {
		if cg, ok := groups[m[l].Group]; ok && cg.row.Status != crewcast.GroupCanceled {
			coded = append(coded, group.CodedGroup{Code: l, Options: cg.answers.Responses})
		}
	}
	if code, _, ok := group.ParseCode(ev.Text, coded); ok {
		return codeRoute{group: m[code].Group}, nil
	}
	if group.ClassifyReply(ev.Text).Keyword != "" {
		return codeRoute{}, nil
	}
	var open []group.OpenRequest
	var openIDs []string
	answers := false // the text answers at least one open request
	for _, l := range m.letters() {
		cg, ok := groups[m[l].Group]
		if ok && cg.open(m[l], now, window) {
			open = append(open, group.OpenRequest{Code: l, Text: cg.row.Text, Options: cg.answers.Responses})
			openIDs = append(openIDs, m[l].Group)
			answers = answers || group.ParseResponse(cg.answers.Responses, ev.Text) != ""
		}
	}
	switch {
	case len(open) == 0:
		return codeRoute{}, nil
	case len(open) == 1:
		return codeRoute{group: openIDs[0]}, nil
	case !answers:
		// Not an answer at all ("running late"): a reply like any, to the
		// conversation's group, as without codes.
		return codeRoute{}, nil
	}
	return codeRoute{ambiguous: true, listing: group.AmbiguousListing(open)}, nil
}

// listingSendID names the listing sent after one ambiguous reply. Unlike
// a STOP's confirmation ("k-…") it is checked against the suppression list
// like any message.
func listingSendID(ev crewcast.Event) string { return "l-" + ev.Provider + "-" + ev.EventID }
