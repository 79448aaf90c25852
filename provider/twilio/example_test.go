package twilio_test

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/crewcast/crewcast/provider/twilio"
)

// Verify a form webhook against the URL Twilio posted to. The values are
// the published twilio-go vector from docs/providers.md; the signature made for
// the URL with :443 verifies against the URL without it too.
func ExampleVerify() {
	params := url.Values{
		"CallSid": {"CA1234567890ABCDE"},
		"Caller":  {"+14158675309"},
		"Digits":  {"1234"},
		"From":    {"+14158675309"},
		"To":      {"+18005551212"},
	}
	const hook = "https://mycompany.com/myapp.php?foo=1&bar=2"
	for _, sig := range []string{"RSOYDt4T1cUTdK1PDd93/VVr8B8=", "kvajT1Ptam85bY51eRf/AJRuM3w=", "AAAAAAAAAAAAAAAAAAAAAAAAAAA="} {
		h := http.Header{"X-Twilio-Signature": {sig}}
		fmt.Println(twilio.Verify("12345", hook, h, params))
	}
	// Output:
	// <nil>
	// <nil>
	// twilio: webhook signature invalid: signature does not match
}
