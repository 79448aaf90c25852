package tracker

import (
	"slices"
	"time"

	"github.com/crewcast/crewcast/store"
)

// withConsent returns e with the consent changes its suppression effects
// make (docs/architecture.md, "Consent records"), so that they commit with
// the suppression: a STOP is opted_out from sms with the words of the
// number's reply in the unit, a START (Unsuppress) opted_in from sms, a
// provider opt-out opted_out from the provider. An operator's suppression
// is recorded by the request that made it. e itself is not changed: a
// unit committed again after a failure derives the same entries.
func withConsent(e store.Effects, at time.Time) store.Effects {
	if len(e.Suppress) == 0 && len(e.Unsuppress) == 0 {
		return e
	}
	words := make(map[string]string, len(e.Replies))
	for _, r := range e.Replies {
		words[r.Number] = r.Text // the last reply of the number in the unit
	}
	consent := slices.Clone(e.Consent)
	for _, s := range e.Suppress {
		c := store.ConsentEntry{Number: s.Number, At: s.CreatedAt, State: store.ConsentOptedOut}
		if c.At.IsZero() {
			c.At = at
		}
		switch s.Reason {
		case store.ReasonStop:
			c.Source, c.Text = store.ConsentSourceSMS, words[s.Number]
		case store.ReasonProviderOptOut:
			c.Source = store.ConsentSourceProvider
		default:
			continue
		}
		consent = append(consent, c)
	}
	for _, n := range e.Unsuppress {
		consent = append(consent, store.ConsentEntry{Number: n, At: at, State: store.ConsentOptedIn,
			Source: store.ConsentSourceSMS, Text: words[n]})
	}
	e.Consent = consent
	return e
}
