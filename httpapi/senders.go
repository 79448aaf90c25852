package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// Senders (docs/design.md §16): the numbers crewcast may send from. Every
// route needs the admin scope: a sender decides where messages go and
// what a carrier is told about them.

// Audit actions of sender changes; the target names the number by its
// last four digits, like every number in the log (store.AuditNumber).
const (
	auditSenderCreated = "sender.created"
	auditSenderUpdated = "sender.updated"
	auditSenderDeleted = "sender.deleted"
)

// SenderHealth tells the senders routes how each sender's provider is
// doing. nil: every sender is reported healthy.
type SenderHealth interface {
	// Healthy reports whether numbers of provider may be sent from now
	// (configured, its circuit not open).
	Healthy(provider string) bool
}

// sentWindow is the window of sent_last_hour.
const sentWindow = time.Hour

type registrationJSON struct {
	Kind       string `json:"kind"`
	CampaignID string `json:"campaign_id"`
	Status     string `json:"status"`
}

type senderJSON struct {
	Number       string           `json:"number"`
	Provider     string           `json:"provider"`
	Pool         string           `json:"pool"`
	MPS          float64          `json:"mps"`
	Registration registrationJSON `json:"registration"`
	Healthy      bool             `json:"healthy"`
	SentLastHour int              `json:"sent_last_hour"`
	CreatedAt    time.Time        `json:"created_at"`
	UpdatedAt    time.Time        `json:"updated_at"`
}

// senderOf renders s; sent holds the sends of the last hour by number
// (sentLastHour).
func (a *api) senderOf(s store.Sender, sent map[string]int) senderJSON {
	out := senderJSON{Number: s.Number, Provider: s.Provider, Pool: s.Pool, MPS: s.MPS,
		Registration: registrationJSON{Kind: s.Registration.Kind, CampaignID: s.Registration.CampaignID, Status: s.Registration.Status},
		Healthy:      true, SentLastHour: sent[s.Number], CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC()}
	if h := a.cfg.SenderHealth; h != nil {
		out.Healthy = h.Healthy(s.Provider)
	}
	return out
}

// sentLastHour counts the sends claimed in the last hour by the from
// number of their group (one query for every sender listed).
func (a *api) sentLastHour(ctx context.Context) (map[string]int, error) {
	return a.store.SentSince(ctx, a.now().Add(-sentWindow))
}

// writeSender answers with one sender and its sends of the last hour.
func (a *api) writeSender(w http.ResponseWriter, r *http.Request, status int, s store.Sender) error {
	sent, err := a.sentLastHour(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, status, a.senderOf(s, sent))
	return nil
}

// senderBody is the body of POST and PATCH; absent fields are nil (PATCH
// keeps them).
type senderBody struct {
	Number       *string  `json:"number"`
	Provider     *string  `json:"provider"`
	Pool         *string  `json:"pool"`
	MPS          *float64 `json:"mps"`
	Registration *struct {
		Kind       *string `json:"kind"`
		CampaignID *string `json:"campaign_id"`
		Status     *string `json:"status"`
	} `json:"registration"`
}

// apply sets the body's fields on s and checks the result.
func (b *senderBody) apply(s *store.Sender) error {
	if b.Provider != nil {
		s.Provider = *b.Provider
	}
	if s.Provider != store.ProviderTelnyx && s.Provider != store.ProviderTwilio {
		return invalid("provider", `"telnyx" or "twilio"`)
	}
	if b.Pool != nil {
		s.Pool = strings.TrimSpace(*b.Pool)
	}
	if len(s.Pool) > 64 {
		return invalid("pool", "at most 64 characters")
	}
	if r := b.Registration; r != nil {
		set(&s.Registration.Kind, r.Kind)
		set(&s.Registration.CampaignID, r.CampaignID)
		set(&s.Registration.Status, r.Status)
	}
	if err := checkRegistration(s.Registration); err != nil {
		return err
	}
	if b.MPS != nil {
		s.MPS = *b.MPS
	}
	if s.MPS == 0 {
		s.MPS = store.DefaultMPS(s.Registration.Kind)
	}
	if s.MPS < 0.01 || s.MPS > 1000 {
		return invalid("mps", "between 0.01 and 1000 messages a second")
	}
	return nil
}

func set(dst *string, v *string) {
	if v != nil {
		*dst = strings.TrimSpace(*v)
	}
}

func checkRegistration(r store.Registration) error {
	switch r.Kind {
	case store.RegistrationNone, store.Registration10DLC, store.RegistrationTollFree, store.RegistrationShortCode:
	default:
		return invalid("registration.kind", `"10dlc", "toll_free", "short_code" or "none"`)
	}
	switch r.Status {
	case store.RegistrationApproved, store.RegistrationPending, store.RegistrationRejected, store.RegistrationUnknown:
	default:
		return invalid("registration.status", `"approved", "pending", "rejected" or "unknown"`)
	}
	if len(r.CampaignID) > 100 {
		return invalid("registration.campaign_id", "at most 100 characters")
	}
	return nil
}

func (a *api) createSender(w http.ResponseWriter, r *http.Request) error {
	var body senderBody
	if err := decodeJSON(w, r, 8<<10, &body); err != nil {
		return err
	}
	if body.Number == nil {
		return invalid("number", "required: the number in international format, such as +15550100000")
	}
	number, err := group.NormalizeNumber(*body.Number)
	if err != nil {
		return invalid("number", "use international format, such as +15550100000")
	}
	s := store.Sender{Number: number, Registration: store.Registration{Kind: store.RegistrationNone, Status: store.RegistrationUnknown}}
	if err := body.apply(&s); err != nil {
		return err
	}
	now := a.now().UTC()
	s.CreatedAt, s.UpdatedAt = now, now
	if err := a.store.CreateSender(r.Context(), s, a.auditEntry(r, auditSenderCreated, store.AuditNumber(s.Number))); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return newError(http.StatusConflict, codeConflict, "this number is already a sender")
		}
		return err
	}
	a.sendersChanged(r)
	w.Header().Set("Location", "/v1/senders/"+s.Number)
	return a.writeSender(w, r, http.StatusCreated, s)
}

func (a *api) getSenderRow(r *http.Request) (store.Sender, error) {
	s, err := a.store.GetSender(r.Context(), r.PathValue("number"))
	if errors.Is(err, actor.ErrNotFound) {
		return s, notFound("sender")
	}
	return s, err
}

func (a *api) listSenders(w http.ResponseWriter, r *http.Request) error {
	ss, err := a.store.ListSenders(r.Context())
	if err != nil {
		return err
	}
	sent, err := a.sentLastHour(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Senders []senderJSON `json:"senders"`
	}{Senders: make([]senderJSON, len(ss))}
	for i, s := range ss {
		out.Senders[i] = a.senderOf(s, sent)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) getSender(w http.ResponseWriter, r *http.Request) error {
	s, err := a.getSenderRow(r)
	if err != nil {
		return err
	}
	return a.writeSender(w, r, http.StatusOK, s)
}

func (a *api) patchSender(w http.ResponseWriter, r *http.Request) error {
	var body senderBody
	if err := decodeJSON(w, r, 8<<10, &body); err != nil {
		return err
	}
	s, err := a.getSenderRow(r)
	if err != nil {
		return err
	}
	if body.Number != nil && *body.Number != s.Number {
		return invalid("number", "a sender's number cannot change; remove it and add the new one")
	}
	before := s
	if err := body.apply(&s); err != nil {
		return err
	}
	if s == before { // a request that changes nothing writes (and logs) nothing
		return a.writeSender(w, r, http.StatusOK, s)
	}
	s.UpdatedAt = a.now().UTC()
	if err := a.store.UpdateSender(r.Context(), s, a.auditEntry(r, auditSenderUpdated, store.AuditNumber(s.Number))); err != nil {
		if errors.Is(err, actor.ErrNotFound) {
			return notFound("sender")
		}
		return err
	}
	a.sendersChanged(r)
	return a.writeSender(w, r, http.StatusOK, s)
}

func (a *api) deleteSender(w http.ResponseWriter, r *http.Request) error {
	number := r.PathValue("number")
	if err := a.store.DeleteSender(r.Context(), number, a.auditEntry(r, auditSenderDeleted, store.AuditNumber(number))); err != nil {
		if errors.Is(err, actor.ErrNotFound) {
			return notFound("sender")
		}
		return err
	}
	a.sendersChanged(r)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// sendersChanged tells the sending side that the senders changed.
func (a *api) sendersChanged(r *http.Request) {
	if f := a.cfg.SendersChanged; f != nil {
		f(r.Context())
	}
}

// checkRegistered refuses a group sent from a registered sender that may
// not send yet: a 10DLC or toll-free number whose registration is not
// approved (422 sender_unregistered), unless the server allows it. A from
// that is no registered sender is not checked here.
func (a *api) checkRegistered(ctx context.Context, from string) error {
	if a.cfg.AllowUnregistered || strings.TrimSpace(from) == "" {
		return nil
	}
	number, err := group.NormalizeNumber(from)
	if err != nil {
		return nil // the plan reports a malformed from
	}
	s, err := a.store.GetSender(ctx, number)
	if errors.Is(err, actor.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if s.NeedsApproval() {
		return unregistered(s)
	}
	return nil
}

func unregistered(s store.Sender) *apiError {
	kind := "10DLC"
	if s.Registration.Kind == store.RegistrationTollFree {
		kind = "toll-free"
	}
	msg := fmt.Sprintf("sender %s is a %s number whose registration is %s, not approved: carriers block its messages; "+
		"wait for approval (PATCH /v1/senders/%s when it comes) or run the server with --allow-unregistered",
		s.Number, kind, s.Registration.Status, s.Number)
	return &apiError{Status: http.StatusUnprocessableEntity, Code: codeSenderUnregistered, Message: msg,
		Fields: []group.FieldError{{Field: "from", Message: msg}}}
}
