package group

import (
	"encoding/json"
	"strings"

	"github.com/crewcast/crewcast"
)

// CountsJSON is a group's counts as the API, the webhooks and the command
// line show them. The domain keeps the tally per response option flat, as
// CountResponsePrefix + key; on the wire it is nested as
// counts.responses ({"<key>":n}, docs/design.md §11), and the answers per
// channel (CountByChannelPrefix) as counts.by_channel (§17), once there is
// one. Marshal nests, Unmarshal flattens again.
type CountsJSON map[string]int

func (c CountsJSON) MarshalJSON() ([]byte, error) {
	out := make(map[string]any, len(c)+1)
	responses, byChannel := map[string]int{}, map[string]int{}
	for k, v := range c {
		if key, ok := strings.CutPrefix(k, CountResponsePrefix); ok {
			responses[key] = v
			continue
		}
		if key, ok := strings.CutPrefix(k, CountByChannelPrefix); ok {
			byChannel[key] = v
			continue
		}
		out[k] = v
	}
	out["responses"] = responses
	if len(byChannel) > 0 { // only once someone answered
		out["by_channel"] = byChannel
	}
	return json.Marshal(out)
}

func (c *CountsJSON) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*c = make(CountsJSON, len(raw))
	for k, v := range raw {
		if k == "responses" || k == "by_channel" {
			prefix := CountResponsePrefix
			if k == "by_channel" {
				prefix = CountByChannelPrefix
			}
			var rs map[string]int
			if err := json.Unmarshal(v, &rs); err != nil {
				return err
			}
			for rk, n := range rs {
				(*c)[prefix+rk] = n
			}
			continue
		}
		var n int
		if err := json.Unmarshal(v, &n); err != nil {
			return err
		}
		(*c)[k] = n
	}
	return nil
}

// ViewCounts is a group row's stored counts as they are shown: every key
// of CountKeys (zero or not), the tally per response option, and no_reply
// derived for a row written before no_reply was counted.
func ViewCounts(stored map[string]int) CountsJSON {
	counts := make(CountsJSON, len(CountKeys))
	for _, k := range CountKeys {
		counts[k] = stored[k]
	}
	for k, v := range stored {
		if strings.HasPrefix(k, CountResponsePrefix) || strings.HasPrefix(k, CountByChannelPrefix) {
			counts[k] = v
		}
	}
	if _, ok := stored[CountNoReply]; !ok && len(stored) > 0 {
		// Everyone who was texted and has not replied (an opted-out person
		// who replied STOP is only approximately not subtracted twice; the
		// next commit of the group writes the exact figure).
		n := -stored[CountReplied] - stored[string(crewcast.StatusOptedOut)] - stored[string(crewcast.StatusCanceled)]
		for _, s := range crewcast.AllStatuses {
			n += stored[string(s)]
		}
		counts[CountNoReply] = max(n, 0)
	}
	return counts
}
