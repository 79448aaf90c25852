package twilio

import (
	"testing"

	"github.com/crewcast/crewcast"
)

// everyCode is every Twilio code docs/providers.md names, with its class.
var everyCode = []struct {
	code   string
	class  crewcast.ErrorClass
	optOut bool
}{
	{"21211", crewcast.ClassRecipient, false},
	{"21610", crewcast.ClassRecipient, true},
	{"21612", crewcast.ClassRecipient, false},
	{"21614", crewcast.ClassRecipient, false},
	{"21635", crewcast.ClassRecipient, false},
	{"30006", crewcast.ClassRecipient, false},
	{"20003", crewcast.ClassSender, false},
	{"21606", crewcast.ClassSender, false},
	{"21608", crewcast.ClassSender, false},
	{"21623", crewcast.ClassSender, false},
	{"30002", crewcast.ClassSender, false},
	{"30034", crewcast.ClassSender, false},
	{"20429", crewcast.ClassNotSent, false},
	{"30003", crewcast.ClassCarrier, false},
	{"30005", crewcast.ClassCarrier, false},
	{"30007", crewcast.ClassCarrier, false},
	{"30008", crewcast.ClassCarrier, false},
}

func TestClassifyEveryCode(t *testing.T) {
	tested := map[string]bool{}
	for _, tc := range everyCode {
		tested[tc.code] = true
		for _, status := range []int{0, 400, 401, 403, 404} {
			class, optOut := Classify(status, tc.code)
			if class != tc.class || optOut != tc.optOut {
				t.Errorf("Classify(%d, %s) = %q, %v; want %q, %v", status, tc.code, class, optOut, tc.class, tc.optOut)
			}
		}
		if class, optOut := ClassifyDelivery(tc.code); class != tc.class || optOut != tc.optOut {
			t.Errorf("ClassifyDelivery(%s) = %q, %v", tc.code, class, optOut)
		}
	}
	for code := range codeClasses {
		if !tested[code] {
			t.Errorf("code %s is in the table but not in this test", code)
		}
	}
}

func TestClassifyByStatus(t *testing.T) {
	cases := []struct {
		status int
		code   string
		want   crewcast.ErrorClass
	}{
		{429, "", crewcast.ClassNotSent},
		{429, "21610", crewcast.ClassNotSent},
		{500, "", crewcast.ClassUncertain},
		{503, "21211", crewcast.ClassUncertain},
		{0, "", crewcast.ClassCarrier},
		{0, "39999", crewcast.ClassCarrier},
		{400, "", crewcast.ClassRecipient},
		{400, "21999", crewcast.ClassRecipient},
		{401, "", crewcast.ClassSender},
		{403, "", crewcast.ClassSender},
		{404, "20404", crewcast.ClassSender},
		{405, "", crewcast.ClassSender},
		{302, "", crewcast.ClassSender},
		{408, "", crewcast.ClassUncertain},
		{200, "", crewcast.ClassUncertain},
	}
	for _, tc := range cases {
		if got, _ := Classify(tc.status, tc.code); got != tc.want {
			t.Errorf("Classify(%d, %q) = %q, want %q", tc.status, tc.code, got, tc.want)
		}
	}
}

func TestMapStatus(t *testing.T) {
	cases := map[string]crewcast.Status{
		"accepted":            crewcast.StatusSent,
		"scheduled":           crewcast.StatusSent,
		"queued":              crewcast.StatusSent,
		"sending":             crewcast.StatusSent,
		"sent":                crewcast.StatusSent,
		"delivered":           crewcast.StatusDelivered,
		"read":                crewcast.StatusDelivered,
		"failed":              crewcast.StatusFailed,
		"undelivered":         crewcast.StatusFailed,
		"canceled":            crewcast.StatusFailed,
		"partially_delivered": crewcast.StatusUnknown,
		"Delivered":           crewcast.StatusDelivered,
	}
	for in, want := range cases {
		if got, ok := MapStatus(in); !ok || got != want {
			t.Errorf("MapStatus(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "receiving", "received", "teleported"} {
		if got, ok := MapStatus(in); ok {
			t.Errorf("MapStatus(%q) = %q, want not ok", in, got)
		}
	}
}
