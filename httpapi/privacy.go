package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/tracker"
)

// Privacy drives retention and erasure (docs/design.md §6). A nil Privacy
// answers 404 on its routes.
type Privacy interface {
	// RetentionStatus is the schedule and the last pass.
	RetentionStatus() tracker.RetentionStatus
	// RunRetention makes one pass now.
	RunRetention(ctx context.Context) (tracker.RetentionRun, error)
	// Erase forgets one person.
	Erase(ctx context.Context, number, by string) (tracker.ErasureReport, error)
	// HashedNumber is the keyed hash an erased person's opt-out is kept
	// under ("" without a key), so that an operator can lift it.
	HashedNumber(number string) string
}

func (a *api) privacy() (Privacy, error) {
	if a.cfg.Privacy == nil {
		return nil, newError(http.StatusNotFound, codeNotFound, "not available on this server")
	}
	return a.cfg.Privacy, nil
}

// getRetention: GET /v1/retention (admin).
func (a *api) getRetention(w http.ResponseWriter, r *http.Request) error {
	p, err := a.privacy()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p.RetentionStatus())
	return nil
}

// runRetention: POST /v1/retention/run (admin) — one pass now; answers
// the pass (also when it stopped early: its error is in the body).
func (a *api) runRetention(w http.ResponseWriter, r *http.Request) error {
	p, err := a.privacy()
	if err != nil {
		return err
	}
	// The pass records itself in the audit log (tracker.Retainer.Run),
	// with the actor the request context carries.
	run, err := p.RunRetention(r.Context())
	if err != nil && run.StartedAt.IsZero() {
		return err
	}
	status := http.StatusOK
	if err != nil {
		status = http.StatusInternalServerError
	}
	writeJSON(w, status, run)
	return nil
}

// erase: POST /v1/erasure {"number":"+1…"} (admin).
func (a *api) erase(w http.ResponseWriter, r *http.Request) error {
	p, err := a.privacy()
	if err != nil {
		return err
	}
	var body struct {
		Number string `json:"number"`
	}
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		return err
	}
	unprocessable := func(msg string) error {
		return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalidRequest, Message: "number: " + msg,
			Fields: []group.FieldError{{Field: "number", Message: msg}}}
	}
	if _, err := group.NormalizeNumber(body.Number); err != nil {
		return unprocessable(err.Error())
	}
	// The erasure commits its audit entry with its last step
	// (tracker.Tracker.Erase), with the actor the request context carries.
	rep, err := p.Erase(r.Context(), body.Number, by(r))
	if errors.Is(err, tracker.ErrInvalidNumber) {
		return unprocessable(err.Error())
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
