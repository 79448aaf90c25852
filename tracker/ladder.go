package tracker

import (
	"fmt"
	"slices"

	"github.com/crewcast/crewcast/group"
)

// Follow-up ladders (docs/design.md §17, group/ladder.go). The follow-up
// send path (followups.go) texts; a ladder step on a channel this tracker
// has no sender for is refused when the group is created, never sent as a
// text instead.

// ladderChannels are the channels whose steps the tracker can send.
var ladderChannels = []string{group.ChannelSMS}

// checkLadder refuses a policy whose ladder uses a channel the tracker
// cannot send on.
func checkLadder(p *group.Policy) error {
	if p == nil || p.Followup == nil {
		return nil
	}
	var ferrs []group.FieldError
	for i, s := range p.Followup.Steps {
		if !slices.Contains(ladderChannels, s.Channel) {
			ferrs = append(ferrs, group.FieldError{Field: fmt.Sprintf("followup.steps[%d].channel", i),
				Message: fmt.Sprintf("%s steps are not available on this server", s.Channel), Unprocessable: true})
		}
	}
	if len(ferrs) > 0 {
		return &ValidationError{Fields: ferrs, Total: len(ferrs)}
	}
	return nil
}
