package tracker

import (
	"context"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
)

// sendJob is one claimed provider send: committed as claimed before it was
// queued, so it must end in a recorded outcome (sent, failed, retry, or —
// if the process dies first — unconfirmed on recovery).
type sendJob struct {
	groupID string
	send    group.Send
	req     crewcast.SendRequest
	mms     bool
	// via, when set, makes the call instead of the provider (a ladder's
	// email step, ladder.go); the guard applies all the same.
	via func(context.Context) (crewcast.SendResult, error)
	// answer, when set, hears the provider's answer instead of the pool's
	// onSend (the group's actor): a send no group claimed, such as the
	// confirmation of an unmatched STOP (unmatched_confirm.go).
	answer func(sendResult)
}

// answered hands r to whoever claimed j.
func (p *pool) answered(j sendJob, r sendResult) {
	if j.answer != nil {
		j.answer(r)
		return
	}
	p.onSend(j.groupID, r)
}

// sendResult is a provider's answer to a sendJob.
type sendResult struct {
	send group.Send
	res  crewcast.SendResult
	err  error
	at   time.Time
	// provider names the provider that made the call ("" when none did:
	// a guard's refusal, a shutdown, a mail step).
	provider string
}

// lookupJob asks the provider for the status of recipient index of a group.
type lookupJob struct {
	groupID   string
	index     int
	messageID string
	provider  string // the provider that accepted the send ("" = the default)
}

// lookupResult is a provider's answer to a lookupJob.
type lookupResult struct {
	index int
	st    crewcast.MessageStatus
	err   error
	at    time.Time
}

// errNotSentShutdown is the outcome of a claimed send that never left the
// process because the tracker shut down first: certainly not sent, so it is
// requeued like a rate-limited send and spends no attempt.
var errNotSentShutdown = &crewcast.SendError{Provider: "crewcast", Class: crewcast.ClassNotSent,
	Detail: "not sent: crewcast shut down before the provider call", RetryAfter: time.Millisecond}

// pool runs provider calls outside the group actors' message loops, at most
// `workers` at a time. Queued jobs are never dropped: a claimed send either
// runs or, at shutdown, is answered with errNotSentShutdown.
type pool struct {
	provs    *providerSet
	workers  int
	timeout  time.Duration
	now      func() time.Time
	onSend   func(groupID string, r sendResult)
	onLookup func(groupID string, r lookupResult)
	// guard, when set, runs right before each provider call: an error
	// answers the send without calling (a suppressed number); release is
	// called once the call returned.
	guard func(ctx context.Context, j sendJob) (release func(), err error)
	// ctx is the parent of provider calls; the tracker cancels it when its
	// Stop deadline passes.
	ctx context.Context
	// onDrain, if set, hears the backlog left each time a worker takes a
	// send (groups waiting for room are woken by it).
	onDrain func(backlog int)
	// onCall, if set, hears every provider call's answer before it is
	// handed over (the circuits, circuit.go).
	onCall func(provider string, res crewcast.SendResult, err error)

	mu      sync.Mutex
	cond    *sync.Cond
	sends   []sendJob
	lookups []lookupJob
	running int // jobs a worker took whose answer is not handed over yet
	closed  bool
	wg      sync.WaitGroup
}

func newPool(p *providerSet, workers int, timeout time.Duration, now func() time.Time,
	onSend func(string, sendResult), onLookup func(string, lookupResult)) *pool {
	pl := &pool{provs: p, workers: workers, timeout: timeout, now: now, onSend: onSend, onLookup: onLookup, ctx: context.Background()}
	pl.cond = sync.NewCond(&pl.mu)
	return pl
}

func (p *pool) start() {
	for range p.workers {
		p.wg.Add(1)
		go p.work()
	}
}

// backlog is how many sends wait for a worker.
func (p *pool) backlog() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sends)
}

// idle reports that no job is queued or running: every answer was handed
// to onSend or onLookup. For tests, which wait for it (lookups are not in
// the work queue, so waitIdle does not see them).
func (p *pool) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sends) == 0 && len(p.lookups) == 0 && p.running == 0
}

// finished says a worker handed over its job's answer.
func (p *pool) finished() {
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
}

// submit queues sends; after close it answers them as not sent.
func (p *pool) submit(jobs []sendJob) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		for _, j := range jobs {
			p.answered(j, sendResult{send: j.send, err: errNotSentShutdown, at: p.now()})
		}
		return
	}
	p.sends = append(p.sends, jobs...)
	p.mu.Unlock()
	p.cond.Broadcast()
}

// lookup queues a status lookup; after close it is dropped (the durable
// reminder fires again on the next start).
func (p *pool) lookup(j lookupJob) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.lookups = append(p.lookups, j)
	p.cond.Signal()
}

func (p *pool) work() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for !p.closed && len(p.sends) == 0 && len(p.lookups) == 0 {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		// Sends first: a claimed send waiting is the riskier state.
		if len(p.sends) > 0 {
			j := p.sends[0]
			p.sends[0] = sendJob{}
			p.sends = p.sends[1:]
			left := len(p.sends)
			p.running++
			p.mu.Unlock()
			if p.onDrain != nil {
				p.onDrain(left)
			}
			p.answered(j, p.call(j))
			p.finished()
			continue
		}
		j := p.lookups[0]
		p.lookups = p.lookups[1:]
		p.running++
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(p.ctx, p.timeout)
		st, err := p.provs.named(j.provider).Lookup(ctx, j.messageID)
		cancel()
		p.onLookup(j.groupID, lookupResult{index: j.index, st: st, err: err, at: p.now()})
		p.finished()
	}
}

func (p *pool) call(j sendJob) sendResult {
	ctx, cancel := context.WithTimeout(p.ctx, p.timeout)
	defer cancel()
	var res crewcast.SendResult
	var err error
	if p.guard != nil {
		release, gerr := p.guard(ctx, j)
		if gerr != nil {
			return sendResult{send: j.send, err: gerr, at: p.now()}
		}
		defer release()
	}
	if j.via != nil {
		res, err = j.via(ctx)
		return sendResult{send: j.send, res: res, err: err, at: p.now()}
	}
	// The sender's provider makes the call (providers.go).
	prov := p.provs.forFrom(j.req.From)
	if j.mms {
		res, err = prov.SendGroupMMS(ctx, j.req)
	} else {
		res, err = prov.Send(ctx, j.req)
	}
	if p.onCall != nil {
		p.onCall(prov.Name(), res, err)
	}
	return sendResult{send: j.send, res: res, err: err, at: p.now(), provider: prov.Name()}
}

// close stops taking work, answers queued sends as not sent, and waits for
// running calls to finish.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	queued := p.sends
	p.sends, p.lookups = nil, nil
	p.mu.Unlock()
	p.cond.Broadcast()
	for _, j := range queued {
		p.answered(j, sendResult{send: j.send, err: errNotSentShutdown, at: p.now()})
	}
	p.wg.Wait()
}
