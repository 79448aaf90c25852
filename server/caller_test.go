package server

import (
	"testing"

	"github.com/crewcast/crewcast/group"
)

// A call says the text without its reply hint, then one key per option.
func TestCallScript(t *testing.T) {
	opts := []group.Option{{Key: "Y", Label: "Coming"}, {Key: "N", Label: "Can't make it"}}
	got := CallScript("Reminder: Crew call 7am\n"+group.Hint(opts), opts)
	if want := "Reminder: Crew call 7am. Press 1 for Coming, press 2 for Can't make it."; got != want {
		t.Fatalf("CallScript = %q, want %q", got, want)
	}
	if got := CallScript("Crew call", nil); got != "Crew call" {
		t.Fatalf("no options: %q", got)
	}
}
