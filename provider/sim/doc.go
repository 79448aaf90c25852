// Package sim is a local simulator of the Telnyx v2 and Twilio messaging
// APIs and of their signed webhooks, with fault knobs and a ledger of every
// accepted send. `crewcast sim` serves it over HTTP; `crewcast demo` runs it
// in-process as the demo provider; tests use it as the provider that can
// be made to misbehave on purpose.
//
// It is written from docs/providers.md, independently of the client
// adapters in provider/telnyx and provider/twilio, so that a test that runs
// an adapter against the simulator checks two readings of the same document
// against each other.
//
// # Endpoints
//
// Telnyx (Bearer API key, errors as {"errors":[{"code":"<string>",...}]}):
// POST /v2/messages, POST /v2/messages/group_mms (≤ 8 recipients),
// GET /v2/messages/{id}, GET /v2/messages/group/{id}.
//
// Twilio (HTTP Basic account SID + auth token, form bodies, errors as
// {"code","message","more_info","status"}):
// POST /2010-04-01/Accounts/{sid}/Messages.json (201 + JSON Message),
// GET /2010-04-01/Accounts/{sid}/Messages/{sid}.json.
//
// Control plane, each route behind Authorization: Bearer <control token>
// (Config.ControlToken, else random: Sim.ControlToken), refusing requests
// from another origin (403) and POSTs that are not JSON (415), so that a
// web page cannot reach it through the browser even on loopback:
// GET /sim/keys, GET /sim/ledger, GET /sim/ledger/duplicates,
// POST /sim/inbound, GET and POST /sim/faults, POST /sim/reset.
//
// Sends honour an Idempotency-Key header (an extension: neither provider
// documents one for message sends): the same key returns the same message and
// records no second ledger row; the same key with a different body is a 422.
//
// # Webhooks
//
// Telnyx: message.sent then message.finalized per recipient (a group MMS
// yields one pair per recipient, each with group_message_id and the other
// recipients in cc), and message.received for replies, each signed with
// Ed25519 over "timestamp|body". Up to 3 attempts per URL (a non-2xx answer
// or no answer within the webhook timeout, 2 s by default, is a failure),
// then the same for the failover URL.
//
// Twilio: status callbacks queued, sent, then delivered | undelivered, or
// queued then failed, as signed form posts with an I-Twilio-Idempotency-Token
// that stays the same across the retries of one callback. One retry by
// default; an "#rc=N" fragment on the callback URL sets N retries (0–5) as
// Twilio's connection overrides do. The fragment is not part of the signed
// URL, since a receiver never sees it.
//
// A message's planned fate (delivered, failed with a code, unknown), the
// delays, drops, duplicates, reordering and replies are drawn when the send
// is accepted, from one seeded random source behind a mutex, so the same seed
// and the same sequence of requests give the same decisions, message ids and
// event ids, whatever the timing of the webhook workers.
//
// # Concurrency properties
//
// All methods of *Sim are safe for concurrent use. The events of one
// recipient form a chain: an event is posted only after the previous event of
// the same recipient has been delivered or given up on, so message.sent
// arrives before message.finalized (and Twilio's statuses arrive in order)
// unless the reorder knob swaps them for that recipient. Events of different
// recipients and messages are posted concurrently by a fixed pool of workers
// and may arrive in any order. A duplicate is posted after the original has
// been answered. The message status a GET returns moves forward only, and it
// moves when an event fires, whether or not its webhook is dropped or
// answered. Delays and retry back-offs use the real clock; Config.Now only
// stamps times into payloads and the ledger.
//
// The accept-timeout fault records the send and starts its webhooks, then
// closes the connection without an answer, at once or after
// Config.AcceptTimeoutHold. Go's http.Transport replays a POST carrying an
// Idempotency-Key by itself when a reused connection closes before any
// answer, and that replay gets the recorded message back; hold longer than
// the client's timeout to make such a client see the timeout.
//
// Background work is bounded: at most Config.MaxPending recipient event
// chains are outstanding; a send that would exceed that is refused with a
// rate-limit error (nothing recorded). Stop ends every worker and abandons
// the webhooks not yet posted.
package sim
