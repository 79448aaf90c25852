package server

import (
	"context"
	"errors"
	"testing"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/email"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/tracker"
)

type fakeOptOuts struct {
	hashes map[string]bool
	err    error
}

func (f fakeOptOuts) OptOutEmail(context.Context, string) error { return nil }
func (f fakeOptOuts) EmailOptedOut(_ context.Context, h string) (bool, error) {
	return f.hashes[h], f.err
}

// An address that opted out of email gets no mail: the step is skipped
// and says why; when the opt-outs cannot be read nothing is sent, and the
// step is certainly not sent (tried again later).
func TestMailerSkipsOptedOut(t *testing.T) {
	key := []byte("k")
	m := smtpMailer{key: key, public: "https://crew.example.com",
		optOuts: fakeOptOuts{hashes: map[string]bool{email.OptOutHash(key, "ada@example.org"): true}}}
	err := m.MailStep(context.Background(), tracker.MailStep{GroupID: "g", SendID: "f0-2", To: "ADA@example.org"})
	var skip *group.StepSkipped
	if !errors.As(err, &skip) {
		t.Fatalf("opted out: %v", err)
	}
	m.optOuts = fakeOptOuts{err: errors.New("disk gone")}
	err = m.MailStep(context.Background(), tracker.MailStep{GroupID: "g", SendID: "f0-2", To: "bo@example.org"})
	if crewcast.ClassOf(err) != crewcast.ClassNotSent {
		t.Fatalf("store error: %v (class %s)", err, crewcast.ClassOf(err))
	}
}
