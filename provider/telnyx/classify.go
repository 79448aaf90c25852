package telnyx

import (
	"strings"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/internal/adapter"
)

// OptOutCode is the error code of a send blocked by the recipient's STOP.
const OptOutCode = "40300"

// codeClasses is docs/providers.md §1.10 as a table. Codes marked [3P] there come
// from a third-party code list only; the classes for codes the table does
// not place are this package's choice, explained inline.
var codeClasses = map[string]crewcast.ErrorClass{
	// Permanent for this recipient: never resend.
	"40001":    crewcast.ClassRecipient, // not routable (landline / non-routable)
	"40012":    crewcast.ClassRecipient, // invalid destination
	OptOutCode: crewcast.ClassRecipient, // blocked due to STOP: also record a suppression
	"10002":    crewcast.ClassRecipient, // invalid phone number
	"10016":    crewcast.ClassRecipient, // not +E.164
	"40310":    crewcast.ClassRecipient, // invalid to [3P]
	"40319":    crewcast.ClassRecipient, // message type incompatible with to [3P]: this number cannot take it

	// Sender or configuration: hits every recipient, stop the group.
	"40003": crewcast.ClassSender, // spam, permanent: sender blocked
	"40013": crewcast.ClassSender, // invalid source
	"10009": crewcast.ClassSender, // authentication failed
	"40010": crewcast.ClassSender, // unregistered 10DLC [3P]
	"40305": crewcast.ClassSender, // invalid from [3P]
	"40312": crewcast.ClassSender, // messaging profile disabled [3P]
	"40314": crewcast.ClassSender, // messaging disabled [3P]
	"40329": crewcast.ClassSender, // toll-free unverified [3P]
	"40322": crewcast.ClassSender, // blocked content [3P]: the same text goes to everyone
	"40016": crewcast.ClassSender, // T-Mobile daily 10DLC cap [3P]: nothing helps until the cap resets
	"10004": crewcast.ClassSender, // missing parameter: our request is wrong for everyone

	// Transient, not sent: back off and resend.
	"10011": crewcast.ClassNotSent, // too many requests
	"40011": crewcast.ClassNotSent, // upstream rate limit
	"40014": crewcast.ClassNotSent, // expired in Telnyx's queue, never left
	"40318": crewcast.ClassNotSent, // queue full [3P]
	"40002": crewcast.ClassNotSent, // spam, temporary: slow down
	"40018": crewcast.ClassNotSent, // AT&T TPM 10DLC cap [3P]: a per-minute cap, slow down

	// Failed at the carrier, may be transient: resend only by policy.
	"40004": crewcast.ClassCarrier, // rejected by destination
	"40006": crewcast.ClassCarrier, // recipient carrier down
	"40008": crewcast.ClassCarrier, // undeliverable
	"40009": crewcast.ClassCarrier, // invalid body
	"40015": crewcast.ClassCarrier, // Telnyx spam filter

	// Uncertain: may have reached the handset; never resend automatically.
	"40005": crewcast.ClassUncertain, // expired after leaving Telnyx
	"10007": crewcast.ClassUncertain, // unexpected error on Telnyx's side
}

// Classify returns the class of a Telnyx error, and whether it means the
// recipient opted out (code 40300, whatever its HTTP status).
//
// httpStatus is the status of a synchronous API answer, or 0 for a delivery
// error reported asynchronously (errors[] of message.finalized). Rules, in
// order:
//   - 429 is ClassNotSent and any 5xx is ClassUncertain whatever the code:
//     the status says what happened to the request itself.
//   - a code in the table decides (Telnyx sends 40300 with 400, 403 or
//     422, so the code beats the status).
//   - an unknown code on an asynchronous report (status 0) is ClassCarrier:
//     the message left and failed somewhere we cannot name, so a resend is a
//     policy decision, not automatic.
//   - an unknown code on a synchronous answer: 3xx (we follow no redirects),
//     401, 403, 404 and 405 are ClassSender (credentials, permissions or the
//     API base are wrong for everyone); 408 is ClassUncertain (Telnyx gave
//     up reading, we cannot say how far it got); any other 4xx is
//     ClassRecipient, because a 4xx means the message was not accepted and
//     resending the same request will not change that, while stopping the
//     whole group for one odd recipient would be worse.
//   - anything else (1xx, a 2xx used as an error) is ClassUncertain.
func Classify(httpStatus int, code string) (class crewcast.ErrorClass, optOut bool) {
	return adapter.Classify(httpStatus, code, codeClasses, OptOutCode)
}

// ClassifyDelivery classifies the error code of a failed delivery report.
// A failure with no code at all is ClassCarrier: the message failed and we
// cannot say it would fail again.
func ClassifyDelivery(code string) (class crewcast.ErrorClass, optOut bool) {
	return Classify(0, code)
}

// MapStatus maps a Telnyx to[].status word to crewcast's vocabulary
// (docs/providers.md §1.5); ok is false for a word Telnyx has not documented,
// which the caller maps by context. Matching ignores case.
//
//	scheduled, queued, sending, sent                      → sent
//	delivered                                             → delivered
//	sending_failed, delivery_failed, expired, cancelled   → failed
//	delivery_unconfirmed, unknown                         → unknown
func MapStatus(s string) (status crewcast.Status, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "scheduled", "queued", "sending", "sent":
		return crewcast.StatusSent, true
	case "delivered":
		return crewcast.StatusDelivered, true
	case "sending_failed", "delivery_failed", "expired", "cancelled", "canceled":
		return crewcast.StatusFailed, true
	case "delivery_unconfirmed", "unknown":
		return crewcast.StatusUnknown, true
	}
	return "", false
}
