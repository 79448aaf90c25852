package webhookout

import (
	"testing"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/store"
)

// A webhook's recipient shows the carrier's verdict as its error_class,
// as the API does (errcode.Class).
func TestRecipientOfShowsCarrierTruth(t *testing.T) {
	for code, want := range map[string]string{"30007": "filtered", "30034": "unregistered", "30003": "unreachable", "30008": "carrier"} {
		r := RecipientOf(store.DeliveryRow{Number: "+15550100001", Status: crewcast.StatusFailed, ErrorCode: code, ErrorClass: crewcast.ClassCarrier})
		if r.ErrorClass != want || r.ErrorDetail == "" || r.ErrorURL == "" {
			t.Errorf("RecipientOf(code %s) = class %q detail %q url %q; want class %q", code, r.ErrorClass, r.ErrorDetail, r.ErrorURL, want)
		}
	}
}
