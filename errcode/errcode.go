// Package errcode explains provider error codes in plain language, with a
// link to the provider's own page about them. It is the one table the API
// (error_detail, error_url on recipients), the board (which shows what the
// API says) and the command line (which prints the API's error_detail)
// share, so an operator reads the same words everywhere.
//
// Telnyx codes (1xxxx, 4xxxx) and Twilio codes (2xxxx, 3xxxx) do not
// overlap, so a code alone names its provider; a recipient row need not
// remember which provider failed it. The texts follow docs/providers.md §1.10
// and §2.7; codes marked there as third-party or unconfirmed are explained
// as such ("reported as …").
//
// The package does no I/O and depends only on the domain vocabulary.
package errcode

import (
	"maps"
	"slices"

	"github.com/crewcast/crewcast"
)

// Entry explains one provider error code.
type Entry struct {
	Provider string // "telnyx" or "twilio"
	Code     string
	// Text says in plain language what went wrong and what to do.
	Text string
	// URL is the provider's documentation page for the code.
	URL string
	// Class is the carrier's verdict the code stands for (ClassFiltered,
	// ClassUnregistered, ClassUnreachable, ClassLandline), or "" when the
	// code's error class says all there is.
	Class string
}

// Carrier-truth classes: what the carrier said about a message, shown as
// the recipient's error_class instead of the class that decides the next
// step (crewcast.ErrorClass), so that "blocked by the carrier's spam filter"
// never reads as a plain failure. Each refines one of the base classes; the
// tracker still acts on the base class.
const (
	ClassFiltered     = "filtered"     // blocked by a spam filter (carrier or provider)
	ClassUnregistered = "unregistered" // the sender number is not registered (10DLC)
	ClassUnreachable  = "unreachable"  // the phone or its carrier could not be reached
	ClassLandline     = "landline"     // the number cannot receive texts (landline, not SMS-capable)
)

// carrierClass maps each code with a carrier verdict to its class.
var carrierClass = map[string]string{
	"30007": ClassFiltered, "40002": ClassFiltered, "40003": ClassFiltered, "40015": ClassFiltered,
	"30034": ClassUnregistered, "40010": ClassUnregistered,
	"30003": ClassUnreachable, "30005": ClassUnreachable, "40006": ClassUnreachable,
	"30006": ClassLandline, "40001": ClassLandline, "21635": ClassLandline, "21614": ClassLandline,
}

// Documentation pages. Telnyx documents its messaging delivery codes on one
// page and its API codes on another; Twilio has one page per code.
const (
	telnyxDeliveryURL = "https://developers.telnyx.com/docs/messaging/messages/error-codes"
	telnyxAPIURL      = "https://developers.telnyx.com/development/api-fundamentals/api-errors"
	twilioURLPrefix   = "https://www.twilio.com/docs/api/errors/"
)

func telnyx(code, text string) Entry {
	url := telnyxDeliveryURL
	if code[0] == '1' {
		url = telnyxAPIURL
	}
	return Entry{Provider: "telnyx", Code: code, Text: text, URL: url}
}

func twilio(code, text string) Entry {
	return Entry{Provider: "twilio", Code: code, Text: text, URL: twilioURLPrefix + code}
}

var table = func() map[string]Entry {
	entries := []Entry{
		// Telnyx delivery errors (message.finalized errors[]).
		telnyx("40001", "The number cannot receive texts (a landline or a number no carrier routes). Do not resend; ask the person for a mobile number."),
		telnyx("40002", "The carrier flagged the message as possible spam for now. crewcast slows down and resends it."),
		telnyx("40003", "The carrier blocked your sender number as spam. Every recipient is affected: sending stopped until the sender is fixed."),
		telnyx("40004", "The recipient's carrier rejected the message. A resend may work later; it is a new message."),
		telnyx("40005", "The message expired after it left Telnyx: it may or may not have reached the phone. Check with the person before resending."),
		telnyx("40006", "The recipient's carrier was unavailable. A resend later may work; it is a new message."),
		telnyx("40008", "The carrier could not deliver the message. A resend may work later; it is a new message."),
		telnyx("40009", "The carrier refused the message body. Check the text (length, characters, links)."),
		telnyx("40011", "An upstream carrier rate limit was hit; nothing was sent. crewcast waits and resends."),
		telnyx("40012", "The destination number is not valid. Do not resend; check the number."),
		telnyx("40013", "Your sender number is not valid for this message. Every recipient is affected: fix the sender."),
		telnyx("40014", "The message expired in Telnyx's queue and never left; crewcast resends it."),
		telnyx("40015", "Telnyx's spam filter stopped the message. Review the text before resending."),
		telnyx("40300", "The person replied STOP: they opted out and must not be texted. crewcast keeps them suppressed."),
		// Telnyx codes from a third-party code list (docs/providers.md marks them [3P]).
		telnyx("40010", "Reported as: the sender number is not registered for 10DLC. Every recipient is affected: register the number's campaign."),
		telnyx("40016", "Reported as: the T-Mobile daily 10DLC cap was reached. Nothing more goes out until the cap resets."),
		telnyx("40018", "Reported as: the AT&T per-minute 10DLC cap was reached; crewcast slows down and resends."),
		telnyx("40305", "Reported as: the From number is not valid for this messaging profile. Fix the sender."),
		telnyx("40310", "Reported as: the To number is not valid. Do not resend; check the number."),
		telnyx("40312", "Reported as: the messaging profile is disabled. Every recipient is affected: check the Telnyx account."),
		telnyx("40314", "Reported as: messaging is disabled on the account. Every recipient is affected: check the Telnyx account."),
		telnyx("40318", "Reported as: Telnyx's queue is full; nothing was sent. crewcast waits and resends."),
		telnyx("40319", "Reported as: this number cannot take this kind of message (for example MMS). Send plain text or use another number."),
		telnyx("40322", "Reported as: the message content is blocked. Change the text; every recipient would be refused."),
		telnyx("40329", "Reported as: the toll-free sender is not verified. Every recipient is affected: verify the number."),
		// Telnyx API errors.
		telnyx("10002", "The phone number is not valid. Do not resend; check the number."),
		telnyx("10004", "A required field was missing from crewcast's request. Every recipient is affected; report it."),
		telnyx("10007", "Telnyx had an unexpected error: the message may or may not have gone out."),
		telnyx("10009", "Telnyx refused the API key. Every recipient is affected: check CREWCAST_TELNYX_API_KEY."),
		telnyx("10011", "Too many requests to Telnyx; nothing was sent. crewcast waits and resends."),
		telnyx("10016", "The number is not in international (+E.164) format. Check the number."),

		// Twilio synchronous errors.
		twilio("20003", "Twilio refused the account credentials. Every recipient is affected: check the account SID and auth token."),
		twilio("20429", "Too many requests to Twilio; nothing was sent. crewcast waits and resends."),
		twilio("21211", "The To number is not valid. Do not resend; check the number."),
		twilio("21606", "Your From number cannot send texts. Every recipient is affected: use an SMS-capable number."),
		twilio("21608", "A trial account can only text verified numbers. Verify the number or upgrade the account."),
		twilio("21610", "The person replied STOP: they opted out and must not be texted. crewcast keeps them suppressed."),
		twilio("21612", "Twilio cannot route a message to this number. Do not resend; ask for another number."),
		twilio("21614", "The number cannot receive texts. Do not resend; ask for a mobile number."),
		twilio("21623", "The message has more than 10 media attachments. Every recipient is affected: remove some and send again."),
		twilio("21635", "The number is a landline. Do not resend; ask for a mobile number."),
		// Twilio delivery errors (status callback ErrorCode).
		twilio("30002", "The Twilio account is suspended. Every recipient is affected: check the account."),
		twilio("30003", "The phone was unreachable (off or out of coverage). A resend later often works."),
		twilio("30005", "Reported as: the number is unknown to its carrier or no longer in service. Check the number."),
		twilio("30006", "The number is a landline or its carrier cannot take texts. Do not resend."),
		twilio("30007", "Reported as: the carrier filtered the message (often as spam). Review the text before resending."),
		twilio("30008", "Reported as: an unknown delivery error. A resend may work; it is a new message."),
		twilio("30034", "The carrier blocked the message because your sender number is not registered (US A2P 10DLC). Every message from this number is affected: register its campaign."),
	}
	m := make(map[string]Entry, len(entries))
	for _, e := range entries {
		if _, dup := m[e.Code]; dup {
			panic("errcode: duplicate code " + e.Code)
		}
		e.Class = carrierClass[e.Code]
		m[e.Code] = e
	}
	for code := range carrierClass {
		if _, ok := m[code]; !ok {
			panic("errcode: carrier class for unexplained code " + code)
		}
	}
	return m
}()

// Lookup returns the entry for a provider error code.
func Lookup(code string) (Entry, bool) {
	e, ok := table[code]
	return e, ok
}

// All returns every entry, for documentation and tests. The caller may
// change the returned slice.
func All() []Entry {
	out := make([]Entry, 0, len(table))
	for _, e := range table {
		out = append(out, e)
	}
	return out
}

// classText explains an error class when the code is missing or unknown.
var classText = map[crewcast.ErrorClass]string{
	crewcast.ClassNotSent:   "The provider refused the message before accepting it; nothing was sent.",
	crewcast.ClassRecipient: "The provider says this number cannot get the message. Do not resend; check the number.",
	crewcast.ClassSender:    "The provider refused the sender or the account. Every recipient is affected: check the provider settings.",
	crewcast.ClassCarrier:   "The message failed at the carrier. A resend may work later; it is a new message.",
	crewcast.ClassUncertain: "The provider's answer was lost or ambiguous: the message may or may not have gone out. Check with the person before resending.",
}

// Detail explains an error in plain language: the code's entry when the
// code is known, else what its class means, else "" (no error).
func Detail(code string, class crewcast.ErrorClass) string {
	if e, ok := table[code]; ok {
		return e.Text
	}
	t := classText[class]
	if code != "" && t != "" {
		return "Error " + code + ": " + t
	}
	return t
}

// URL returns the provider's documentation page for a code, or "".
func URL(code string) string {
	return table[code].URL
}

// Class is the error class a recipient shows (error_class in the API): the
// code's carrier verdict when it has one, else the base class.
func Class(code string, class crewcast.ErrorClass) string {
	if c := carrierClass[code]; c != "" {
		return c
	}
	return string(class)
}

// Carrier returns a code's carrier-truth class (filtered, unregistered,
// unreachable, landline), or "" when the carrier named no such reason.
func Carrier(code string) string {
	return carrierClass[code]
}

// Codes returns the codes of a carrier-truth class, sorted; nil for a base
// class or an unknown word.
func Codes(class string) []string {
	var out []string
	for code, c := range carrierClass {
		if c == class {
			out = append(out, code)
		}
	}
	slices.Sort(out)
	return out
}

// CarrierCodes returns every code with a carrier verdict, sorted.
func CarrierCodes() []string {
	out := slices.Collect(maps.Keys(carrierClass))
	slices.Sort(out)
	return out
}

// Classes lists every error class a recipient can show: the base classes,
// then the carrier-truth ones.
func Classes() []string {
	return []string{string(crewcast.ClassNotSent), string(crewcast.ClassRecipient), string(crewcast.ClassSender),
		string(crewcast.ClassCarrier), string(crewcast.ClassUncertain),
		ClassFiltered, ClassUnregistered, ClassUnreachable, ClassLandline}
}

// IsClass reports whether s is one of Classes.
func IsClass(s string) bool {
	return slices.Contains(Classes(), s)
}
