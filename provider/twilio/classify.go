package twilio

import (
	"strings"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/internal/adapter"
)

// OptOutCode is the error code of a send to a number that replied STOP.
const OptOutCode = "21610"

// codeClasses is docs/providers.md §2.7 as a table; classes for codes that
// section leaves open are this package's choice, explained inline.
var codeClasses = map[string]crewcast.ErrorClass{
	// Permanent for this recipient: never resend.
	"21211":    crewcast.ClassRecipient, // invalid To
	OptOutCode: crewcast.ClassRecipient, // unsubscribed (STOP): also record a suppression
	"21612":    crewcast.ClassRecipient, // unroutable
	"21614":    crewcast.ClassRecipient, // To not SMS-capable
	"21635":    crewcast.ClassRecipient, // To is a landline
	"30006":    crewcast.ClassRecipient, // landline or unreachable carrier: don't retry

	// Sender or configuration: hits every recipient, stop the group.
	"20003": crewcast.ClassSender, // authentication
	"21606": crewcast.ClassSender, // From not SMS-capable
	"21608": crewcast.ClassSender, // unverified number on a trial account
	"30002": crewcast.ClassSender, // account suspended
	"30034": crewcast.ClassSender, // sender not registered (US A2P 10DLC): every message from it is blocked
	"21623": crewcast.ClassSender, // more than 10 media: the same request for everyone

	// Transient, not sent.
	"20429": crewcast.ClassNotSent, // rate limited (HTTP 429)

	// Failed at the carrier, may be transient: resend only by policy.
	"30003": crewcast.ClassCarrier, // handset unreachable
	// 30005 (unknown handset), 30007 (carrier filtering) and 30008
	// (unknown error) are unconfirmed in docs/providers.md; carrier is the
	// class for a delivery failure we cannot pin down.
	"30005": crewcast.ClassCarrier,
	"30007": crewcast.ClassCarrier,
	"30008": crewcast.ClassCarrier,
}

// Classify returns the class of a Twilio error, and whether it means the
// recipient opted out (21610).
//
// httpStatus is the status of a synchronous API answer, or 0 for an
// ErrorCode reported by a status callback. The rules are the Telnyx
// adapter's, applied by the same code:
//   - 429 is ClassNotSent and any 5xx is ClassUncertain whatever the code.
//   - a code in the table decides.
//   - an unknown code on a status callback (status 0) is ClassCarrier: the
//     message failed after acceptance for a reason we cannot name.
//   - an unknown code on a synchronous answer: 3xx, 401, 403, 404 and 405
//     are ClassSender (credentials, account or API base wrong for
//     everyone); 408 is ClassUncertain; any other 4xx is ClassRecipient,
//     because the message was not accepted and the same request will not
//     be accepted next time either.
//   - anything else is ClassUncertain.
func Classify(httpStatus int, code string) (class crewcast.ErrorClass, optOut bool) {
	return adapter.Classify(httpStatus, code, codeClasses, OptOutCode)
}

// ClassifyDelivery classifies the ErrorCode of a failed or undelivered
// message. A failure with no code is ClassCarrier.
func ClassifyDelivery(code string) (class crewcast.ErrorClass, optOut bool) {
	return Classify(0, code)
}

// MapStatus maps a Twilio message status to crewcast's vocabulary
// (docs/providers.md §2.2); ok is false for a word Twilio has not documented
// and for the inbound words receiving/received. Matching ignores case.
//
//	accepted, scheduled, queued, sending, sent   → sent
//	delivered, read                              → delivered
//	failed, undelivered, canceled                → failed
//	partially_delivered                          → unknown
func MapStatus(s string) (status crewcast.Status, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "accepted", "scheduled", "queued", "sending", "sent":
		return crewcast.StatusSent, true
	case "delivered", "read":
		return crewcast.StatusDelivered, true
	case "failed", "undelivered", "canceled", "cancelled":
		return crewcast.StatusFailed, true
	case "partially_delivered":
		return crewcast.StatusUnknown, true
	}
	return "", false
}
