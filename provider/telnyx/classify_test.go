package telnyx

import (
	"testing"

	"github.com/crewcast/crewcast"
)

// everyCode is every Telnyx code docs/providers.md names, with its class.
var everyCode = []struct {
	code   string
	class  crewcast.ErrorClass
	optOut bool
}{
	{"40001", crewcast.ClassRecipient, false},
	{"40002", crewcast.ClassNotSent, false},
	{"40003", crewcast.ClassSender, false},
	{"40004", crewcast.ClassCarrier, false},
	{"40005", crewcast.ClassUncertain, false},
	{"40006", crewcast.ClassCarrier, false},
	{"40008", crewcast.ClassCarrier, false},
	{"40009", crewcast.ClassCarrier, false},
	{"40010", crewcast.ClassSender, false},
	{"40011", crewcast.ClassNotSent, false},
	{"40012", crewcast.ClassRecipient, false},
	{"40013", crewcast.ClassSender, false},
	{"40014", crewcast.ClassNotSent, false},
	{"40015", crewcast.ClassCarrier, false},
	{"40016", crewcast.ClassSender, false},
	{"40018", crewcast.ClassNotSent, false},
	{"40300", crewcast.ClassRecipient, true},
	{"40305", crewcast.ClassSender, false},
	{"40310", crewcast.ClassRecipient, false},
	{"40312", crewcast.ClassSender, false},
	{"40314", crewcast.ClassSender, false},
	{"40318", crewcast.ClassNotSent, false},
	{"40319", crewcast.ClassRecipient, false},
	{"40322", crewcast.ClassSender, false},
	{"40329", crewcast.ClassSender, false},
	{"10002", crewcast.ClassRecipient, false},
	{"10004", crewcast.ClassSender, false},
	{"10007", crewcast.ClassUncertain, false},
	{"10009", crewcast.ClassSender, false},
	{"10011", crewcast.ClassNotSent, false},
	{"10016", crewcast.ClassRecipient, false},
}

func TestClassifyEveryCode(t *testing.T) {
	tested := map[string]bool{}
	for _, tc := range everyCode {
		tested[tc.code] = true
		// The code decides for synchronous 4xx answers of any status and
		// for asynchronous delivery reports alike.
		for _, status := range []int{0, 400, 403, 404, 422} {
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
		{429, "10011", crewcast.ClassNotSent},
		{429, "40300", crewcast.ClassNotSent}, // the status says it was refused before acceptance
		{500, "", crewcast.ClassUncertain},
		{502, "40001", crewcast.ClassUncertain},
		{503, "10011", crewcast.ClassUncertain},
		{504, "", crewcast.ClassUncertain},
		{0, "", crewcast.ClassCarrier},
		{0, "49999", crewcast.ClassCarrier},
		{400, "", crewcast.ClassRecipient},
		{400, "49999", crewcast.ClassRecipient},
		{422, "", crewcast.ClassRecipient},
		{413, "", crewcast.ClassRecipient},
		{401, "", crewcast.ClassSender},
		{401, "49999", crewcast.ClassSender},
		{403, "", crewcast.ClassSender},
		{404, "", crewcast.ClassSender},
		{405, "", crewcast.ClassSender},
		{301, "", crewcast.ClassSender},
		{307, "", crewcast.ClassSender},
		{408, "", crewcast.ClassUncertain},
		{200, "", crewcast.ClassUncertain},
		{100, "", crewcast.ClassUncertain},
		{400, " 40300 ", crewcast.ClassRecipient},
	}
	for _, tc := range cases {
		if got, _ := Classify(tc.status, tc.code); got != tc.want {
			t.Errorf("Classify(%d, %q) = %q, want %q", tc.status, tc.code, got, tc.want)
		}
	}
}

func TestMapStatus(t *testing.T) {
	cases := map[string]crewcast.Status{
		"scheduled":            crewcast.StatusSent,
		"queued":               crewcast.StatusSent,
		"sending":              crewcast.StatusSent,
		"sent":                 crewcast.StatusSent,
		"delivered":            crewcast.StatusDelivered,
		"sending_failed":       crewcast.StatusFailed,
		"delivery_failed":      crewcast.StatusFailed,
		"expired":              crewcast.StatusFailed,
		"cancelled":            crewcast.StatusFailed,
		"canceled":             crewcast.StatusFailed,
		"delivery_unconfirmed": crewcast.StatusUnknown,
		"unknown":              crewcast.StatusUnknown,
		"DELIVERED":            crewcast.StatusDelivered,
	}
	for in, want := range cases {
		if got, ok := MapStatus(in); !ok || got != want {
			t.Errorf("MapStatus(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "webhook_delivered", "received", "vanished"} {
		if got, ok := MapStatus(in); ok {
			t.Errorf("MapStatus(%q) = %q, want not ok", in, got)
		}
	}
}
