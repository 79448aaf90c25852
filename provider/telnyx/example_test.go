package telnyx_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/crewcast/crewcast/provider/telnyx"
)

// Verify a webhook with the account's public key before reading its body.
// The values are the published RFC 8032 test-1 vector from docs/providers.md.
func ExampleVerify() {
	pub, err := telnyx.ParsePublicKey("11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=")
	if err != nil {
		panic(err)
	}
	body := []byte(`{"data":{"event_type":"message.finalized","id":"evt-1"},"meta":{"attempt":1}}`)
	h := http.Header{}
	h.Set("telnyx-signature-ed25519", "u0Qe+Xuh0+/wpD5hqTnQS4CrVoIlg22gEC6m/6HJWgP9h4uqLwQ5O1bQDodqJTOsdm9vxFD9PM5VP/lkU84QDA==")
	h.Set("telnyx-timestamp", "1700000000")

	now := time.Unix(1700000100, 0) // 100 s later: inside the window
	fmt.Println(telnyx.Verify(pub, h, body, now, telnyx.DefaultTolerance))

	late := time.Unix(1700000301, 0)
	fmt.Println(telnyx.Verify(pub, h, body, late, telnyx.DefaultTolerance))
	// Output:
	// <nil>
	// telnyx: webhook signature invalid: timestamp is 5m1s away from now, outside ±5m0s
}

// Classify tells the caller what a Telnyx error means for the next step.
func ExampleClassify() {
	for _, c := range []struct {
		status int
		code   string
	}{{403, "40300"}, {429, "10011"}, {0, "40006"}, {503, ""}} {
		class, optOut := telnyx.Classify(c.status, c.code)
		fmt.Println(c.status, c.code, class, optOut)
	}
	// Output:
	// 403 40300 recipient true
	// 429 10011 not_sent false
	// 0 40006 carrier false
	// 503  uncertain false
}
