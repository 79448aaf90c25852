package tracker

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// ErrSuppressed: the number is on the suppression list, so the operator
// command (retry, resolve not_delivered) that would send to it again is
// refused. → 409 "suppressed"
var ErrSuppressed = errors.New("the number is on the suppression list")

// How a suppression stops sends (docs/architecture.md, "Opt-outs"):
//
//  1. Before claiming, a group actor looks the numbers it is about to claim
//     up on the suppression list and turns those it finds into opted_out
//     (group.Suppressed, with the suppression's reason).
//  2. The claim commit itself carries the claimed numbers (Effects.Claim);
//     the store refuses it if one of them is suppressed, serialized with
//     every suppression write. So no claim commits after a suppression of
//     its number committed; a refused claim reloads the actor, and step 1
//     then finds the suppression.
//  3. A send claimed before the suppression committed is checked again by
//     the sender right before the provider call, under a read lock of the
//     number's stripe of the suppression gate; every suppression written
//     through this process (the API, STOP, provider opt-outs) holds the
//     stripe's write lock while it commits. So a provider call either
//     started before the suppression committed, or its check sees it.

// gateStripes is the number of suppression gate stripes: a suppression
// waits only for the calls in flight to numbers of its stripe.
const gateStripes = 256

// suppressionGate orders provider calls against suppression commits made
// in this process (see above).
type suppressionGate struct {
	stripes [gateStripes]sync.RWMutex
}

func stripesOf(numbers []string) []int {
	out := make([]int, 0, len(numbers))
	for _, n := range numbers {
		h := fnv.New32a()
		_, _ = h.Write([]byte(n))
		out = append(out, int(h.Sum32()%gateStripes))
	}
	slices.Sort(out) // one order for everyone: no lock-order deadlock
	return slices.Compact(out)
}

// read holds the stripes of numbers for a check and the provider call
// after it; call the returned func when the call returned.
func (g *suppressionGate) read(numbers []string) func() {
	s := stripesOf(numbers)
	for _, i := range s {
		g.stripes[i].RLock()
	}
	return func() {
		for _, i := range s {
			g.stripes[i].RUnlock()
		}
	}
}

// write holds the stripes of numbers while a suppression of them commits:
// it waits for provider calls to those stripes that already passed their
// check, and holds back new checks until the commit is done.
func (g *suppressionGate) write(numbers []string) func() {
	s := stripesOf(numbers)
	for _, i := range s {
		g.stripes[i].Lock()
	}
	return func() {
		for _, i := range s {
			g.stripes[i].Unlock()
		}
	}
}

func suppressedNumbers(ss []store.Suppression) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Number
	}
	return out
}

// AddSuppression puts a number on the suppression list (the API's POST
// /v1/suppressions). When it returns nil, no provider call to the number
// starts in this process any more, and calls that had started have
// returned. The audit entries that record it commit in the same store
// transaction.
func (t *Tracker) AddSuppression(ctx context.Context, s store.Suppression, audit ...store.AuditEntry) error {
	defer t.gate.write([]string{s.Number})()
	if err := t.st.AddSuppression(ctx, s, audit...); err != nil {
		return unavailable(ctx, "add suppression", err)
	}
	return nil
}

// refuseSuppressed answers ErrSuppressed when number is on the suppression
// list: an operator command must not make crewcast send to it again. (A
// suppression that commits after this check is caught at the claim.) A
// missing group is left for the command to report.
func (t *Tracker) refuseSuppressed(ctx context.Context, id, number string) error {
	if _, err := t.st.GetGroup(ctx, id); err != nil {
		return nil // not found or unreadable: the command answers
	}
	n, err := group.NormalizeNumber(number)
	if err != nil {
		return nil // not a number of any group: the command says so
	}
	sup, err := t.suppressed(ctx, []string{n}, false)
	if err != nil {
		return unavailable(ctx, "read suppressions", err)
	}
	if _, ok := sup[n]; ok {
		return ErrSuppressed
	}
	return nil
}

// errSuppressionCheck answers a send whose suppression check could not
// read the store: certainly not sent, so it is requeued like a rate-limited
// send and spends no attempt.
var errSuppressionCheck = &crewcast.SendError{Provider: "crewcast", Class: crewcast.ClassNotSent,
	Detail: "not sent: the suppression list could not be read before the provider call", RetryAfter: time.Second}

// guardSend is the sender's last check before a provider call (step 3
// above). On nil error the caller makes the call and then calls release.
func (t *Tracker) guardSend(ctx context.Context, j sendJob) (release func(), err error) {
	release = t.gate.read(j.req.To)
	if group.IsFollowupSend(j.send.ID) && t.fstop.stopped(stopKey(j.groupID, j.send.ID)) {
		release()
		return nil, &group.FollowupAnswered{}
	}
	if group.IsConfirmSend(j.send.ID) {
		// The answer to a STOP or HELP goes to the number that sent it,
		// suppressed or not (group/confirm.go).
		return release, nil
	}
	sup, err := t.suppressed(ctx, j.req.To, true)
	if err != nil {
		release()
		return nil, errSuppressionCheck
	}
	if len(sup) == 0 {
		return release, nil
	}
	release()
	e := &group.SuppressedAtSend{}
	for _, n := range j.req.To {
		if s, ok := sup[n]; ok {
			e.Numbers = append(e.Numbers, n)
			e.Reason = s.Reason
		}
	}
	return nil, e
}

// suppressBeforeClaim is step 1 above: it marks the recipients the next
// claim would take that are on the suppression list as opted_out. It
// reports false when the list could not be read (claim nothing then).
func (a *groupActor) suppressBeforeClaim(ctx context.Context, now time.Time, limit int) bool {
	nums := a.g.ClaimableNumbers(now, limit)
	if len(nums) == 0 {
		return true
	}
	sup, err := a.env.checks.suppressed(ctx, nums, true)
	if err != nil {
		return false
	}
	if len(sup) == 0 {
		return true
	}
	reasons := make(map[string]string, len(sup))
	for n, s := range sup {
		reasons[n] = s.Reason
	}
	if ev, ok := a.g.Suppress(reasons, now); ok {
		a.emit(ev)
	}
	return true
}

// claimedNumbers lists the numbers of a claim, and their keyed hashes,
// for Effects.Claim.
func (a *groupActor) claimedNumbers(cl group.Claimed) []string {
	var out []string
	for _, s := range cl.Sends {
		for _, i := range s.Indices {
			out = append(out, a.g.Recipients[i].Number)
			// An erased person's opt-out is kept hashed.
			out = append(out, a.env.checks.hashes(a.g.Recipients[i].Number)...)
		}
	}
	return out
}
