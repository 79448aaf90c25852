// Package webhookout delivers outbound webhooks to customers' systems
// (docs/design.md §13): the events a commit reports (Derive, a pure function
// the group actor calls before committing, so that the outbox rows commit
// with the change), Standard Webhooks signing, sealed secrets, the SSRF
// guarded HTTP client and the delivery worker with its retry schedule.
package webhookout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/errcode"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// Event types (docs/design.md §13).
const (
	GroupCreated       = "group.created"
	GroupCompleted     = "group.completed"
	GroupCanceled      = "group.canceled"
	GroupPaused        = "group.paused"
	GroupQuorumMet     = "group.quorum_met"
	GroupEscalated     = "group.escalated"
	RecipientUpdated   = "recipient.updated"
	RecipientReplied   = "recipient.replied"
	RecipientResponded = "recipient.responded"
	InboundUnmatched   = "inbound.unmatched"
	EndpointDisabled   = "endpoint.disabled"
	// Callouts that fill (docs/architecture.md, "Waves and exact quotas").
	GroupWaveSent       = "group.wave_sent"
	GroupQuorumReopened = "group.quorum_reopened"
	RecipientSelected   = "recipient.selected"
	// Ladders' calls and mail (docs/design.md §17).
	RecipientCallPlaced = "recipient.call_placed"
	RecipientCallEnded  = "recipient.call_ended"
	RecipientEmailSent  = "recipient.email_sent"
	// EndpointTest is the event POST /v1/webhook-endpoints/{id}/test sends
	// (to that endpoint only; nobody subscribes to it).
	EndpointTest = "endpoint.test"
)

// EventTypes are the types an endpoint may subscribe to.
var EventTypes = []string{GroupCreated, GroupCompleted, GroupCanceled, GroupPaused, GroupQuorumMet, GroupEscalated,
	RecipientUpdated, RecipientReplied, RecipientResponded, InboundUnmatched, EndpointDisabled,
	GroupWaveSent, GroupQuorumReopened, RecipientSelected, RecipientCallPlaced, RecipientCallEnded, RecipientEmailSent}

// ValidType reports whether typ may be subscribed to ("*" is every type).
func ValidType(typ string) bool {
	if typ == "*" {
		return true
	}
	for _, t := range EventTypes {
		if t == typ {
			return true
		}
	}
	return false
}

// scope says what an event's data carries.
type scope int

const (
	scopeGroup      scope = iota // data.group
	scopeRecipient               // data.recipient: the index is the journal event's "i"
	scopeRecipients              // one data.recipient per index of the journal event's "i" list
)

type rule struct {
	Type  string
	Scope scope
}

// journalRules maps a journal event type to the webhook event it is
// reported as. Event types added later slot in with one line.
// (recipient.responded is a reply.received that chose a response option,
// docs/design.md §11: Derive adds it beside recipient.replied.)
var journalRules = map[string]rule{
	group.TypeCreated:   {GroupCreated, scopeGroup},
	group.TypeReplied:   {RecipientReplied, scopeRecipient},
	group.TypeQuorumMet: {GroupQuorumMet, scopeGroup},
	// Callouts that fill.
	group.TypeWaveSent:       {GroupWaveSent, scopeGroup},
	group.TypeQuorumReopened: {GroupQuorumReopened, scopeGroup},
	group.TypeSelected:       {RecipientSelected, scopeRecipients},
}

// statusRules maps a group status reached by a commit to its event: the
// group events that are a change of status rather than one journal event.
var statusRules = map[crewcast.GroupStatus]string{
	crewcast.GroupComplete: GroupCompleted,
	crewcast.GroupCanceled: GroupCanceled,
	crewcast.GroupPaused:   GroupPaused,
}

// RecipientChange is one recipient a commit touched.
type RecipientChange struct {
	Row        store.DeliveryRow
	PrevStatus crewcast.Status // its status before the commit
}

// Change is what one commit of a group changed, as Derive needs it.
type Change struct {
	Group      store.GroupRow       // the group row the commit writes
	PrevStatus crewcast.GroupStatus // the group's status before ("" for a new group)
	Events     []actor.Event        // the commit's journal events, with their Seq
	Dirty      []RecipientChange    // recipients the commit wrote
	// Recipient returns the row of recipient i as of the commit.
	Recipient func(i int) (store.DeliveryRow, bool)
	// Extra, when set, gives what the API shows of a recipient beyond its
	// row (contact, own text, follow-ups), by number.
	Extra func(number string) RecipientExtra
	Time  time.Time
}

// Derive returns the outbox rows that report a commit: one per mapped
// journal event, one per group status reached, one recipient.updated per
// recipient whose status changed. It is pure: the same change gives the
// same rows, with the same ids.
func Derive(c Change) []store.OutboxRow {
	var out []store.OutboxRow
	gid := c.Group.ID
	for _, ev := range c.Events {
		r, ok := journalRules[ev.Type]
		if !ok {
			continue
		}
		switch r.Scope {
		case scopeGroup:
			out = append(out, groupRow(r.Type, c.Group, ev.Seq, c.Time))
		case scopeRecipients:
			out = append(out, c.recipientsRows(r.Type, ev)...)
		case scopeRecipient:
			var ix struct {
				I        *int   `json:"i"`
				Response string `json:"response"` // reply.received that chose an option
			}
			if json.Unmarshal(ev.Data, &ix) != nil || ix.I == nil || c.Recipient == nil {
				continue
			}
			if d, ok := c.Recipient(*ix.I); ok {
				rj := c.recipient(d)
				out = append(out, recipientRow(r.Type, gid, rj, ev.Seq, c.Time))
				if ev.Type == group.TypeReplied && ix.Response != "" {
					out = append(out, recipientRow(RecipientResponded, gid, rj, ev.Seq, c.Time))
				}
			}
		}
	}
	out = append(out, c.channelRows(gid)...)
	seq := c.Group.Seq
	if typ, ok := statusRules[c.Group.Status]; ok && c.Group.Status != c.PrevStatus {
		out = append(out, groupRow(typ, c.Group, seq, c.Time))
	}
	for _, d := range c.Dirty {
		// A recipient's first status comes with its group's creation
		// (group.created's counts), not as a change.
		if d.Row.Status != d.PrevStatus && d.PrevStatus != "" {
			out = append(out, recipientRow(RecipientUpdated, gid, c.recipient(d.Row), seq, c.Time))
		}
	}
	return out
}

// channelData is a ladder attempt's event: the recipient, and for a
// call's end its outcome and the digits pressed.
type channelData struct {
	recipientData
	Outcome string `json:"outcome,omitempty"`
	Digits  string `json:"digits,omitempty"`
}

// channelRows reports a commit's ladder attempts: a call placed or a mail
// sent (a follow-up outcome accepted on that channel), a call's end.
func (c Change) channelRows(gid string) []store.OutboxRow {
	var out []store.OutboxRow
	row := func(typ string, i int, seq uint64, outcome, digits string) {
		if c.Recipient == nil {
			return
		}
		d, ok := c.Recipient(i)
		if !ok {
			return
		}
		rj := c.recipient(d)
		out = append(out, store.OutboxRow{MsgID: MsgID(gid, seq, typ, rj.Number), Type: typ, GroupID: gid, Seq: seq, CreatedAt: c.Time,
			Payload: encode(typ, c.Time, channelData{recipientData: recipientData{GroupID: gid, Seq: seq, Recipient: rj}, Outcome: outcome, Digits: digits})})
	}
	for _, ev := range c.Events {
		switch ev.Type {
		case group.TypeFollowupOutcomes:
			var v struct {
				Outcomes []struct {
					I       []int  `json:"i"`
					Result  string `json:"result"`
					Channel string `json:"channel"`
				} `json:"outcomes"`
			}
			if json.Unmarshal(ev.Data, &v) != nil {
				continue
			}
			for _, o := range v.Outcomes {
				typ := map[string]string{group.ChannelVoice: RecipientCallPlaced, group.ChannelEmail: RecipientEmailSent}[o.Channel]
				if typ == "" || o.Result != group.ResultAccepted {
					continue
				}
				for _, i := range o.I {
					row(typ, i, ev.Seq, "", "")
				}
			}
		case group.TypeCallEnded:
			var v struct {
				I       *int   `json:"i"`
				Outcome string `json:"outcome"`
				Digits  string `json:"digits"`
			}
			if json.Unmarshal(ev.Data, &v) == nil && v.I != nil {
				row(RecipientCallEnded, *v.I, ev.Seq, v.Outcome, v.Digits)
			}
		}
	}
	return out
}

// MsgID is the stable webhook-id of the event typ about key at seq
// (subject: a recipient's number, an inbox event, or "").
func MsgID(key string, seq uint64, typ, subject string) string {
	h := sha256.Sum256([]byte(key + "\x00" + strconv.FormatUint(seq, 10) + "\x00" + typ + "\x00" + subject))
	return "msg_" + hex.EncodeToString(h[:16])
}

// Body is the request body of every webhook.
type Body struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

type groupData struct {
	GroupID string        `json:"group_id"`
	Seq     uint64        `json:"seq"`
	Group   apitype.Group `json:"group"`
}

type recipientData struct {
	GroupID   string            `json:"group_id"`
	Seq       uint64            `json:"seq"`
	Recipient apitype.Recipient `json:"recipient"`
}

func encode(typ string, at time.Time, data any) []byte {
	b, err := json.Marshal(Body{Type: typ, Timestamp: at.UTC(), Data: data})
	if err != nil {
		// Only plain strings, numbers and times are encoded.
		panic("webhookout: encode " + typ + ": " + err.Error())
	}
	return b
}

func groupRow(typ string, g store.GroupRow, seq uint64, at time.Time) store.OutboxRow {
	return store.OutboxRow{MsgID: MsgID(g.ID, seq, typ, ""), Type: typ, GroupID: g.ID, Seq: seq, CreatedAt: at,
		Payload: encode(typ, at, groupData{GroupID: g.ID, Seq: seq, Group: GroupOf(g)})}
}

// recipient is d as the API shows it, with the commit's extras.
func (c Change) recipient(d store.DeliveryRow) apitype.Recipient {
	rj := RecipientOf(d)
	if c.Extra != nil {
		addExtra(&rj, c.Extra(d.Number))
	}
	return rj
}

// recipientsRows reports a journal event naming a list of recipients
// ("i": [...]) as one row per recipient.
func (c Change) recipientsRows(typ string, ev actor.Event) []store.OutboxRow {
	var ix struct {
		I []int `json:"i"`
	}
	if json.Unmarshal(ev.Data, &ix) != nil || c.Recipient == nil {
		return nil
	}
	var out []store.OutboxRow
	for _, i := range ix.I {
		if d, ok := c.Recipient(i); ok {
			out = append(out, recipientRow(typ, c.Group.ID, c.recipient(d), ev.Seq, c.Time))
		}
	}
	return out
}

func recipientRow(typ, gid string, rj apitype.Recipient, seq uint64, at time.Time) store.OutboxRow {
	return store.OutboxRow{MsgID: MsgID(gid, seq, typ, rj.Number), Type: typ, GroupID: gid, Seq: seq, CreatedAt: at,
		Payload: encode(typ, at, recipientData{GroupID: gid, Seq: seq, Recipient: rj})}
}

type unmatchedData struct {
	GroupID string        `json:"group_id"` // always "": it matched no group
	Seq     uint64        `json:"seq"`      // in the unmatched journal
	Reply   apitype.Reply `json:"reply"`
}

// Unmatched returns the inbound.unmatched row of an inbound message that
// matched no group, recorded at seq of the journal key.
func Unmatched(key string, seq uint64, r store.Reply, at time.Time) store.OutboxRow {
	media := r.Media
	if media == nil {
		media = []string{}
	}
	data := unmatchedData{Seq: seq, Reply: apitype.Reply{Provider: r.Provider, EventID: r.EventID, Number: r.Number,
		To: r.To, Text: r.Text, Media: media, ReceivedAt: tsOrNil(r.ReceivedAt), PossibleOptOut: r.PossibleOptOut}}
	return store.OutboxRow{MsgID: MsgID(key, seq, InboundUnmatched, r.Provider+":"+r.EventID+":"+r.Number),
		Type: InboundUnmatched, Seq: seq, CreatedAt: at, Payload: encode(InboundUnmatched, at, data)}
}

// EndpointJSON names an endpoint in endpoint.* events.
type EndpointJSON struct {
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
}

type endpointData struct {
	GroupID  string       `json:"group_id"`
	Seq      uint64       `json:"seq"`
	Endpoint EndpointJSON `json:"endpoint"`
}

// Disabled returns the endpoint.disabled row for e disabled at at.
func Disabled(e store.WebhookEndpoint, reason string, at time.Time) store.OutboxRow {
	data := endpointData{Endpoint: EndpointJSON{ID: e.ID, URL: e.URL, DisabledReason: reason, DisabledAt: tsOrNil(at)}}
	return store.OutboxRow{MsgID: MsgID(e.ID, uint64(at.UnixNano()), EndpointDisabled, ""), Type: EndpointDisabled,
		CreatedAt: at, Payload: encode(EndpointDisabled, at, data)}
}

// Test returns a test event addressed to e only.
func Test(e store.WebhookEndpoint, nonce string, at time.Time) store.OutboxRow {
	data := endpointData{Endpoint: EndpointJSON{ID: e.ID, URL: e.URL}}
	return store.OutboxRow{MsgID: MsgID(e.ID, uint64(at.UnixNano()), EndpointTest, nonce), Type: EndpointTest,
		Endpoint: e.ID, CreatedAt: at, Payload: encode(EndpointTest, at, data)}
}

// ---- store rows in the API's shapes (package apitype; httpapi renders them the same way, which a test there checks) ----

// RecipientJSON is the recipient shape of package apitype, under the name
// the tracker's tests decode webhook bodies with.
type RecipientJSON = apitype.Recipient

// RecipientExtra is what the API shows of a recipient beyond its delivery
// row: the contact, the text they were sent, their follow-ups.
type RecipientExtra struct {
	ContactID      string
	Text           string
	FollowupsSent  int
	NextFollowupAt time.Time
	HeldUntil      time.Time
	Wave           int
	Selected       bool
	Standby        bool
}

func addExtra(r *apitype.Recipient, x RecipientExtra) {
	r.ContactID, r.Text, r.FollowupsSent = x.ContactID, x.Text, x.FollowupsSent
	r.NextFollowupAt, r.HeldUntil = tsOrNil(x.NextFollowupAt), tsOrNil(x.HeldUntil)
	r.Wave, r.Selected, r.Standby = x.Wave, x.Selected, x.Standby
}

func tsOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// GroupOf renders a group row as the API does.
func GroupOf(g store.GroupRow) apitype.Group {
	return apitype.Group{ID: g.ID, Status: string(g.Status), PauseReason: g.PauseReason, Mode: string(g.Mode), From: g.From,
		Text: g.Text, CreatedAt: tsOrNil(g.CreatedAt), UpdatedAt: tsOrNil(g.UpdatedAt), Seq: g.Seq, Counts: group.ViewCounts(g.Counts)}
}

// RecipientOf renders a delivery row as the API does.
func RecipientOf(d store.DeliveryRow) apitype.Recipient {
	return apitype.Recipient{Number: d.Number, Name: d.Name, Status: string(d.Status), Attempts: d.Attempts,
		ProviderMessageID: d.ProviderMessageID, ErrorCode: d.ErrorCode, ErrorClass: errcode.Class(d.ErrorCode, d.ErrorClass),
		ErrorDetail: errcode.Detail(d.ErrorCode, d.ErrorClass), ErrorURL: errcode.URL(d.ErrorCode),
		ClaimedAt: tsOrNil(d.ClaimedAt), SentAt: tsOrNil(d.SentAt), DeliveredAt: tsOrNil(d.DeliveredAt),
		FailedAt: tsOrNil(d.FailedAt), RepliedAt: tsOrNil(d.RepliedAt), ReplyText: d.LastReply, Ack: string(d.Ack),
		UpdatedAt: tsOrNil(d.UpdatedAt), Response: d.Response}
}
