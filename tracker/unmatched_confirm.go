package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
)

// Confirmations of unmatched keyword replies (docs/design.md §18): a STOP
// or HELP from a number in no group is answered like one from a recipient
// (--opt-out-reply TEXT, --help-reply TEXT), at most once per keyword
// reply. The claim is a journal event of the unmatched journal committed
// with the reply itself, so a webhook delivered again (a reply already
// recorded) claims nothing; the send goes through the send pool after the
// commit, and its outcome is journaled after it. A process that dies in
// between leaves a claim without an outcome: nothing sends it again (the
// claim is only acted on in the process that made it), so the
// confirmation is, honestly, unconfirmed.
//
// The journal events carry the inbox event's name, not the number or the
// text (those live in the replies projection, which retention redacts).

// confirmOutcomeTimeout bounds journaling one outcome.
const confirmOutcomeTimeout = 10 * time.Second

const (
	typeUnmatchedConfirmClaimed = "confirm.claimed"
	typeUnmatchedConfirmOutcome = "confirm.outcome"
)

// unmatchedConfirm is the claim of one confirmation.
type unmatchedConfirm struct {
	SendID   string `json:"send_id"`
	Keyword  string `json:"keyword"`
	Provider string `json:"provider"`
	EventID  string `json:"event_id"` // the keyword reply's inbox event
}

// unmatchedConfirmOutcome is what became of a claimed confirmation:
// status sent, failed, not_sent or unconfirmed.
type unmatchedConfirmOutcome struct {
	SendID    string `json:"send_id"`
	Status    string `json:"status"`
	MessageID string `json:"message_id,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// confirmSendID names the confirmation of one inbound event; the "k"
// prefix makes it a confirmation to the send guard (group.IsConfirmSend),
// which lets it reach the number its own STOP just suppressed.
func confirmSendID(ev crewcast.Event) string { return "k-" + ev.Provider + "-" + ev.EventID }

// confirmClaims returns the claim events and the send jobs of the
// confirmations the events' keyword replies call for.
func (u *unmatchedJournal) confirmClaims(events []crewcast.Event, kws []group.Classification) ([]actor.Event, []sendJob, error) {
	if u.deps.confirmText == nil || u.deps.submit == nil {
		return nil, nil, nil
	}
	var claims []actor.Event
	var jobs []sendJob
	for i, ev := range events {
		text := u.deps.confirmText(kws[i].Keyword)
		if text == "" {
			continue
		}
		id := confirmSendID(ev)
		data, err := json.Marshal(unmatchedConfirm{SendID: id, Keyword: kws[i].Keyword, Provider: ev.Provider, EventID: ev.EventID})
		if err != nil {
			return nil, nil, err
		}
		claims = append(claims, actor.Event{Type: typeUnmatchedConfirmClaimed, Data: data, Time: u.deps.clock.Now()})
		jobs = append(jobs, sendJob{groupID: unmatchedKey, send: group.Send{ID: id}, answer: u.settleConfirm,
			req: crewcast.SendRequest{From: ev.To, To: []string{ev.From}, Text: text,
				IdempotencyKey: group.ClaimKey(unmatchedKey, id)}})
	}
	return claims, jobs, nil
}

// keywordAmbiguous is the claim's keyword for the listing that answers
// an ambiguous reply (replycodes.go).
const keywordAmbiguous = "ambiguous"

// listingClaim is the claim event and the send job of the one message
// listing a person's open requests after their ambiguous reply ev.
func (u *unmatchedJournal) listingClaim(ev crewcast.Event, text string) (actor.Event, sendJob, error) {
	id := listingSendID(ev)
	data, err := json.Marshal(unmatchedConfirm{SendID: id, Keyword: keywordAmbiguous, Provider: ev.Provider, EventID: ev.EventID})
	if err != nil {
		return actor.Event{}, sendJob{}, err
	}
	return actor.Event{Type: typeUnmatchedConfirmClaimed, Data: data, Time: u.deps.clock.Now()},
		sendJob{groupID: unmatchedKey, send: group.Send{ID: id}, answer: u.settleConfirm,
			req: crewcast.SendRequest{From: ev.To, To: []string{ev.From}, Text: text,
				IdempotencyKey: group.ClaimKey(unmatchedKey, id)}}, nil
}

// settleConfirm journals the provider's answer to a confirmation send. A
// failure to journal it is logged: the claim then stays without an
// outcome, which reads as unconfirmed, and nothing is sent again.
func (u *unmatchedJournal) settleConfirm(r sendResult) {
	o := unmatchedConfirmOutcome{SendID: r.send.ID, Status: "sent", MessageID: r.res.MessageID}
	if r.err != nil {
		o.Status, o.MessageID = "failed", ""
		o.Detail = r.err.Error()
		var se *crewcast.SendError
		var sup *group.SuppressedAtSend
		if errors.As(r.err, &sup) {
			// A listing (replycodes.go) to a number suppressed since its
			// ambiguous reply: checked before the call, never made.
			o.Status = "not_sent"
		} else if errors.As(r.err, &se) {
			switch se.Class {
			case crewcast.ClassNotSent:
				o.Status = "not_sent"
			case crewcast.ClassUncertain:
				o.Status = "unconfirmed"
			}
		} else {
			o.Status = "unconfirmed" // no verdict from the provider: it may have gone out
		}
	}
	if err := u.persistOutcome(o); err != nil {
		u.deps.log.Warn("record unmatched confirmation outcome", "err", err.Error())
	}
}

func (u *unmatchedJournal) persistOutcome(o unmatchedConfirmOutcome) error {
	ctx, cancel := context.WithTimeout(context.Background(), confirmOutcomeTimeout)
	defer cancel()
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	if err := u.lock(ctx); err != nil {
		return err
	}
	defer u.unlock()
	if u.j == nil {
		return errors.New("the tracker has not started")
	}
	unit := u.j.Stamp(actor.Unit{Events: []actor.Event{{Type: typeUnmatchedConfirmOutcome, Data: data, Time: u.deps.clock.Now()}}})
	if err := u.j.Persist(ctx, unit); err != nil {
		if errors.Is(err, actor.ErrConflict) {
			if lerr := u.readHead(ctx); lerr != nil {
				err = errors.Join(err, lerr)
			}
		}
		return fmt.Errorf("persist: %w", err)
	}
	u.deps.hub.Publish(Change{GroupID: unmatchedKey, Seq: u.j.Seq()})
	return nil
}
