package errcode_test

import (
	"strings"
	"testing"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/errcode"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
)

// providersMD lists every code docs/providers.md §1.10 and §2.7 name.
var providersMD = map[string][]string{
	"telnyx": {"40001", "40002", "40003", "40004", "40005", "40006", "40008", "40009", "40011", "40012", "40013",
		"40014", "40015", "40300", "40010", "40016", "40018", "40305", "40310", "40312", "40314", "40318", "40319",
		"40322", "40329", "10002", "10004", "10007", "10009", "10011", "10016"},
	"twilio": {"21211", "21610", "21612", "21614", "21635", "21606", "21608", "21623", "20003", "20429", "30002",
		"30003", "30006", "30005", "30007", "30008",
		// 30034 (unregistered number) is named by docs/operations.md, "Carrier truth".
		"30034"},
}

func TestEveryDocumentedCodeIsExplained(t *testing.T) {
	n := 0
	for provider, codes := range providersMD {
		for _, c := range codes {
			n++
			e, ok := errcode.Lookup(c)
			if !ok {
				t.Errorf("%s code %s has no entry", provider, c)
				continue
			}
			if e.Provider != provider || e.Code != c {
				t.Errorf("%s: entry %+v, want provider %s", c, e, provider)
			}
		}
	}
	if got := len(errcode.All()); got != n {
		t.Errorf("table has %d entries, docs/providers.md names %d codes", got, n)
	}
}

func TestEntriesAreUsable(t *testing.T) {
	for _, e := range errcode.All() {
		if !strings.HasPrefix(e.URL, "https://") {
			t.Errorf("%s: URL %q is not https", e.Code, e.URL)
		}
		if e.Provider == "twilio" && !strings.HasSuffix(e.URL, "/"+e.Code) {
			t.Errorf("%s: Twilio URL %q does not name the code", e.Code, e.URL)
		}
		if len(e.Text) < 20 || !strings.HasSuffix(e.Text, ".") || strings.Contains(e.Text, e.Code) {
			t.Errorf("%s: text %q should be a plain sentence that does not just repeat the code", e.Code, e.Text)
		}
		// The code's first digit names the provider, so a recipient row
		// needs no provider column to be explained.
		wantTelnyx := e.Code[0] == '1' || e.Code[0] == '4'
		if wantTelnyx != (e.Provider == "telnyx") {
			t.Errorf("%s: provider %s does not follow the code ranges", e.Code, e.Provider)
		}
	}
}

// TestTextAgreesWithClassification keeps the advice ("do not resend",
// "every recipient is affected") in line with how the adapters classify
// the code.
func TestTextAgreesWithClassification(t *testing.T) {
	for _, e := range errcode.All() {
		var class crewcast.ErrorClass
		if e.Provider == "telnyx" {
			class, _ = telnyx.ClassifyDelivery(e.Code)
		} else {
			class, _ = twilio.ClassifyDelivery(e.Code)
		}
		text := strings.ToLower(e.Text)
		switch class {
		case crewcast.ClassSender:
			if !strings.Contains(text, "every recipient") && !strings.Contains(text, "account") && !strings.Contains(text, "sender") && !strings.Contains(text, "nothing more goes out") {
				t.Errorf("%s (sender class): %q does not say the sender/account is at fault", e.Code, e.Text)
			}
		case crewcast.ClassNotSent:
			if !strings.Contains(text, "resend") {
				t.Errorf("%s (not sent): %q does not say crewcast resends", e.Code, e.Text)
			}
		case crewcast.ClassUncertain:
			if !strings.Contains(text, "may or may not") {
				t.Errorf("%s (uncertain): %q does not say the outcome is unknown", e.Code, e.Text)
			}
		}
	}
}

func TestDetail(t *testing.T) {
	if d := errcode.Detail("40001", crewcast.ClassRecipient); !strings.Contains(d, "landline") {
		t.Errorf("Detail(40001) = %q", d)
	}
	if d := errcode.Detail("99999", crewcast.ClassCarrier); !strings.HasPrefix(d, "Error 99999: ") || !strings.Contains(d, "carrier") {
		t.Errorf("Detail of an unknown code = %q, want the class explained and the code named", d)
	}
	if d := errcode.Detail("", crewcast.ClassUncertain); !strings.Contains(d, "may or may not") {
		t.Errorf("Detail of a class alone = %q", d)
	}
	if d := errcode.Detail("", crewcast.ClassNone); d != "" {
		t.Errorf("Detail of no error = %q, want empty", d)
	}
	if u := errcode.URL("21610"); u != "https://www.twilio.com/docs/api/errors/21610" {
		t.Errorf("URL(21610) = %q", u)
	}
	if u := errcode.URL("nope"); u != "" {
		t.Errorf("URL of an unknown code = %q, want empty", u)
	}
}
