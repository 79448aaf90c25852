// Package apitype declares, once, the JSON shapes crewcast's API answers
// with and its outbound webhooks carry: a group, a recipient, a delivery, a
// reply, their counts. The server (httpapi), the webhook events
// (webhookout) and the command line (cmd/crewcast) all marshal or decode
// these types, so a field added here reaches all three, and a test in
// httpapi checks them against docs/openapi.yaml. It holds types only: the
// rendering of store rows into them stays with whoever reads the store
// (docs/architecture.md, "One package of wire types").
package apitype

import (
	"time"

	"github.com/crewcast/crewcast/group"
)

// Counts is a group's counts: one number per status and outcome, and the
// tally per response option nested under "responses". The domain owns its
// encoding (group.CountsJSON); this is the same type.
type Counts = group.CountsJSON

// ResponseOption is one answer a group asks for (key, label and the ack it
// counts as).
type ResponseOption = group.Option

// Group is a group as GET /v1/groups/{id} shows it. Recipients are present
// only where the operation lists them; a webhook event's group carries the
// base fields only (responses, quorum, policy and callout fields are all
// omitted when empty).
type Group struct {
	ID          string     `json:"id"`
	Status      string     `json:"status"`
	PauseReason string     `json:"pause_reason"`
	Mode        string     `json:"mode"`
	From        string     `json:"from"`
	Text        string     `json:"text"`
	CreatedAt   *time.Time `json:"created_at"`
	UpdatedAt   *time.Time `json:"updated_at"`
	Seq         uint64     `json:"seq"`
	Counts      Counts     `json:"counts"`
	// Responses are the answers the group asks for and Quorum how many of
	// one it needs (docs/design.md §11); absent when it asks for none.
	Responses  []ResponseOption `json:"responses,omitempty"`
	Quorum     *Quorum          `json:"quorum,omitempty"`
	Recipients []Recipient      `json:"recipients,omitempty"`
	Policy
	Callout
}

// Quorum is a group's quorum: met_at is null until it is met.
type Quorum struct {
	Response    string     `json:"response"`
	Count       int        `json:"count"`
	KeepSending bool       `json:"keep_sending"`
	Exact       bool       `json:"exact"`
	MetAt       *time.Time `json:"met_at"`
}

// Policy is a group's policy (docs/design.md §12): when it sends, its
// follow-ups, escalation and quiet hours; every field is absent for a group
// without one.
type Policy struct {
	SendAt      *time.Time `json:"send_at,omitempty"`
	Priority    string     `json:"priority,omitempty"`
	Followup    *Followup  `json:"followup,omitempty"`
	Escalate    *Escalate  `json:"escalate,omitempty"`
	QuietHours  string     `json:"quiet_hours,omitempty"`
	EscalatedAt *time.Time `json:"escalated_at,omitempty"`
}

// Followup is a group's follow-up: after how long, how many, what text, and
// the ladder's steps (docs/design.md §17).
type Followup struct {
	After string         `json:"after"`
	Max   int            `json:"max"`
	Text  string         `json:"text"`
	Steps []FollowupStep `json:"steps,omitempty"`
}

// FollowupStep is one step of a follow-up ladder.
type FollowupStep struct {
	After   string `json:"after"`
	Channel string `json:"channel"`
	Text    string `json:"text,omitempty"`
}

// Escalate is who hears of a group nobody answered, and when.
type Escalate struct {
	After string   `json:"after"`
	Crews []string `json:"crews"`
	To    []string `json:"to"`
	Text  string   `json:"text"`
}

// Callout is a group's callout fields (waves, exact quotas).
type Callout struct {
	Waves         *Waves `json:"waves,omitempty"`
	ConfirmedText string `json:"confirmed_text,omitempty"`
	FilledText    string `json:"filled_text,omitempty"`
}

// Waves is a group's waves: what was asked, how many went, and when the
// next is due (null: none will be unless answers change).
type Waves struct {
	Size   int        `json:"size"`
	Every  string     `json:"every"`
	Sent   int        `json:"sent"`
	NextAt *time.Time `json:"next_at"`
}

// Recipient is one recipient of a group, as GET /v1/groups/{id}/recipients
// and the recipient.* webhook events show it.
type Recipient struct {
	Number            string     `json:"number"`
	Name              string     `json:"name"`
	Status            string     `json:"status"`
	Attempts          int        `json:"attempts"`
	ProviderMessageID string     `json:"provider_message_id"`
	ErrorCode         string     `json:"error_code"`
	ErrorClass        string     `json:"error_class"`  // errcode.Class: a carrier verdict or the base class
	ErrorDetail       string     `json:"error_detail"` // plain language, from package errcode
	ErrorURL          string     `json:"error_url"`    // the provider's page about error_code
	ClaimedAt         *time.Time `json:"claimed_at"`
	SentAt            *time.Time `json:"sent_at"`
	DeliveredAt       *time.Time `json:"delivered_at"`
	FailedAt          *time.Time `json:"failed_at"`
	RepliedAt         *time.Time `json:"replied_at"`
	ReplyText         string     `json:"reply_text"`
	Ack               string     `json:"ack"`
	UpdatedAt         *time.Time `json:"updated_at"`
	// ContactID, Text and Response (docs/design.md §11): the contact this
	// recipient was chosen as, the text they were sent (rendered for them),
	// and the key of the response option they chose last.
	ContactID string `json:"contact_id"`
	Text      string `json:"text"`
	Response  string `json:"response"`
	// Code is the recipient's reply code for this group when their texts
	// show one (docs/design.md §15); absent otherwise.
	Code string `json:"code,omitempty"`
	// ResolvedBy is who confirmed the recipient delivered by hand (a
	// user's or key's name; "" when the name is not known); nil when no
	// one did.
	ResolvedBy *string `json:"resolved_by,omitempty"`
	RecipientPolicy
	RecipientCallout
}

// RecipientPolicy is a recipient's follow-up and hold state.
type RecipientPolicy struct {
	FollowupsSent  int        `json:"followups_sent"`
	NextFollowupAt *time.Time `json:"next_followup_at"`
	HeldUntil      *time.Time `json:"held_until"`
	// AnsweredBy is the channel of the standing answer (sms, voice, email).
	AnsweredBy string `json:"answered_by,omitempty"`
}

// RecipientCallout is a recipient's wave and selection: wave is absent
// until they are texted.
type RecipientCallout struct {
	Wave     int  `json:"wave,omitempty"`
	Selected bool `json:"selected"`
	Standby  bool `json:"standby"`
}

// Delivery is a recipient in a delivery report, which spans groups.
type Delivery struct {
	GroupID string `json:"group_id"`
	Recipient
}

// Reply is an inbound message as GET /v1/replies and the
// inbound.unmatched webhook event show it.
type Reply struct {
	Provider   string     `json:"provider"`
	EventID    string     `json:"event_id"`
	GroupID    string     `json:"group_id"` // "" when it matched no group
	Number     string     `json:"number"`
	To         string     `json:"to"`
	Text       string     `json:"text"`
	Media      []string   `json:"media"`
	ReceivedAt *time.Time `json:"received_at"`
	// PossibleOptOut: a stop word among other words, for a person to decide.
	PossibleOptOut bool `json:"possible_opt_out"`
	// Ambiguous: a bare answer while several of the person's groups were
	// open (docs/design.md §15); applied to none.
	Ambiguous bool `json:"ambiguous"`
}
