package httpapi

import "net/http"

// access is what a route requires of the caller.
type access int

const (
	// public routes need no credentials: health, metrics, the OpenAPI
	// document, webhooks (which verify provider signatures) and session
	// login/logout.
	public access = iota
	// needRead, needSend and needAdmin require an API key (bearer token or
	// session cookie) whose scope includes read, send or admin.
	needRead
	needSend
	needAdmin
)

// route is one entry of the route table.
type route struct {
	Method  string
	Pattern string // net/http ServeMux pattern; the same path template as in openapi.yaml
	Access  access
	Handler func(a *api, w http.ResponseWriter, r *http.Request) error
}

// routeTable is every route of the API. Registration and the OpenAPI test
// both read it, so the document cannot drift from the code unnoticed.
var routeTable = []route{
	{http.MethodGet, "/healthz", public, (*api).healthz},
	{http.MethodGet, "/readyz", public, (*api).readyz},
	{http.MethodGet, "/metrics", public, (*api).metricsHandler},
	{http.MethodGet, "/openapi.yaml", public, (*api).openapi},
	{http.MethodGet, "/debug/actors", needAdmin, (*api).debugActors},
	{http.MethodGet, "/debug/deadletters", needAdmin, (*api).debugDeadLetters},
	{http.MethodGet, "/debug/cluster", needAdmin, (*api).debugCluster},
	{http.MethodGet, "/debug/groups/{id}/journal", needAdmin, (*api).debugGroupJournal},

	{http.MethodPost, "/webhooks/telnyx", public, (*api).webhookTelnyx},
	{http.MethodPost, "/webhooks/twilio", public, (*api).webhookTwilio},
	{http.MethodPost, "/webhooks/twilio/voice", public, (*api).webhookTwilioVoice},
	{http.MethodPost, "/webhooks/telnyx/voice", public, (*api).webhookTelnyxVoice},

	{http.MethodGet, "/a/{token}", public, (*api).answerLinkPage},
	{http.MethodPost, "/a/{token}", public, (*api).answerLinkPost},

	{http.MethodPost, "/v1/groups", needSend, (*api).createGroup},
	{http.MethodPost, "/v1/groups/preview", needSend, (*api).previewGroup},
	{http.MethodGet, "/v1/groups", needRead, (*api).listGroups},
	{http.MethodGet, "/v1/groups/{id}", needRead, (*api).getGroup},
	{http.MethodGet, "/v1/groups/{id}/recipients", needRead, (*api).listRecipients},
	{http.MethodGet, "/v1/groups/{id}/events", needRead, (*api).listEvents},
	{http.MethodGet, "/v1/groups/{id}/stream", needRead, (*api).streamGroup},
	{http.MethodPost, "/v1/groups/{id}/cancel", needSend, (*api).cancelGroup},
	{http.MethodPost, "/v1/groups/{id}/resume", needSend, (*api).resumeGroup},
	{http.MethodPost, "/v1/groups/{id}/nudge", needSend, (*api).nudgeGroup},
	{http.MethodPost, "/v1/groups/{id}/retry-failed", needSend, (*api).retryFailed},
	{http.MethodPost, "/v1/groups/{id}/recipients/{number}/resolve", needSend, (*api).resolveRecipient},
	{http.MethodPost, "/v1/groups/{id}/recipients/{number}/retry", needSend, (*api).retryRecipient},
	{http.MethodPost, "/v1/groups/{id}/recipients/{number}/select", needSend, (*api).selectRecipient},   // callout.go
	{http.MethodPost, "/v1/groups/{id}/recipients/{number}/release", needSend, (*api).releaseRecipient}, // callout.go
	{http.MethodPost, "/v1/groups/{id}/next-wave", needSend, (*api).startNextWave},                      // callout.go
	{http.MethodGet, "/v1/stream", needRead, (*api).streamAll},

	{http.MethodGet, "/v1/reports/deliveries", needRead, (*api).reportDeliveries},
	{http.MethodGet, "/v1/reports/summary", needRead, (*api).reportSummary},
	{http.MethodGet, "/v1/reports/recipients/{number}", needRead, (*api).reportRecipient},
	{http.MethodGet, "/v1/replies", needRead, (*api).listReplies},

	{http.MethodGet, "/v1/suppressions", needRead, (*api).listSuppressions},
	{http.MethodPost, "/v1/suppressions", needSend, (*api).addSuppression},
	{http.MethodDelete, "/v1/suppressions/{number}", needSend, (*api).removeSuppression},

	{http.MethodPost, "/v1/contacts", needSend, (*api).createContact},
	{http.MethodGet, "/v1/contacts", needRead, (*api).listContacts},
	{http.MethodPost, "/v1/contacts/import", needSend, (*api).importContacts},
	{http.MethodGet, "/v1/contacts/{id}", needRead, (*api).getContact},
	{http.MethodGet, "/v1/contacts/{id}/consent", needRead, (*api).getContactConsent},
	{http.MethodPatch, "/v1/contacts/{id}", needSend, (*api).patchContact},
	{http.MethodDelete, "/v1/contacts/{id}", needSend, (*api).deleteContact},
	{http.MethodPost, "/v1/crews", needSend, (*api).createCrew},
	{http.MethodGet, "/v1/crews", needRead, (*api).listCrews},
	{http.MethodGet, "/v1/crews/{id}", needRead, (*api).getCrew},
	{http.MethodPatch, "/v1/crews/{id}", needSend, (*api).patchCrew},
	{http.MethodDelete, "/v1/crews/{id}", needSend, (*api).deleteCrew},
	{http.MethodPost, "/v1/templates", needSend, (*api).createTemplate},
	{http.MethodGet, "/v1/templates", needRead, (*api).listTemplates},
	{http.MethodGet, "/v1/templates/{id}", needRead, (*api).getTemplate},
	{http.MethodPatch, "/v1/templates/{id}", needSend, (*api).patchTemplate},
	{http.MethodDelete, "/v1/templates/{id}", needSend, (*api).deleteTemplate},

	{http.MethodGet, "/v1/keys", needAdmin, (*api).listKeys},
	{http.MethodPost, "/v1/keys", needAdmin, (*api).createKey},
	{http.MethodDelete, "/v1/keys/{id}", needAdmin, (*api).revokeKey},

	{http.MethodGet, "/v1/version", needAdmin, (*api).version},
	{http.MethodGet, "/v1/retention", needAdmin, (*api).getRetention},
	{http.MethodPost, "/v1/retention/run", needAdmin, (*api).runRetention},
	{http.MethodPost, "/v1/erasure", needAdmin, (*api).erase},
	{http.MethodPost, "/v1/webhook-endpoints", needAdmin, (*api).createWebhookEndpoint},
	{http.MethodGet, "/v1/webhook-endpoints", needAdmin, (*api).listWebhookEndpoints},
	{http.MethodGet, "/v1/webhook-endpoints/{id}", needAdmin, (*api).getWebhookEndpoint},
	{http.MethodPatch, "/v1/webhook-endpoints/{id}", needAdmin, (*api).patchWebhookEndpoint},
	{http.MethodDelete, "/v1/webhook-endpoints/{id}", needAdmin, (*api).deleteWebhookEndpoint},
	{http.MethodGet, "/v1/webhook-endpoints/{id}/attempts", needAdmin, (*api).listWebhookAttempts},
	{http.MethodPost, "/v1/webhook-endpoints/{id}/recover", needAdmin, (*api).recoverWebhookEndpoint},
	{http.MethodPost, "/v1/webhook-endpoints/{id}/test", needAdmin, (*api).testWebhookEndpoint},
	{http.MethodPost, "/v1/webhook-endpoints/{id}/rotate", needAdmin, (*api).rotateWebhookEndpoint},

	{http.MethodGet, "/v1/senders", needAdmin, (*api).listSenders},
	{http.MethodPost, "/v1/senders", needAdmin, (*api).createSender},
	{http.MethodGet, "/v1/senders/{number}", needAdmin, (*api).getSender},
	{http.MethodPatch, "/v1/senders/{number}", needAdmin, (*api).patchSender},
	{http.MethodDelete, "/v1/senders/{number}", needAdmin, (*api).deleteSender},
	{http.MethodGet, "/v1/providers", needAdmin, (*api).listProviders},

	{http.MethodPost, "/v1/session", public, (*api).createSession},
	{http.MethodGet, "/v1/session", needRead, (*api).getSession},
	{http.MethodDelete, "/v1/session", public, (*api).deleteSession},
	{http.MethodPost, "/v1/account/password", needRead, (*api).changeOwnPassword},
	{http.MethodDelete, "/v1/account/sessions", needRead, (*api).signOutEverywhere},

	{http.MethodGet, "/v1/users", needAdmin, (*api).listUsers},
	{http.MethodPost, "/v1/users", needAdmin, (*api).createUser},
	{http.MethodPatch, "/v1/users/{id}", needAdmin, (*api).updateUser},
	{http.MethodDelete, "/v1/users/{id}", needAdmin, (*api).deleteUser},
	{http.MethodGet, "/v1/audit", needAdmin, (*api).listAudit},
}

// literalBesideWildcard lists literal paths that have a wildcard sibling
// ("/v1/contacts/import" beside "/v1/contacts/{id}"); their 405 answers are
// registered per method (see register).
var literalBesideWildcard = map[string]bool{"/v1/contacts/import": true, "/v1/groups/preview": true}
