package server

import (
	"strings"
	"testing"
)

func TestPolicyDefaultsFromConfig(t *testing.T) {
	t.Parallel() // its own server and database
	d, err := Config{QuietHours: "21:00-07:00", DefaultTimezone: "Europe/Berlin"}.policyDefaults()
	if err != nil || d.Quiet == nil || d.Quiet.String() != "21:00-07:00" || d.Timezone != "Europe/Berlin" {
		t.Fatalf("%+v %v", d, err)
	}
	d, err = Config{QuietHours: "off"}.policyDefaults()
	if err != nil || d.Quiet != nil || d.Timezone != "UTC" {
		t.Fatalf("off: %+v %v", d, err)
	}
	for _, c := range []Config{{QuietHours: "9pm-7am"}, {DefaultTimezone: "Mars/Olympus"}} {
		if _, err := c.policyDefaults(); err == nil || !strings.Contains(err.Error(), "quiet hours") && !strings.Contains(err.Error(), "time zone") {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
