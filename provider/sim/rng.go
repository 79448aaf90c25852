package sim

import (
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// decider is the one random source behind every decision. Each caller takes
// the lock for a whole group of draws, so a request's draws are contiguous
// and the sequence depends only on the order of requests.
type decider struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newDecider(seed *int64) *decider {
	var s1, s2 uint64
	if seed != nil {
		s1, s2 = uint64(*seed), 0x6372657763617374 // "crewcast"
	} else {
		var b [16]byte
		_, _ = crand.Read(b[:]) // crypto/rand.Read never returns an error
		s1, s2 = binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
	}
	return &decider{rng: rand.New(rand.NewPCG(s1, s2))}
}

// draw runs f with exclusive use of the random source.
func (d *decider) draw(f func(r *draws)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&draws{d.rng})
}

// draws wraps the source with the shapes the simulator needs.
type draws struct{ r *rand.Rand }

// hit reports true with probability p; it always consumes one draw so the
// sequence does not depend on the knob values.
func (d *draws) hit(p float64) bool { return d.r.Float64() < p }

// pick returns an index in [0,n); always one draw.
func (d *draws) pick(n int) int { return d.r.IntN(max(n, 1)) }

// delay draws a duration in [min,max] ms; always one draw.
func (d *draws) delay(ms [2]int) time.Duration {
	span := ms[1] - ms[0] + 1
	return time.Duration(ms[0]+d.r.IntN(max(span, 1))) * time.Millisecond
}

// uuid returns a version-4 UUID from the source.
func (d *draws) uuid() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], d.r.Uint64())
	binary.LittleEndian.PutUint64(b[8:], d.r.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// hex32 returns 32 hex digits from the source.
func (d *draws) hex32() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], d.r.Uint64())
	binary.LittleEndian.PutUint64(b[8:], d.r.Uint64())
	return hex.EncodeToString(b[:])
}

// outcome is a recipient's planned fate.
type outcome int

const (
	outcomeDelivered outcome = iota
	outcomeFailed
	outcomeUnknown
)

// stepPlan is the plan for one webhook event of a recipient.
type stepPlan struct {
	id    string // Telnyx event id / Twilio idempotency token
	delay time.Duration
	drop  bool
	dup   bool
}

// recipientPlan is everything decided for one recipient at acceptance.
type recipientPlan struct {
	outcome outcome
	code    string // error code when failed
	reorder bool
	steps   [3]stepPlan // sent, final (Telnyx) or queued, sent, final (Twilio)
	reply   bool
	text    string   // reply text
	replyID string   // reply message id
	replyEv stepPlan // the reply's webhook event
}

// planRecipient draws a recipient's plan. It draws the same number of values
// whatever the knobs, so changing one knob never shifts the others' draws.
func (d *draws) planRecipient(f Faults, provider string) recipientPlan {
	var p recipientPlan
	u := d.r.Float64()
	switch {
	case u < f.FailRate:
		p.outcome = outcomeFailed
	case u < f.FailRate+f.UnknownRate:
		p.outcome = outcomeUnknown
	}
	codes := f.failCodes(provider)
	i := d.pick(len(codes))
	if p.outcome == outcomeFailed {
		p.code = codes[i]
	}
	p.reorder = d.hit(0.5) && f.Reorder
	for i := range p.steps {
		p.steps[i] = d.step(f, provider)
	}
	p.reply = d.hit(f.ReplyRate) && p.outcome == outcomeDelivered
	p.text = f.ReplyTexts[d.pick(len(f.ReplyTexts))]
	p.replyID = d.messageID(provider)
	p.replyEv = d.step(f, provider)
	return p
}

// step draws one event's id, delay, drop and duplicate.
func (d *draws) step(f Faults, provider string) stepPlan {
	id := d.uuid()
	if provider == providerTwilio {
		id = d.hex32()
	}
	return stepPlan{id: id, delay: d.delay(f.DelayMS), drop: d.hit(f.DropRate), dup: d.hit(f.DuplicateRate)}
}

// messageID returns a Telnyx message id (UUID) or a Twilio SMS sid.
func (d *draws) messageID(provider string) string {
	if provider == providerTwilio {
		return "SM" + d.hex32()
	}
	return d.uuid()
}

// requestFault is the fault drawn for one send before acceptance.
type requestFault int

const (
	faultNone requestFault = iota
	faultRateLimit
	fault5xx
)

// preAccept draws whether a send is refused before acceptance.
func (d *draws) preAccept(f Faults) requestFault {
	u := d.r.Float64()
	switch {
	case u < f.RateLimitRate:
		return faultRateLimit
	case u < f.RateLimitRate+f.Error5xxRate:
		return fault5xx
	}
	return faultNone
}

// applyScript overrides a drawn plan with a recipient's scripted fate (see
// Faults.Script). It reports whether the script asks for the ambiguous
// accept-timeout. Scripts are applied after the draws, so they never shift
// the random sequence.
func applyScript(p *recipientPlan, script string, f Faults, provider string) (acceptTimeout bool) {
	verb, arg, _ := strings.Cut(script, ":")
	switch verb {
	case "deliver":
		p.outcome, p.reply = outcomeDelivered, false
	case "fail":
		p.outcome, p.reply = outcomeFailed, false
		p.code = arg
		if p.code == "" {
			p.code = f.failCodes(provider)[0]
		}
	case "unknown":
		p.outcome, p.reply = outcomeUnknown, false
	case "reply":
		p.outcome, p.reply, p.text = outcomeDelivered, true, arg
	case "accept_timeout":
		if arg == "silent" {
			// The send went out, but neither its answer nor any of its
			// webhooks ever arrive: only an operator can tell.
			for i := range p.steps {
				p.steps[i].drop = true
			}
			p.reply = false
		}
		return true
	}
	return false
}
