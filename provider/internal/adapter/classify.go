// Package adapter holds what crewcast's provider adapters (provider/telnyx,
// provider/twilio) share besides the request step in provider/apicall: the
// rule that turns a provider error into a crewcast.ErrorClass, the
// redirect-free HTTP client, Retry-After, config URL checks and webhook
// header lookup. Wire formats, signatures and code tables stay in the
// adapters.
package adapter

import (
	"strings"

	"github.com/crewcast/crewcast"
)

// Classify applies the rule both adapters document for their Classify to
// one provider error: codes is the adapter's code table and optOutCode the
// code that means the recipient opted out. httpStatus is the status of a
// synchronous API answer, or 0 for a code reported asynchronously. In
// order:
//   - 429 is ClassNotSent and any 5xx is ClassUncertain whatever the code.
//   - a code in codes decides (surrounding spaces ignored).
//   - an unknown code with status 0 is ClassCarrier.
//   - an unknown code on a synchronous answer: 3xx, 401, 403, 404 and 405
//     are ClassSender; 408 is ClassUncertain; any other 4xx is
//     ClassRecipient.
//   - anything else is ClassUncertain.
func Classify(httpStatus int, code string, codes map[string]crewcast.ErrorClass, optOutCode string) (class crewcast.ErrorClass, optOut bool) {
	code = strings.TrimSpace(code)
	switch {
	case httpStatus == 429:
		return crewcast.ClassNotSent, false
	case httpStatus >= 500:
		return crewcast.ClassUncertain, false
	}
	if c, ok := codes[code]; ok {
		return c, code == optOutCode
	}
	switch {
	case httpStatus == 0:
		return crewcast.ClassCarrier, false
	case httpStatus >= 300 && httpStatus < 400,
		httpStatus == 401, httpStatus == 403, httpStatus == 404, httpStatus == 405:
		return crewcast.ClassSender, false
	case httpStatus == 408:
		return crewcast.ClassUncertain, false
	case httpStatus >= 400 && httpStatus < 500:
		return crewcast.ClassRecipient, false
	}
	return crewcast.ClassUncertain, false
}
