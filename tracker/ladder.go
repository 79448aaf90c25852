package tracker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
)

// Follow-up ladders (docs/design.md §17, group/ladder.go). A ladder step
// is claimed exactly like a text follow-up (group.ClaimFollowups, the
// claim committed before any call); only the call differs: an email step
// goes through the Mailer instead of the provider, in the same send pool,
// behind the same guard (an answer committed while it waits stops it). A
// step on a channel the tracker has no sender for is refused when the
// group is created, never sent as a text instead.

// Mailer sends the email step of a ladder (package email, wired by the
// server). A *group.StepSkipped error says the step was not made and why;
// any other error is classified like a provider's (*crewcast.SendError),
// unclassified meaning uncertain.
type Mailer interface {
	MailStep(ctx context.Context, m MailStep) error
}

// MailStep is one email step to one person.
type MailStep struct {
	GroupID string
	SendID  string // the claim's send id: with GroupID, the mail's identity
	// Recipient is the person's index in the roster (the answer links
	// name it).
	Recipient int
	To        string // the contact's email; "" when it has none
	Text      string
	Options   []group.Option
}

// ladderChannels are the channels whose steps the tracker can send.
func (t *Tracker) ladderChannels() []string {
	out := []string{group.ChannelSMS}
	if t.cfg.Caller != nil {
		out = append(out, group.ChannelVoice)
	}
	if t.cfg.Mailer != nil {
		out = append(out, group.ChannelEmail)
	}
	return out
}

// checkLadder refuses a policy whose ladder uses a channel the tracker
// cannot send on.
func (t *Tracker) checkLadder(p *group.Policy) error {
	if p == nil || p.Followup == nil {
		return nil
	}
	have := t.ladderChannels()
	var ferrs []group.FieldError
	for i, s := range p.Followup.Steps {
		if !slices.Contains(have, s.Channel) {
			ferrs = append(ferrs, group.FieldError{Field: fmt.Sprintf("followup.steps[%d].channel", i),
				Message: fmt.Sprintf("%s steps are not available on this server", s.Channel), Unprocessable: true})
		}
	}
	if len(ferrs) > 0 {
		return &ValidationError{Fields: ferrs, Total: len(ferrs)}
	}
	return nil
}

// channelJob is the send of a claimed follow-up that is not a text (an
// email step); false for a text. The contact's address is read here, in
// the actor, so the job carries it; a missing address makes the job
// answer StepSkipped.
func (a *groupActor) channelJob(c *actor.Context[groupMsg], s group.FollowupSend) (sendJob, bool) {
	g, e := a.g, a.env
	r := g.Recipients[s.Index]
	if g.StepOf(r).Channel == group.ChannelVoice && e.cfg.Caller != nil {
		return a.callJob(s), true
	}
	if g.StepOf(r).Channel != group.ChannelEmail || e.cfg.Mailer == nil {
		return sendJob{}, false
	}
	m := MailStep{GroupID: a.key, SendID: s.ID, Recipient: s.Index, Text: g.FollowupTextFor(r), Options: g.Responses}
	var lookupErr error
	if cs, err := e.st.ContactsByNumbers(c.Context(), []string{r.Number}); err != nil {
		lookupErr = err
	} else {
		m.To = cs[r.Number].Email
	}
	mailer := e.cfg.Mailer
	via := func(ctx context.Context) (crewcast.SendResult, error) {
		switch {
		case lookupErr != nil: // nothing was handed over: certainly not sent
			return crewcast.SendResult{}, &crewcast.SendError{Provider: "smtp", Class: crewcast.ClassNotSent,
				Detail: "the contact could not be read", Err: lookupErr}
		case m.To == "":
			return crewcast.SendResult{}, &group.StepSkipped{Reason: "no email address on the contact"}
		}
		if err := mailer.MailStep(ctx, m); err != nil {
			return crewcast.SendResult{}, err
		}
		return crewcast.SendResult{MessageID: "email:" + group.ClaimKey(m.GroupID, m.SendID)}, nil
	}
	// req names the number only for the guard: a suppressed number gets
	// no step on any channel; the provider is not called (via is).
	return sendJob{groupID: a.key, send: s.Send(), req: crewcast.SendRequest{To: []string{r.Number}}, via: via}, true
}

// EmailProvider names the inbound events an answer link makes (see
// EmailAnswer): they are applied like a text reply from the person.
const EmailProvider = "email"

// EmailAnswer is the inbound event of an answer by email link: the
// option's key as the reply text, from the recipient's number to the
// group's sender, delivered to that group (its id in MessageID) rather
// than routed by conversation. eventID makes replays of the same link
// one event (the inbox dedupes on it).
func EmailAnswer(groupID, eventID, number, groupFrom, option string, at time.Time) crewcast.Event {
	return crewcast.Event{Provider: EmailProvider, EventID: eventID, Kind: crewcast.KindInbound, MessageID: groupID,
		From: number, To: groupFrom, Text: option, OccurredAt: at}
}

// emailAnswerGroup is the group an email answer event goes to.
// So is that of a voice answer or of a call's end (voice.go).
func emailAnswerGroup(ev crewcast.Event) (string, bool) {
	if ev.Provider == EmailProvider && ev.Kind == crewcast.KindInbound && ev.MessageID != "" {
		return ev.MessageID, true
	}
	if ev.Provider == VoiceProvider && (ev.Kind == crewcast.KindInbound || ev.Kind == crewcast.KindCallEnded) && ev.MessageID != "" {
		return ev.MessageID, true
	}
	return "", false
}
