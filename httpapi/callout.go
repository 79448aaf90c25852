package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
)

// Callouts that fill on the API (docs/architecture.md, "Waves and exact
// quotas, as code"): the create body's `waves`, `confirmed_text`,
// `filled_text` and `quorum.exact`, and what groups and recipients show
// of them.

// quorumInput is the create body's quorum; it notes whether the client
// wrote `exact` (with waves, exact is the default only when it did not).
type quorumInput struct {
	group.Quorum
	exactGiven bool
}

func (q *quorumInput) UnmarshalJSON(b []byte) error {
	var probe struct {
		Exact *bool `json:"exact"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q.Quorum); err != nil {
		return err
	}
	q.exactGiven = probe.Exact != nil
	return nil
}

// quorumOf is the group.Quorum of the create body (nil without one).
func (b createRequest) quorum() (*group.Quorum, bool) {
	if b.Quorum == nil {
		return nil, false
	}
	q := b.Quorum.Quorum
	return &q, b.Quorum.exactGiven
}

func (p *policyView) callout() apitype.Callout {
	if p == nil || p.g.Policy == nil {
		return apitype.Callout{}
	}
	g, pol := p.g, p.g.Policy
	out := apitype.Callout{ConfirmedText: pol.ConfirmedText}
	if g.Exact() {
		out.FilledText = g.AutoReplyText(group.AutoFilled)
	}
	if w := pol.Waves; w != nil {
		out.Waves = &apitype.Waves{Size: w.Size, Every: shortDuration(w.Every), Sent: g.WavesSent, NextAt: tsOrNil(g.NextWaveAt())}
	}
	return out
}

func (p *policyView) recipientCallout(number string) apitype.RecipientCallout {
	if p == nil {
		return apitype.RecipientCallout{}
	}
	r := p.g.Recipient(number)
	if r == nil {
		return apitype.RecipientCallout{}
	}
	return apitype.RecipientCallout{Wave: r.Wave, Selected: r.Selected, Standby: r.Standby}
}

// CalloutActions is implemented by a Service that offers a dispatcher's
// hand on a callout (tracker.Tracker does).
type CalloutActions interface {
	SelectRecipient(ctx context.Context, id, number, by string) error
	ReleaseRecipient(ctx context.Context, id, number, by string) error
	StartNextWave(ctx context.Context, id, by string) error
}

func (a *api) calloutActions() (CalloutActions, error) {
	ca, ok := a.svc.(CalloutActions)
	if !ok {
		return nil, errNoPolicyActions
	}
	return ca, nil
}

func (a *api) selectRecipient(w http.ResponseWriter, r *http.Request) error {
	return a.handOnRecipient(w, r, CalloutActions.SelectRecipient)
}

func (a *api) releaseRecipient(w http.ResponseWriter, r *http.Request) error {
	return a.handOnRecipient(w, r, CalloutActions.ReleaseRecipient)
}

func (a *api) handOnRecipient(w http.ResponseWriter, r *http.Request,
	do func(CalloutActions, context.Context, string, string, string) error) error {
	ca, err := a.calloutActions()
	if err != nil {
		return err
	}
	number, err := pathNumber(r)
	if err != nil {
		return err
	}
	return a.afterAction(w, r, do(ca, r.Context(), r.PathValue("id"), number, by(r)))
}

func (a *api) startNextWave(w http.ResponseWriter, r *http.Request) error {
	ca, err := a.calloutActions()
	if err != nil {
		return err
	}
	return a.afterAction(w, r, ca.StartNextWave(r.Context(), r.PathValue("id"), by(r)))
}

// autoReplyJSON is one auto-reply of a callout in a person's history.
type autoReplyJSON struct {
	GroupID string `json:"group_id"`
	Kind    string `json:"kind"` // confirmed or filled
	Text    string `json:"text"`
	// Status: sending (claimed, no answer yet), sent, uncertain (may
	// have gone out; never resent), failed, skipped (opted out first).
	Status string `json:"status"`
}

// autoRepliesOf lists the auto-replies claimed for r in g.
func autoRepliesOf(g *group.Group, r *group.Recipient) []autoReplyJSON {
	var out []autoReplyJSON
	add := func(kind, done string) {
		status := done
		if done == "" && r.AutoSendID != "" && group.AutoReplyKindOf(r.AutoSendID) == kind {
			status = "sending"
		}
		if status != "" {
			out = append(out, autoReplyJSON{GroupID: g.ID, Kind: kind, Text: g.AutoReplyText(kind), Status: status})
		}
	}
	add(group.AutoConfirmed, r.ConfirmDone)
	add(group.AutoFilled, r.FilledDone)
	return out
}
