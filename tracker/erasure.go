package tracker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// ErrInvalidNumber: the number to erase is not a phone number. → 422
var ErrInvalidNumber = errors.New("not a phone number")

// AuditPersonErased is the audit action of an erasure (docs/design.md §14). Its
// target is the keyed hash of the number ("" without a hash key), never
// the number.
const AuditPersonErased = "person.erased"

// ErasureReport answers an erasure (POST /v1/erasure). It never holds the
// number in clear.
type ErasureReport struct {
	// Erased is false when crewcast kept nothing about the number.
	Erased bool `json:"erased"`
	// Replacement is what replaced the number: "keyed_hash" (HMAC with
	// CREWCAST_HASH_KEY) or "random_token" (no key configured).
	Replacement string `json:"replacement"`
	// Subject is the keyed hash of the number ("" without a key): the
	// audit trail's name for the person.
	Subject string `json:"subject,omitempty"`
	// Groups counts the groups the person was removed from.
	Groups int `json:"groups"`
	// Changed counts the stored items changed per place.
	Changed store.ErasedCounts `json:"changed"`
	// OptOutKept is true when the person had opted out and the opt-out
	// stays in force as a keyed hash.
	OptOutKept bool `json:"opt_out_kept"`
	// Message says in plain words what happened.
	Message string `json:"message"`
	// Warnings say what could not be done as asked.
	Warnings []string `json:"warnings,omitempty"`
}

// erasedHold is how long this process refuses sends to an erased number
// that had no opt-out to keep: longer than any claimed send waits for its
// provider call, short enough that a person added again later is texted.
const erasedHold = time.Hour

// erasedNumbers are numbers erased by this process recently: a send that
// was claimed before the erasure and reaches its provider call after it is
// refused (guardSend), key or no key.
type erasedNumbers struct {
	mu sync.Mutex
	m  map[string]time.Time // number → until
}

func (e *erasedNumbers) add(number string, until time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]time.Time{}
	}
	e.m[number] = until
}

func (e *erasedNumbers) has(number string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	until, ok := e.m[number]
	if ok && !now.Before(until) {
		delete(e.m, number)
		return false
	}
	return ok
}

// HashedNumber is the keyed hash an erased person's number and opt-out
// are kept under, or "" without a hash key.
func (t *Tracker) HashedNumber(number string) string { return t.hashed(number) }

// hashed returns the keyed hash of number, or "" without a key.
func (t *Tracker) hashed(number string) string {
	if len(t.cfg.HashKey) == 0 {
		return ""
	}
	return HashNumber(t.cfg.HashKey, number)
}

// hashes returns the keyed hashes an erased person's opt-out may be kept
// under: under HashKey, then under each of PastHashKeys (none without a
// key).
func (t *Tracker) hashes(number string) []string {
	if len(t.cfg.HashKey) == 0 {
		return nil
	}
	out := []string{HashNumber(t.cfg.HashKey, number)}
	for _, k := range t.cfg.PastHashKeys {
		if len(k) > 0 {
			out = append(out, HashNumber(k, number))
		}
	}
	return out
}

// suppressed is the suppression check of every send path: a number is
// suppressed when it is on the list in clear or as one of its keyed
// hashes (an erased person's opt-out), or, with recent, when this process
// erased it within erasedHold. Results are keyed by the numbers asked.
func (t *Tracker) suppressed(ctx context.Context, numbers []string, recent bool) (map[string]store.Suppression, error) {
	q := numbers
	var back map[string]string
	if len(t.cfg.HashKey) > 0 && len(numbers) > 0 {
		back = make(map[string]string, len(numbers))
		q = make([]string, 0, 2*len(numbers))
		q = append(q, numbers...)
		for _, n := range numbers {
			for _, h := range t.hashes(n) {
				back[h] = n
				q = append(q, h)
			}
		}
	}
	sup, err := t.st.Suppressed(ctx, q)
	if err != nil {
		return nil, err
	}
	for h, n := range back {
		if s, ok := sup[h]; ok && h != n {
			delete(sup, h)
			if _, ok := sup[n]; !ok {
				s.Number = n
				sup[n] = s
			}
		}
	}
	if recent {
		now := t.cfg.Clock.Now()
		for _, n := range numbers {
			if _, ok := sup[n]; !ok && t.erased.has(n, now) {
				sup[n] = store.Suppression{Number: n, Reason: store.ReasonErased}
			}
		}
	}
	return sup, nil
}

// Erase forgets one person (docs/design.md §6): every group they are in is
// rewritten by its own actor (so no commit of the group races the
// rewrite), then everything else that names them. The number is replaced
// by its keyed hash, or by a random token without a hash key; an opt-out
// stays in force as the keyed hash. Sends to them stop: pending ones
// become opted_out in each group's turn, and a send claimed before the
// erasure is refused at its provider call (the suppression gate is held
// while the erasure runs, and suppressed then sees the number). It is
// idempotent and audited: the person.erased entry, naming the person by
// their keyed hash only and the actor ctx carries (else the system, by
// who asked: an API key id), commits with the erasure's last step
// (store.EraseNumber); a refused entry fails that step and the erasure.
// An erasure that fails on the way has no entry: it answered an error,
// and asking again finishes it.
func (t *Tracker) Erase(ctx context.Context, number, by string) (ErasureReport, error) {
	n, err := group.NormalizeNumber(number)
	if err != nil {
		return ErasureReport{}, fmt.Errorf("%w: %v", ErrInvalidNumber, err)
	}
	rep := ErasureReport{Changed: store.ErasedCounts{}, Replacement: "keyed_hash", Subject: t.hashed(n)}
	replacement := rep.Subject
	if replacement == "" {
		rep.Replacement = "random_token"
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return rep, err
		}
		replacement = "t:" + hex.EncodeToString(b[:])
	}
	// From here on no provider call to the number starts in this process
	// (guardSend waits for the gate, then sees the number as erased), and
	// calls already past their check have returned.
	defer t.gate.write([]string{n})()
	t.erased.add(n, t.cfg.Clock.Now().Add(erasedHold))

	ids, err := t.st.GroupsWithNumber(ctx, n)
	if err != nil {
		return rep, unavailable(ctx, "find the person's groups", err)
	}
	for _, id := range ids {
		counts, err := t.eraseGroupOnOwner(ctx, id, n, replacement)
		if err != nil {
			return rep, unavailable(ctx, "erase from group "+id, err)
		}
		if counts.Total() > 0 {
			rep.Groups++
			rep.Changed.Add(counts)
		}
	}
	who, ok := store.AuditActorFrom(ctx)
	if !ok {
		who = store.AuditActor{Type: store.ActorSystem, ID: by}
	}
	entry := store.AuditEntry{At: t.cfg.Clock.Now().UTC(), Actor: who, Action: AuditPersonErased, Target: rep.Subject}
	rest, err := t.st.EraseNumber(ctx, n, replacement, rep.Subject, entry)
	if err != nil {
		return rep, unavailable(ctx, "erase the person", err)
	}
	rep.Changed.Add(rest)
	rep.Erased = rep.Changed.Total() > 0
	if rest["suppressions"] > 0 {
		if rep.Subject != "" {
			rep.OptOutKept = true
		} else {
			rep.Warnings = append(rep.Warnings, "the person's opt-out could not be kept: without CREWCAST_HASH_KEY there is no keyed hash to keep it under, so the number is no longer on the suppression list")
		}
	}
	if rep.Subject == "" {
		rep.Warnings = append(rep.Warnings, "CREWCAST_HASH_KEY is not set: the number was replaced by a random token, so the person's records can no longer be counted together")
	}
	switch {
	case !rep.Erased:
		rep.Message = "nothing to erase: crewcast keeps no data about this number"
	default:
		rep.Message = fmt.Sprintf("erased: the number was replaced by a %s in %d group(s) and everywhere else it was kept; message and reply bodies were redacted",
			map[string]string{"keyed_hash": "keyed hash", "random_token": "random token"}[rep.Replacement], rep.Groups)
	}
	// The audit record: the keyed hash names the person, never the number.
	t.cfg.Logger.Info("audit: erasure", "by", by, "subject", rep.Subject, "replacement", rep.Replacement,
		"erased", rep.Erased, "groups", rep.Groups, "changed", rep.Changed.Total(), "opt_out_kept", rep.OptOutKept)
	return rep, nil
}

// eraseRetry is how long an erasure keeps trying a group whose shard is
// moving between nodes, and how often.
const (
	eraseRetryFor   = 30 * time.Second
	eraseRetryEvery = 200 * time.Millisecond
)

// eraseGroupOnOwner runs one group's erasure step on the node that owns
// the group (docs/design.md §9): here when this node holds its shard (or is a
// single node), else on the owner through ClusterConfig.EraseRemote,
// which runs EraseInGroup there. A shard that is moving is tried again
// for eraseRetryFor.
func (t *Tracker) eraseGroupOnOwner(ctx context.Context, id, number, replacement string) (store.ErasedCounts, error) {
	deadline := time.Now().Add(eraseRetryFor)
	for {
		url, local, err := t.GroupOwner(ctx, id)
		switch {
		case err != nil:
		case local:
			var counts store.ErasedCounts
			if counts, err = t.eraseLocal(ctx, id, number, replacement); err == nil {
				return counts, nil
			}
		case url != "" && t.cluster.Load() != nil && t.cluster.Load().cfg.EraseRemote != nil:
			var counts store.ErasedCounts
			if counts, err = t.cluster.Load().cfg.EraseRemote(ctx, url, id, number, replacement); err == nil {
				return counts, nil
			}
			if !errors.Is(err, ErrUnavailable) {
				return nil, err
			}
		default:
			err = fmt.Errorf("%w: the group's shard is moving", ErrUnavailable)
		}
		if t.cluster.Load() == nil || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(eraseRetryEvery):
		}
	}
}

// EraseInGroup is one group's step of an erasure asked by another node
// (ClusterConfig.EraseRemote): this node must own the group. Like Erase,
// it first closes this node's suppression gate to the number and holds
// it for erasedHold, so a send of the group claimed before the erasure
// and queued here is refused at its provider call.
func (t *Tracker) EraseInGroup(ctx context.Context, id, number, replacement string) (store.ErasedCounts, error) {
	n, err := group.NormalizeNumber(number)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidNumber, err)
	}
	if !t.ownsKey(id) {
		return nil, fmt.Errorf("%w: this node does not own the group", ErrUnavailable)
	}
	defer t.gate.write([]string{n})()
	t.erased.add(n, t.cfg.Clock.Now().Add(erasedHold))
	return t.eraseLocal(ctx, id, n, replacement)
}

// eraseLocal asks this node's actor of the group to erase the person.
func (t *Tracker) eraseLocal(ctx context.Context, id, number, replacement string) (store.ErasedCounts, error) {
	// Our own deadline, so that unavailable (which reads ctx) tells it
	// from the caller giving up.
	askCtx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	res, err := actor.Ask(askCtx, t.groups.Get(id), func(r actor.Reply[erasureResult]) groupMsg {
		return msgErase{number: number, replacement: replacement, reply: r}
	})
	if err == nil {
		err = res.err
	}
	return res.counts, err
}

// msgErase asks a group actor to erase one person in its own turn.
type msgErase struct {
	number, replacement string
	reply               actor.Reply[erasureResult]
}

type erasureResult struct {
	counts store.ErasedCounts
	err    error
}

func (msgErase) isGroupMsg() {}

func (m msgErase) replyErr(err error) { m.reply.Send(erasureResult{err: err}) }

// erase removes one person from this group: their pending sends become
// opted_out (committed first, so the rewritten journal replays to a group
// that never sends to them), then the store rewrites the journal and the
// group's rows, and the actor reloads from what is now stored.
func (a *groupActor) erase(c *actor.Context[groupMsg], m msgErase) erasureResult {
	ctx := c.Context()
	if !a.env.ownsKey(a.key) {
		// The shard moved away since the ask: the new owner's actor does it.
		return erasureResult{err: fmt.Errorf("%w: the group moved to another node", ErrUnavailable)}
	}
	ge := store.GroupErasure{Number: m.number, Replacement: m.replacement}
	if a.g == nil {
		// No journal: let the store clean whatever rows are left.
		ge.Event = group.Eraser(m.number, m.replacement, true)
		counts, err := a.env.st.EraseFromGroup(ctx, a.key, ge)
		return erasureResult{counts: counts, err: err}
	}
	if ev, ok := a.g.Suppress(map[string]string{m.number: store.ReasonErased}, a.env.cfg.Clock.Now()); ok {
		a.emit(ev)
		if err := a.flush(c); err != nil {
			return erasureResult{err: err}
		}
	}
	// The message text goes with the person once nobody else is sent it.
	ge.RedactText = a.g.Status == crewcast.GroupComplete || a.g.Status == crewcast.GroupCanceled
	ge.Event = group.EraserWith(m.number, m.replacement, group.EraseTexts{Message: ge.RedactText,
		Escalation: ge.RedactText || a.g.EscalatedTo(m.number)})
	counts, err := a.env.st.EraseFromGroup(ctx, a.key, ge)
	if err != nil {
		return erasureResult{err: err} // rolled back: memory and store still agree
	}
	// The in-memory state still names the person: read the group again.
	if err := a.load(c); err != nil {
		a.enterBroken(c, err)
	}
	return erasureResult{counts: counts}
}
