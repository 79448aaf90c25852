package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/errcode"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

// ---- JSON shapes ----

// tsOrNil returns nil for the zero time (JSON null) and the UTC time
// otherwise.
func tsOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func groupOf(g store.GroupRow) apitype.Group {
	counts := group.ViewCounts(g.Counts)
	out := apitype.Group{
		ID: g.ID, Status: string(g.Status), PauseReason: g.PauseReason, Mode: string(g.Mode), From: g.From,
		Text: g.Text, CreatedAt: tsOrNil(g.CreatedAt), UpdatedAt: tsOrNil(g.UpdatedAt), Seq: g.Seq, Counts: counts,
	}
	var ans group.Answers
	if g.Answers != "" && json.Unmarshal([]byte(g.Answers), &ans) == nil {
		out.Responses = ans.Responses
		if q := ans.Quorum; q != nil {
			out.Quorum = &apitype.Quorum{Response: q.Response, Count: q.Count, KeepSending: q.KeepSending, Exact: q.Exact, MetAt: tsOrNil(q.MetAt)}
		}
	}
	return out
}

func recipientOf(d store.DeliveryRow) apitype.Recipient {
	return apitype.Recipient{
		Number: d.Number, Name: d.Name, Status: string(d.Status), Attempts: d.Attempts,
		ProviderMessageID: d.ProviderMessageID, ErrorCode: d.ErrorCode, ErrorClass: errcode.Class(d.ErrorCode, d.ErrorClass),
		ErrorDetail: errcode.Detail(d.ErrorCode, d.ErrorClass), ErrorURL: errcode.URL(d.ErrorCode),
		ClaimedAt: tsOrNil(d.ClaimedAt), SentAt: tsOrNil(d.SentAt), DeliveredAt: tsOrNil(d.DeliveredAt),
		FailedAt: tsOrNil(d.FailedAt), RepliedAt: tsOrNil(d.RepliedAt), ReplyText: d.LastReply, Ack: string(d.Ack),
		UpdatedAt: tsOrNil(d.UpdatedAt), Response: d.Response, Code: d.Code,
	}
}

// ---- query parameters ----

// queryLimit parses ?limit= (0 when absent) within [1, max].
func queryLimit(r *http.Request, max int) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		return 0, invalid("limit", fmt.Sprintf("must be an integer from 1 to %d", max))
	}
	return n, nil
}

// queryTime parses an RFC 3339 query parameter (zero when absent).
func queryTime(r *http.Request, name string) (time.Time, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, invalid(name, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	return t, nil
}

// queryBool parses a boolean query parameter (false when absent).
func queryBool(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, invalid(name, "must be true or false")
	}
	return b, nil
}

// pathNumber normalizes the {number} path value: "+" may arrive as %2B or
// literally, and numbers are compared in E.164.
func pathNumber(r *http.Request) (string, error) {
	return normalizeNumber("number", r.PathValue("number"))
}

func normalizeNumber(field, s string) (string, error) {
	n, err := group.NormalizeNumber(s)
	if err != nil {
		return "", invalid(field, err.Error())
	}
	return n, nil
}

func recipientStatus(r *http.Request) (crewcast.Status, error) {
	s := crewcast.Status(r.URL.Query().Get("status"))
	if s != "" && !s.Valid() {
		return "", invalid("status", "unknown recipient status")
	}
	return s, nil
}

// ---- create ----

// createRequest is the body of POST /v1/groups.
type createRequest struct {
	From string `json:"from"`
	// Pool sends from a sender pool instead of one from (docs/design.md §16).
	Pool       string                            `json:"pool"`
	To         boundedList[string]               `json:"to"`
	Recipients boundedList[group.RecipientInput] `json:"recipients"`
	Text       string                            `json:"text"`
	MediaURLs  []string                          `json:"media_urls"`
	Mode       crewcast.Mode                     `json:"mode"`
	// CheckAfter is a Go duration string ("10m") or whole seconds.
	CheckAfter json.RawMessage `json:"check_after"`
	// Directory selectors, template and responses (docs/design.md §11).
	Crews        []string       `json:"crews"`
	Tags         []string       `json:"tags"`
	Contacts     []string       `json:"contacts"`
	Template     string         `json:"template"`
	Responses    []group.Option `json:"responses"`
	ResponseHint *bool          `json:"response_hint"`
	Quorum       *quorumInput   `json:"quorum"` // callout.go
	// send_at, priority, followup, escalate, quiet_hours (docs/design.md §12).
	group.PolicyInput
	// waves, confirmed_text, filled_text (callout.go).
	group.CalloutInput
}

// request is the group.Request of a create (or preview) body, with its
// crews, tags, contacts and template resolved.
func (a *api) request(ctx context.Context, body createRequest) (group.Request, error) {
	if err := a.checkRegistered(ctx, body.From); err != nil {
		return group.Request{}, err
	}
	if err := a.checkPoolRegistered(ctx, body.Pool); err != nil { // providers.go
		return group.Request{}, err
	}
	quorum, exactGiven := body.quorum()
	req := group.Request{From: body.From, Pool: body.Pool, To: body.To, Recipients: body.Recipients, Text: body.Text,
		MediaURLs: body.MediaURLs, Mode: body.Mode, Crews: body.Crews, Tags: body.Tags, Contacts: body.Contacts,
		Template: body.Template, Responses: body.Responses, ResponseHint: body.ResponseHint, Quorum: quorum,
		PolicyInput: body.PolicyInput, CalloutInput: body.CalloutInput, ExactGiven: exactGiven}
	if err := a.resolveAudience(ctx, &req); err != nil {
		return group.Request{}, err
	}
	// Plan refuses these too (a 400 among the other problems); checked
	// first, they are the 422 invalid_text the API documents.
	if err := textErrors(group.CheckTexts(req)); err != nil {
		return group.Request{}, err
	}
	if group.HasVariables(req.Text) {
		if _, err := checkTemplateText("text", req.Text); err != nil {
			return group.Request{}, err // an unknown variable is a 422 naming it
		}
	}
	return req, nil
}

// Bounds of check_after: a check sooner than a second is noise, and one
// more than a week away would outlive any receipt.
const (
	minCheckAfter = time.Second
	maxCheckAfter = 7 * 24 * time.Hour
)

func parseCheckAfter(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var d time.Duration
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, invalid("check_after", `must be a duration such as "10m" or a number of seconds`)
		}
		d = v
	} else {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > int64(maxCheckAfter/time.Second) || n < 0 {
			return 0, invalid("check_after", `must be a duration such as "10m" or a whole number of seconds`)
		}
		d = time.Duration(n) * time.Second
	}
	if d < minCheckAfter || d > maxCheckAfter {
		return 0, invalid("check_after", fmt.Sprintf("must be between %v and %v", minCheckAfter, maxCheckAfter))
	}
	return d, nil
}

// validIdempotencyKey accepts 1–255 printable ASCII characters.
func validIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// boundedList decodes a JSON array of at most group.MaxRecipients
// elements and stops reading at the first one over, so an oversized list
// is refused before it is held in memory, let alone validated.
type boundedList[T any] []T

func (l *boundedList[T]) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*l = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		var zero []T
		return json.Unmarshal(data, &zero) // the decoder's own type error
	}
	var out []T
	var v0 T
	n := 0
	for dec.More() {
		n++
		if n > group.MaxRecipients {
			total := n
			for dec.More() { // count without keeping, for the message
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					break
				}
				total++
			}
			fe := group.TooMany(total)
			if _, ok := any(v0).(group.RecipientInput); ok {
				fe.Field = "recipients"
			}
			return &apiError{Status: http.StatusBadRequest, Code: codeInvalidRequest, Message: fe.Error(),
				Fields: []group.FieldError{*fe}}
		}
		var v T
		if err := dec.Decode(&v); err != nil {
			return err
		}
		out = append(out, v)
	}
	*l = out
	return nil
}

func (a *api) createGroup(w http.ResponseWriter, r *http.Request) error {
	with := true
	if s := r.URL.Query().Get("recipients"); s != "" {
		// A 100,000-person group's roster is a large answer: a client that
		// reads it later may ask for the group alone.
		b, err := strconv.ParseBool(s)
		if err != nil {
			return invalid("recipients", "must be 0, 1, true or false")
		}
		with = b
	}
	var body createRequest
	if err := decodeJSON(w, r, a.cfg.MaxCreateBodyBytes, &body); err != nil {
		return err
	}
	checkAfter, err := parseCheckAfter(body.CheckAfter)
	if err != nil {
		return err
	}
	opts := tracker.CreateOptions{CheckAfter: checkAfter, By: by(r)}
	if vs, ok := r.Header["Idempotency-Key"]; ok {
		if len(vs) != 1 || !validIdempotencyKey(vs[0]) {
			return invalid("Idempotency-Key", "must be 1 to 255 printable ASCII characters")
		}
		opts.IdempotencyKey = vs[0]
	}
	req, err := a.request(r.Context(), body)
	if err != nil {
		return err
	}
	id, created, err := a.svc.Create(r.Context(), req, opts)
	if err != nil {
		return err
	}
	g, err := a.groupView(r.Context(), id, with)
	if err != nil {
		return fmt.Errorf("read created group: %w", err)
	}
	w.Header().Set("Location", "/v1/groups/"+id)
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	writeJSON(w, status, g)
	return nil
}

// ---- reads ----

// groupView reads a group's projection, with its roster in the order the
// client gave it (the group.created event's order) when withRecipients.
func (a *api) groupView(ctx context.Context, id string, withRecipients bool) (apitype.Group, error) {
	var row store.GroupRow
	var rows []store.DeliveryRow
	var err error
	if withRecipients {
		// One read: the status and counts agree with the recipients.
		row, rows, err = a.store.GroupSnapshot(ctx, id)
	} else {
		row, err = a.store.GetGroup(ctx, id)
	}
	if err != nil {
		return apitype.Group{}, err
	}
	g := groupOf(row)
	pol, err := a.policyOf(ctx, id)
	if err != nil {
		return apitype.Group{}, err
	}
	g.Policy = pol.group()
	g.Callout = pol.callout()
	if !withRecipients {
		return g, nil
	}
	roster, err := a.roster(ctx, id)
	if err != nil {
		return apitype.Group{}, err
	}
	index := make(map[string]int, len(roster))
	for i, e := range roster {
		index[e.Number] = i
	}
	slices.SortStableFunc(rows, func(x, y store.DeliveryRow) int {
		ix, okx := index[x.Number]
		iy, oky := index[y.Number]
		switch {
		case okx && oky:
			return ix - iy
		case okx:
			return -1
		case oky:
			return 1
		}
		return strings.Compare(x.Number, y.Number)
	})
	marked, err := a.resolvedBy(ctx, id)
	if err != nil {
		return apitype.Group{}, err
	}
	g.Recipients = make([]apitype.Recipient, len(rows))
	for i, d := range rows {
		rj := recipientOf(d)
		rj.Text = g.Text
		if k, ok := index[d.Number]; ok {
			rj.ContactID = roster[k].ContactID
			if who, ok := marked[k]; ok {
				rj.ResolvedBy = &who
			}
			if roster[k].Text != "" {
				rj.Text = roster[k].Text
			}
		}
		if d.Code != "" { // the hint they were sent names their code
			rj.Text = group.WithCodedHint(rj.Text, g.Responses, d.Code)
		}
		rj.RecipientPolicy = pol.recipient(d.Number)
		rj.RecipientCallout = pol.recipientCallout(d.Number)
		g.Recipients[i] = rj
	}
	return g, nil
}

// errStop ends a journal Load early.
var errStop = errors.New("stop")

// createdEvent reads the group.created event, the first in the group's
// journal; nil when the journal has none.
func (a *api) createdEvent(ctx context.Context, id string) (*group.Created, error) {
	return a.loadCreated(ctx, id, func(data []byte) (group.Created, error) {
		ev, err := group.Decode(group.TypeCreated, data)
		if err != nil {
			return group.Created{}, err
		}
		return ev.(group.Created), nil
	})
}

// createdHead is createdEvent without the roster (Recipients nil), which
// it skips undecoded: the group view asks only whether the group has a
// policy, and a 100,000-person roster costs about 200 ms to decode.
func (a *api) createdHead(ctx context.Context, id string) (*group.Created, error) {
	return a.loadCreated(ctx, id, group.DecodeCreatedHead)
}

// loadCreated decodes the group.created event of group id with decode;
// nil when the journal does not start with one.
func (a *api) loadCreated(ctx context.Context, id string, decode func([]byte) (group.Created, error)) (*group.Created, error) {
	var created *group.Created
	err := a.store.Load(ctx, id, 0, func(e actor.Event) error {
		if e.Type == group.TypeCreated {
			c, err := decode(e.Data)
			if err != nil {
				return err
			}
			created = &c
		}
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("load group.created: %w", err)
	}
	return created, nil
}

// roster returns the group's roster from its group.created event (the
// first in its journal), or nil when the journal has none.
func (a *api) roster(ctx context.Context, id string) ([]group.RosterEntry, error) {
	created, err := a.createdEvent(ctx, id)
	if err != nil {
		return nil, err
	}
	if created == nil {
		return nil, nil
	}
	return created.Recipients, nil
}

func (a *api) getGroup(w http.ResponseWriter, r *http.Request) error {
	with := true
	if s := r.URL.Query().Get("recipients"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return invalid("recipients", "must be 0, 1, true or false")
		}
		with = b
	}
	g, err := a.groupView(r.Context(), r.PathValue("id"), with)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, g)
	return nil
}

type groupListJSON struct {
	Groups     []apitype.Group `json:"groups"`
	NextCursor string          `json:"next_cursor"`
}

func (a *api) listGroups(w http.ResponseWriter, r *http.Request) error {
	q := store.GroupQuery{Status: crewcast.GroupStatus(r.URL.Query().Get("status")), Cursor: r.URL.Query().Get("cursor")}
	switch q.Status {
	case "", crewcast.GroupSending, crewcast.GroupAwaiting, crewcast.GroupComplete, crewcast.GroupCanceled, crewcast.GroupPaused:
	default:
		return invalid("status", "unknown group status")
	}
	if err := groupSearch(r, &q); err != nil {
		return err
	}
	limit, err := queryLimit(r, 1000)
	if err != nil {
		return err
	}
	q.Limit = limit
	rows, next, err := a.store.ListGroups(r.Context(), q)
	if err != nil {
		return err
	}
	out := groupListJSON{Groups: make([]apitype.Group, len(rows)), NextCursor: next}
	for i, g := range rows {
		out.Groups[i] = groupOf(g)
		if err := a.listSendAt(r.Context(), &out.Groups[i]); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// groupSearch reads the list's search parameters q, from, since and
// until into gq.
func groupSearch(r *http.Request, gq *store.GroupQuery) error {
	v := r.URL.Query()
	gq.Text = strings.TrimSpace(v.Get("q"))
	if utf8.RuneCountInString(gq.Text) > 200 {
		return invalid("q", "must be at most 200 characters")
	}
	if s := v.Get("from"); s != "" {
		from, err := normalizeNumber("from", s)
		if err != nil {
			return err
		}
		gq.From = from
	}
	var err error
	if gq.Since, err = queryTime(r, "since"); err != nil {
		return err
	}
	if gq.Until, err = queryTime(r, "until"); err != nil {
		return err
	}
	if !gq.Since.IsZero() && !gq.Until.IsZero() && !gq.Until.After(gq.Since) {
		return invalid("until", "must be after since")
	}
	return nil
}

// listSendAt sets send_at on a listed group that still holds recipients
// (counts.scheduled > 0), so a list can say "Scheduled for …"; it costs
// one journal read for those groups only, none for the others.
func (a *api) listSendAt(ctx context.Context, g *apitype.Group) error {
	if g.Counts["scheduled"] == 0 {
		return nil
	}
	created, err := a.createdHead(ctx, g.ID)
	if err != nil {
		return err
	}
	if created != nil && created.Policy != nil {
		g.SendAt = tsOrNil(created.Policy.SendAt)
	}
	return nil
}

type recipientListJSON struct {
	Recipients []apitype.Recipient `json:"recipients"`
	NextCursor string              `json:"next_cursor"`
}

func (a *api) listRecipients(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	status, err := recipientStatus(r)
	if err != nil {
		return err
	}
	limit, err := queryLimit(r, 10000)
	if err != nil {
		return err
	}
	if _, err := a.store.GetGroup(r.Context(), id); err != nil {
		return err
	}
	rows, next, err := a.store.ListDeliveries(r.Context(), store.DeliveryQuery{
		GroupID: id, Status: status, Cursor: r.URL.Query().Get("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	pol, err := a.policyOf(r.Context(), id)
	if err != nil {
		return err
	}
	out := recipientListJSON{Recipients: make([]apitype.Recipient, len(rows)), NextCursor: next}
	for i, d := range rows {
		out.Recipients[i] = recipientOf(d)
		out.Recipients[i].RecipientPolicy = pol.recipient(d.Number)
		out.Recipients[i].RecipientCallout = pol.recipientCallout(d.Number)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// eventJSON is one journal event.
type eventJSON struct {
	Seq  uint64          `json:"seq"`
	Type string          `json:"type"`
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data"`
}

type eventListJSON struct {
	Events    []eventJSON `json:"events"`
	NextAfter uint64      `json:"next_after"`
	HasMore   bool        `json:"has_more"`
}

// rawJSON returns data as a JSON value, or null when it is not valid JSON
// (a journal written by another version must not break the response).
func rawJSON(data []byte) json.RawMessage {
	if len(data) == 0 || !json.Valid(data) {
		return json.RawMessage("null")
	}
	return json.RawMessage(data)
}

func (a *api) listEvents(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var after uint64
	if s := r.URL.Query().Get("after"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return invalid("after", "must be a journal sequence number")
		}
		after = v
	}
	limit, err := queryLimit(r, 10000)
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = 500
	}
	number := ""
	if s := r.URL.Query().Get("number"); s != "" {
		if number, err = normalizeNumber("number", s); err != nil {
			return err
		}
	}
	if _, err := a.store.GetGroup(r.Context(), id); err != nil {
		return err
	}
	out := eventListJSON{Events: []eventJSON{}, NextAfter: after}
	// A per-recipient timeline needs the roster from the first event, so
	// it reads from the start and skips what is not wanted.
	from := after
	index := -1
	if number != "" {
		from = 0
	}
	err = a.store.Load(r.Context(), id, from, func(e actor.Event) error {
		if number != "" && e.Type == group.TypeCreated && index < 0 {
			if ev, err := group.Decode(e.Type, e.Data); err == nil {
				for i, re := range ev.(group.Created).Recipients {
					if re.Number == number {
						index = i
						break
					}
				}
			}
		}
		if e.Seq <= after {
			return nil
		}
		if number != "" && !touches(e, index) {
			return nil
		}
		if len(out.Events) == limit {
			out.HasMore = true
			return errStop
		}
		out.Events = append(out.Events, eventJSON{Seq: e.Seq, Type: e.Type, Time: e.Time.UTC(), Data: rawJSON(e.Data)})
		out.NextAfter = e.Seq
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if number != "" && index < 0 {
		return notFound("recipient")
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// touches reports whether a journal event belongs to recipient index's
// timeline: events naming the recipient, and group-wide events.
func touches(e actor.Event, index int) bool {
	ev, err := group.Decode(e.Type, e.Data)
	if err != nil {
		return true // unknown to this version: show it rather than hide it
	}
	idx := group.Indices(ev)
	return idx == nil || slices.Contains(idx, index)
}

// ---- operator actions ----

func (a *api) afterAction(w http.ResponseWriter, r *http.Request, err error) error {
	if err != nil {
		return err
	}
	g, err := a.groupView(r.Context(), r.PathValue("id"), true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, g)
	return nil
}

func (a *api) cancelGroup(w http.ResponseWriter, r *http.Request) error {
	return a.afterAction(w, r, a.svc.Cancel(r.Context(), r.PathValue("id"), by(r)))
}

func (a *api) resumeGroup(w http.ResponseWriter, r *http.Request) error {
	return a.afterAction(w, r, a.svc.Resume(r.Context(), r.PathValue("id"), by(r)))
}

func (a *api) resolveRecipient(w http.ResponseWriter, r *http.Request) error {
	number, err := pathNumber(r)
	if err != nil {
		return err
	}
	var body struct {
		Outcome string `json:"outcome"`
	}
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		return err
	}
	if body.Outcome != group.ResolveDelivered && body.Outcome != group.ResolveNotDelivered {
		return invalid("outcome", fmt.Sprintf("must be %q or %q", group.ResolveDelivered, group.ResolveNotDelivered))
	}
	return a.afterAction(w, r, a.svc.Resolve(r.Context(), r.PathValue("id"), number, body.Outcome, by(r)))
}

func (a *api) retryRecipient(w http.ResponseWriter, r *http.Request) error {
	number, err := pathNumber(r)
	if err != nil {
		return err
	}
	return a.afterAction(w, r, a.svc.Retry(r.Context(), r.PathValue("id"), number, by(r)))
}
