package tracker

import (
	"context"
	"strconv"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// Audit actions of group changes (docs/design.md §14). Their entries are
// committed with the change itself (store.Effects.Audit), so the trail
// has a line for every change and no line for a change that failed.
const (
	AuditGroupSent         = "group.sent"
	AuditGroupCanceled     = "group.canceled"
	AuditGroupResumed      = "group.resumed"
	AuditGroupNudged       = "group.nudged"
	AuditRecipientResolved = "recipient.resolved"
	AuditRecipientRetried  = "recipient.retried"
)

// recipientTarget names recipient i of the group for the audit log: the
// group, the recipient's index and the number's last digits (never the
// whole number: see store.AuditNumber).
func (a *groupActor) recipientTarget(i int) string {
	return a.key + " #" + strconv.Itoa(i) + " " + store.AuditNumber(a.g.Recipients[i].Number)
}

// audit adds the audit entry of an operator event to this turn's effects.
// who is the actor the request context named (the HTTP API puts it
// there); a caller that named nobody is recorded as the system, with the
// event's By as its id.
func (a *groupActor) audit(who *store.AuditActor, ev group.Event) {
	var action, target, by string
	switch e := ev.(type) {
	case group.Created:
		action, target, by = AuditGroupSent, a.key, e.By
	case group.Canceled:
		action, target, by = AuditGroupCanceled, a.key, e.By
	case group.Resumed:
		action, target, by = AuditGroupResumed, a.key, e.By
	case group.Nudged:
		action, target, by = AuditGroupNudged, a.key, e.By
	case group.Resolved:
		action, target, by = AuditRecipientResolved, a.recipientTarget(e.Index)+" "+e.Outcome, e.By
	case group.RetryRequested:
		action, target, by = AuditRecipientRetried, a.recipientTarget(e.Index), e.By
	default:
		var ok bool
		if action, target, by, ok = a.calloutAudit(ev); !ok { // callout.go
			return
		}
	}
	actor := store.AuditActor{Type: store.ActorSystem, ID: by}
	if who != nil {
		actor = *who
	}
	a.eff.Audit = append(a.eff.Audit, store.AuditEntry{At: a.env.cfg.Clock.Now(), Actor: actor, Action: action, Target: target})
}

// auditActorFrom returns the actor the request context carries, or nil.
func auditActorFrom(ctx context.Context) *store.AuditActor {
	if who, ok := store.AuditActorFrom(ctx); ok {
		return &who
	}
	return nil
}
