package tracker

import (
	"testing"

	"github.com/crewcast/crewcast/group"
)

// TestSnapshotCadenceScalesWithTheRoster: a group's snapshot holds its
// whole roster, so a large group snapshots every two events per recipient
// rather than every SnapshotEvery events (BenchmarkWriteAmplificationLargeGroup:
// 70.6 -> 64.3 KB of WAL per recipient in 5,000-recipient groups).
func TestSnapshotCadenceScalesWithTheRoster(t *testing.T) {
	env := &groupEnv{cfg: groupConfig{SnapshotEvery: 1000}}
	for _, c := range []struct {
		recipients int
		want       uint64
	}{{0, 1000}, {170, 1000}, {500, 1000}, {5000, 10000}} {
		a := &groupActor{env: env, g: &group.Group{Recipients: make([]*group.Recipient, c.recipients)}}
		if got := a.snapshotEvery(); got != c.want {
			t.Errorf("%d recipients: snapshot every %d events, want %d", c.recipients, got, c.want)
		}
	}
	if got := (&groupActor{env: env}).snapshotEvery(); got != 1000 {
		t.Errorf("no group yet: %d, want 1000", got)
	}
}
