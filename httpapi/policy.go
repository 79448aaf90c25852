package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/tracker"
)

// The policy fields of docs/design.md §12 on groups and recipients. They are not
// in the projections: a group with a policy is rebuilt from its snapshot
// and journal for the view (groups without one cost one journal read).

// policyView is a group's committed state, for its policy fields; nil for
// a group without a policy.
type policyView struct {
	g *group.Group
}

// policyOf reads the policy state of group id.
func (a *api) policyOf(ctx context.Context, id string) (*policyView, error) {
	created, err := a.createdHead(ctx, id)
	if err != nil {
		return nil, err
	}
	if created == nil || (created.Policy == nil && (created.Quorum == nil || !created.Quorum.Exact)) {
		return nil, nil // an exact quota without a policy has selections to show (callout.go)
	}
	g, ok, err := tracker.LoadGroup(ctx, a.store, id)
	if err != nil {
		return nil, fmt.Errorf("load group state: %w", err)
	}
	if !ok {
		return nil, nil
	}
	return &policyView{g: &g}, nil
}

func (p *policyView) group() apitype.Policy {
	if p == nil || p.g.Policy == nil {
		return apitype.Policy{}
	}
	pol := p.g.Policy
	out := apitype.Policy{SendAt: tsOrNil(pol.SendAt), Priority: pol.Priority, EscalatedAt: tsOrNil(p.g.EscalatedAt())}
	if out.Priority == "" {
		out.Priority = group.PriorityNormal
	}
	if f := pol.Followup; f != nil {
		out.Followup = &apitype.Followup{After: shortDuration(f.After), Max: f.Max, Text: p.g.FollowupText()}
		for _, s := range f.Steps {
			out.Followup.Steps = append(out.Followup.Steps, apitype.FollowupStep{After: shortDuration(s.After), Channel: s.Channel, Text: s.Text})
		}
	}
	if e := pol.Escalate; e != nil {
		out.Escalate = &apitype.Escalate{After: shortDuration(e.After), Crews: nonNil(e.Crews), To: nonNil(e.To), Text: e.Text}
		if out.Escalate.Text == "" {
			out.Escalate.Text = group.DefaultEscalationText
		}
	}
	out.QuietHours = group.QuietOff
	if pol.Quiet != nil {
		out.QuietHours = pol.Quiet.String()
	}
	return out
}

func (p *policyView) recipient(number string) apitype.RecipientPolicy {
	if p == nil {
		return apitype.RecipientPolicy{}
	}
	r := p.g.Recipient(number)
	if r == nil {
		return apitype.RecipientPolicy{}
	}
	out := apitype.RecipientPolicy{FollowupsSent: r.FollowupsSent, NextFollowupAt: tsOrNil(p.g.NextFollowupAt(r)), AnsweredBy: r.AnsweredBy}
	if r.Status == crewcast.StatusScheduled {
		out.HeldUntil = tsOrNil(r.HeldUntil)
	}
	return out
}

// PolicyActions is implemented by a Service that offers the board's group
// actions of docs/design.md §12 (tracker.Tracker does).
type PolicyActions interface {
	// Nudge sends the next follow-up now to everyone still waiting for one.
	Nudge(ctx context.Context, id, by string) error
	// RetryFailed retries every failed recipient the rules allow.
	RetryFailed(ctx context.Context, id, by string) (retried, skipped int, err error)
}

var errNoPolicyActions = newError(http.StatusNotImplemented, codeUnavailable, "this server does not offer this action")

func (a *api) nudgeGroup(w http.ResponseWriter, r *http.Request) error {
	pa, ok := a.svc.(PolicyActions)
	if !ok {
		return errNoPolicyActions
	}
	return a.afterAction(w, r, pa.Nudge(r.Context(), r.PathValue("id"), by(r)))
}

// retryFailedJSON is the answer of POST /v1/groups/{id}/retry-failed.
type retryFailedJSON struct {
	Retried int           `json:"retried"`
	Skipped int           `json:"skipped"`
	Group   apitype.Group `json:"group"`
}

func (a *api) retryFailed(w http.ResponseWriter, r *http.Request) error {
	pa, ok := a.svc.(PolicyActions)
	if !ok {
		return errNoPolicyActions
	}
	retried, skipped, err := pa.RetryFailed(r.Context(), r.PathValue("id"), by(r))
	if err != nil {
		return err
	}
	g, err := a.groupView(r.Context(), r.PathValue("id"), true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, retryFailedJSON{Retried: retried, Skipped: skipped, Group: g})
	return nil
}

// shortDuration writes a Go duration as a client would: "10m", "1h30m",
// "90s" → "1m30s" (time.Duration.String's "10m0s" without the zeros).
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
