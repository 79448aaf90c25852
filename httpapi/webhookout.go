package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/webhookout"
)

// Outbound webhook endpoints (docs/design.md §13). Managing them needs the
// admin scope: they carry signing secrets and send data out.

// rotationOverlap is how long the previous secret keeps signing next to
// the new one after a rotation.
const rotationOverlap = 24 * time.Hour

type endpointJSON struct {
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	Description    string     `json:"description"`
	Events         []string   `json:"events"`
	Signing        string     `json:"signing"`
	Disabled       bool       `json:"disabled"`
	DisabledAt     *time.Time `json:"disabled_at"`
	DisabledReason string     `json:"disabled_reason"`
	FailingSince   *time.Time `json:"failing_since"`
	RotatingUntil  *time.Time `json:"rotating_until"`
	CreatedAt      *time.Time `json:"created_at"`
	UpdatedAt      *time.Time `json:"updated_at"`
}

func endpointOf(e store.WebhookEndpoint, now time.Time) endpointJSON {
	out := endpointJSON{ID: e.ID, URL: e.URL, Description: e.Description, Events: e.Events, Signing: e.Signing,
		Disabled: !e.DisabledAt.IsZero(), DisabledAt: tsOrNil(e.DisabledAt), DisabledReason: e.DisabledReason,
		FailingSince: tsOrNil(e.FailingSince), CreatedAt: tsOrNil(e.CreatedAt), UpdatedAt: tsOrNil(e.UpdatedAt)}
	if len(e.PrevSecret) > 0 && now.Before(e.PrevUntil) {
		out.RotatingUntil = tsOrNil(e.PrevUntil)
	}
	if out.Events == nil {
		out.Events = []string{}
	}
	return out
}

// newEndpointJSON is the answer to creation and rotation: the only time
// the secret (whsec_) or public key (whpk_) is shown.
type newEndpointJSON struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Secret string   `json:"secret"`
}

func (a *api) sealer() *webhookout.Sealer {
	if a.cfg.WebhookSealer == nil {
		return &webhookout.Sealer{}
	}
	return a.cfg.WebhookSealer
}

// webhooksChanged refreshes the worker's view of the endpoints.
func (a *api) webhooksChanged(ctx context.Context) {
	if a.cfg.WebhookWorker != nil {
		if err := a.cfg.WebhookWorker.Refresh(ctx); err != nil {
			a.log.Warn("webhook endpoints refresh", "err", err)
		}
	}
}

func checkEvents(events []string) error {
	if len(events) == 0 {
		return invalid("events", `at least one event type, or ["*"]`)
	}
	if len(events) > 32 {
		return invalid("events", "at most 32 event types")
	}
	for _, e := range events {
		if !webhookout.ValidType(e) {
			return invalid("events", "unknown event type "+e)
		}
	}
	return nil
}

// newSigningKey returns the stored (private) key and the one shown.
func newSigningKey(signing string) (stored, shown string, err error) {
	if signing == store.SigningEd25519 {
		return webhookout.NewEd25519Key()
	}
	s, err := webhookout.NewHMACSecret()
	return s, s, err
}

func (a *api) createWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		URL         string   `json:"url"`
		Events      []string `json:"events"`
		Description string   `json:"description"`
		Signing     string   `json:"signing"`
	}
	if err := decodeJSON(w, r, 16<<10, &body); err != nil {
		return err
	}
	if err := webhookout.CheckURL(body.URL, a.cfg.WebhookAllowPrivate); err != nil {
		return invalid("url", err.Error())
	}
	if err := checkEvents(body.Events); err != nil {
		return err
	}
	if len([]rune(body.Description)) > 500 {
		return invalid("description", "at most 500 characters")
	}
	if body.Signing == "" {
		body.Signing = store.SigningHMAC
	}
	if body.Signing != store.SigningHMAC && body.Signing != store.SigningEd25519 {
		return invalid("signing", `"hmac" or "ed25519"`)
	}
	id, err := endpointID()
	if err != nil {
		return err
	}
	key, shown, err := newSigningKey(body.Signing)
	if err != nil {
		return err
	}
	sealed, err := a.sealer().Seal(id, key)
	if err != nil {
		return err
	}
	now := a.now().UTC()
	e := store.WebhookEndpoint{ID: id, URL: body.URL, Description: body.Description, Events: body.Events,
		Signing: body.Signing, Secret: sealed, CreatedAt: now, UpdatedAt: now}
	if err := a.store.CreateWebhookEndpoint(r.Context(), e, a.auditEntry(r, auditEndpointCreated, id)); err != nil {
		return err
	}
	a.webhooksChanged(r.Context())
	w.Header().Set("Location", "/v1/webhook-endpoints/"+id)
	writeJSON(w, http.StatusCreated, newEndpointJSON{ID: id, URL: e.URL, Events: e.Events, Secret: shown})
	return nil
}

func endpointID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "ep_" + hex.EncodeToString(b), nil
}

func (a *api) getEndpoint(r *http.Request) (store.WebhookEndpoint, error) {
	e, err := a.store.GetWebhookEndpoint(r.Context(), r.PathValue("id"))
	if errors.Is(err, actor.ErrNotFound) {
		return e, notFound("webhook endpoint")
	}
	return e, err
}

func (a *api) listWebhookEndpoints(w http.ResponseWriter, r *http.Request) error {
	eps, err := a.store.ListWebhookEndpoints(r.Context())
	if err != nil {
		return err
	}
	now := a.now()
	out := struct {
		Endpoints []endpointJSON `json:"endpoints"`
	}{Endpoints: make([]endpointJSON, len(eps))}
	for i, e := range eps {
		out.Endpoints[i] = endpointOf(e, now)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) getWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	e, err := a.getEndpoint(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, endpointOf(e, a.now()))
	return nil
}

func (a *api) patchWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		URL         *string  `json:"url"`
		Events      []string `json:"events"`
		Description *string  `json:"description"`
		Disabled    *bool    `json:"disabled"`
	}
	if err := decodeJSON(w, r, 16<<10, &body); err != nil {
		return err
	}
	e, err := a.getEndpoint(r)
	if err != nil {
		return err
	}
	now := a.now().UTC()
	// One audit entry per kind of change, as for users: the fields it
	// changed (by name), and a disabling or re-enabling on its own.
	var changed []string
	var audit []store.AuditEntry
	if body.URL != nil {
		if err := webhookout.CheckURL(*body.URL, a.cfg.WebhookAllowPrivate); err != nil {
			return invalid("url", err.Error())
		}
		if *body.URL != e.URL {
			e.URL = *body.URL
			changed = append(changed, "url")
		}
	}
	if body.Events != nil {
		if err := checkEvents(body.Events); err != nil {
			return err
		}
		if !slices.Equal(body.Events, e.Events) {
			e.Events = body.Events
			changed = append(changed, "events")
		}
	}
	if body.Description != nil {
		if len([]rune(*body.Description)) > 500 {
			return invalid("description", "at most 500 characters")
		}
		if *body.Description != e.Description {
			e.Description = *body.Description
			changed = append(changed, "description")
		}
	}
	if len(changed) > 0 {
		audit = append(audit, a.auditEntry(r, auditEndpointUpdated, e.ID+" "+strings.Join(changed, " ")))
	}
	if body.Disabled != nil {
		switch {
		case *body.Disabled && e.DisabledAt.IsZero():
			e.DisabledAt, e.DisabledReason = now, "disabled by an operator"
			audit = append(audit, a.auditEntry(r, auditEndpointDisabled, e.ID))
		case !*body.Disabled && (!e.DisabledAt.IsZero() || !e.FailingSince.IsZero()):
			// Enabled again: its failure clock starts over (also for an
			// endpoint failing but not yet disabled).
			e.DisabledAt, e.DisabledReason, e.FailingSince = time.Time{}, "", time.Time{}
			audit = append(audit, a.auditEntry(r, auditEndpointEnabled, e.ID))
		}
	}
	// A request that changes nothing writes nothing (and so logs nothing).
	if len(audit) > 0 {
		e.UpdatedAt = now
		if err := a.store.UpdateWebhookEndpoint(r.Context(), e, audit...); err != nil {
			if errors.Is(err, actor.ErrNotFound) {
				return notFound("webhook endpoint")
			}
			return err
		}
		a.webhooksChanged(r.Context())
	}
	writeJSON(w, http.StatusOK, endpointOf(e, now))
	return nil
}

func (a *api) deleteWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := a.store.DeleteWebhookEndpoint(r.Context(), id, a.auditEntry(r, auditEndpointDeleted, id))
	if errors.Is(err, actor.ErrNotFound) {
		return notFound("webhook endpoint")
	}
	if err != nil {
		return err
	}
	a.webhooksChanged(r.Context())
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// rotateWebhookEndpoint makes a new signing key; the previous one keeps
// signing next to it (two signatures per request) for rotationOverlap.
func (a *api) rotateWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	e, err := a.getEndpoint(r)
	if err != nil {
		return err
	}
	key, shown, err := newSigningKey(e.Signing)
	if err != nil {
		return err
	}
	sealed, err := a.sealer().Seal(e.ID, key)
	if err != nil {
		return err
	}
	now := a.now().UTC()
	e.PrevSecret, e.PrevUntil, e.Secret, e.UpdatedAt = e.Secret, now.Add(rotationOverlap), sealed, now
	if err := a.store.UpdateWebhookEndpoint(r.Context(), e, a.auditEntry(r, auditEndpointRotated, e.ID)); err != nil {
		if errors.Is(err, actor.ErrNotFound) {
			return notFound("webhook endpoint")
		}
		return err
	}
	a.webhooksChanged(r.Context())
	writeJSON(w, http.StatusOK, newEndpointJSON{ID: e.ID, URL: e.URL, Events: e.Events, Secret: shown})
	return nil
}

type attemptJSON struct {
	ID         int64      `json:"id"`
	MsgID      string     `json:"webhook_id"`
	Type       string     `json:"type"`
	At         *time.Time `json:"at"`
	StatusCode int        `json:"status_code"`
	Result     string     `json:"result"`
	LatencyMS  int64      `json:"latency_ms"`
	// Response stays in the answer for older clients and is always
	// empty: answers' bodies are neither kept nor shown.
	Response string `json:"response"`
	// Error is a short class (webhookout.ErrClass…), never the
	// transport's text, which names addresses and ports.
	Error string `json:"error"`
}

func (a *api) listWebhookAttempts(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.getEndpoint(r); err != nil {
		return err
	}
	limit, err := queryLimit(r, 1000)
	if err != nil {
		return err
	}
	as, err := a.store.ListWebhookAttempts(r.Context(), r.PathValue("id"), limit)
	if err != nil {
		return err
	}
	out := struct {
		Attempts []attemptJSON `json:"attempts"`
	}{Attempts: make([]attemptJSON, len(as))}
	for i, x := range as {
		out.Attempts[i] = attemptJSON{ID: x.ID, MsgID: x.MsgID, Type: x.Type, At: tsOrNil(x.At), StatusCode: x.StatusCode,
			Result: x.Result, LatencyMS: x.Latency.Milliseconds(), Error: webhookout.ShownError(x.Result, x.Error)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) recoverWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Since time.Time `json:"since"`
	}
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		return err
	}
	if body.Since.IsZero() {
		return invalid("since", "an RFC 3339 time is required")
	}
	if _, err := a.getEndpoint(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	n, err := a.store.RecoverWebhookDeliveries(r.Context(), id, body.Since, a.now().UTC(),
		a.auditEntry(r, auditEndpointRecovered, id+" since "+body.Since.UTC().Format(time.RFC3339)))
	if errors.Is(err, actor.ErrNotFound) {
		return notFound("webhook endpoint")
	}
	if err != nil {
		return err
	}
	a.webhooksChanged(r.Context())
	writeJSON(w, http.StatusAccepted, struct {
		Queued int `json:"queued"`
	}{n})
	return nil
}

func (a *api) testWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	e, err := a.getEndpoint(r)
	if err != nil {
		return err
	}
	nonce, err := endpointID()
	if err != nil {
		return err
	}
	row := webhookout.Test(e, nonce, a.now().UTC())
	if err := a.store.AppendOutbox(r.Context(), []store.OutboxRow{row}, a.auditEntry(r, auditEndpointTested, e.ID)); err != nil {
		return err
	}
	a.webhooksChanged(r.Context())
	writeJSON(w, http.StatusAccepted, struct {
		WebhookID string `json:"webhook_id"`
		Type      string `json:"type"`
	}{row.MsgID, row.Type})
	return nil
}
