package sqlq

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crewcast/crewcast/store"
)

// DBNow returns the SQL expression of an engine's database clock in Unix
// nanoseconds, which every lease expiry is judged by (docs/design.md §9: never the
// node's clock). PostgreSQL's clock_timestamp() is the server's wall clock
// when the expression runs (not the transaction's start); SQLite's 'now'
// is the clock of the one machine that has the file.
func DBNow(engine string) string {
	if engine == "postgres" {
		return `(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000)::bigint`
	}
	return `(CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) * 1000000)`
}

// LeaseLive is the condition (on shard_leases, aliased or not by prefix)
// that a commit adds to its epoch check: the lease is held without expiry
// or has not expired on the database clock.
func LeaseLive(engine, prefix string) string {
	return `(` + prefix + `expires_at IS NULL OR ` + prefix + `expires_at > ` + DBNow(engine) + `)`
}

func (d DB) now() string { return DBNow(d.c.Engine) }

// inList is "(?, ?, …)" for n arguments.
func inList(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
}

func checkShards(shards []int) error {
	for _, sh := range shards {
		if sh < 0 || sh >= store.NumShards {
			return fmt.Errorf("shard %d out of range", sh)
		}
	}
	return nil
}

// AcquireShards takes each of shards that nobody holds, whose lease
// expired, or that is held without expiry, for owner at the next epoch
// until ttl from now on the database clock. See store.ExpiringLeases.
//
// Two statements whatever the number of shards (it was two per shard, and
// an acquisition of 30 shards took over a second on a loaded server): one
// inserts the rows nobody has, one takes the expired ones. It does not
// take the instance's lease-write lock (lockWrites): it writes only rows
// this instance does not hold, which a renewal or a release of it never
// touches, and it never waits for a row lock (SKIP LOCKED), so a renewal
// never queues behind it.
func (d DB) AcquireShards(ctx context.Context, owner string, shards []int, ttl time.Duration) ([]store.Lease, error) {
	if err := checkShards(shards); err != nil {
		return nil, d.errorf("acquire shards: %w", err)
	}
	if ttl <= 0 {
		return nil, d.errorf("acquire shards: ttl %s must be positive", ttl)
	}
	if len(shards) == 0 {
		return nil, nil
	}
	shards = slices.Sorted(slices.Values(shards))
	shards = slices.Compact(shards)
	var got []store.Lease
	scan := func(r Rows) (store.Lease, error) {
		var shard, epoch, exp int64
		err := r.Scan(&shard, &epoch, &exp)
		return store.Lease{Shard: int(shard), Owner: owner, Epoch: uint64(epoch), ExpiresAt: time.Unix(0, exp)}, err
	}
	err := d.c.leaseTx(ctx, func(tx Querier) error {
		// Rows in shard order: two acquisitions inserting the same new
		// rows wait for each other in the same order, never in a cycle.
		args := make([]any, 0, 3*len(shards))
		for _, sh := range shards {
			args = append(args, sh, owner, int64(ttl))
		}
		inserted, err := queryAll(ctx, tx, scan, `INSERT INTO shard_leases (shard, owner, epoch, expires_at) VALUES `+
			strings.TrimSuffix(strings.Repeat(`(?, ?, 1, `+d.now()+` + ?), `, len(shards)), ", ")+`
			ON CONFLICT (shard) DO NOTHING RETURNING shard, epoch, expires_at`, args...)
		if err != nil {
			return err
		}
		got = inserted
		isNew := map[int]bool{}
		for _, l := range inserted {
			isNew[l.Shard] = true
		}
		var rest []any
		for _, sh := range shards {
			if !isNew[sh] {
				rest = append(rest, sh)
			}
		}
		if len(rest) == 0 {
			return nil
		}
		q := `UPDATE shard_leases SET owner = ?, epoch = epoch + 1, expires_at = ` + d.now() + ` + ?
			WHERE shard IN ` + inList(len(rest)) + ` AND (expires_at IS NULL OR expires_at <= ` + d.now() + `)`
		args = append([]any{owner, int64(ttl)}, rest...)
		if d.c.Engine == "postgres" {
			// Pass over a row another transaction has locked — a commit of
			// its holder, FOR KEY SHARE until it ends, which this FOR
			// UPDATE conflicts with (a renewal does not) — instead of
			// waiting for it: the other shards are taken now, that one at
			// a later tick. (SQLite has one writer at a time.)
			q += ` AND shard IN (SELECT shard FROM shard_leases WHERE shard IN ` + inList(len(rest)) +
				` ORDER BY shard FOR UPDATE SKIP LOCKED)`
			args = append(args, rest...)
		}
		taken, err := queryAll(ctx, tx, scan, q+` RETURNING shard, epoch, expires_at`, args...)
		if err != nil {
			return err
		}
		got = append(got, taken...)
		return nil
	})
	if err != nil {
		return nil, d.errorf("acquire shards: %w", err)
	}
	sortLeases(got)
	for _, l := range got {
		d.c.Epochs.Set(l.Shard, l.Epoch)
	}
	return got, nil
}

// RenewShards extends every unexpired lease this instance holds for owner
// to ttl from now; a held shard whose lease expired or moved is dropped.
// See store.ExpiringLeases.
func (d DB) RenewShards(ctx context.Context, owner string, ttl time.Duration) ([]store.Lease, error) {
	if ttl <= 0 {
		return nil, d.errorf("renew shards: ttl %s must be positive", ttl)
	}
	defer d.c.Epochs.lockWrites()()
	var held []int
	var epochs []uint64
	var args []any
	args = append(args, int64(ttl), owner)
	var conds []string
	for sh := range store.NumShards {
		if e := d.c.Epochs.Of(sh); e != 0 {
			held, epochs = append(held, sh), append(epochs, e)
			conds = append(conds, `(shard = ? AND epoch = ?)`)
			args = append(args, sh, int64(e))
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	// One statement, so one reading of the database clock for all.
	renewed, err := queryAll(ctx, d.c.leaseWrite(), scanLease, `UPDATE shard_leases SET expires_at = `+d.now()+` + ?
		WHERE owner = ? AND (`+strings.Join(conds, " OR ")+`) AND expires_at > `+d.now()+`
		RETURNING shard, owner, epoch, expires_at`, args...)
	if err != nil {
		return nil, d.errorf("renew shards: %w", err)
	}
	kept := map[int]bool{}
	for _, l := range renewed {
		kept[l.Shard] = true
	}
	for i, sh := range held {
		if !kept[sh] {
			// Unless held again at another epoch meanwhile (an
			// acquisition does not wait for a renewal).
			d.c.Epochs.clearIf(sh, epochs[i])
		}
	}
	sortLeases(renewed)
	return renewed, nil
}

// ReleaseShards stops holding the listed shards, then expires their
// leases now (only those still at the epoch this instance held), so that
// another node can take them without waiting. See store.ExpiringLeases.
func (d DB) ReleaseShards(ctx context.Context, owner string, shards []int) error {
	if err := checkShards(shards); err != nil {
		return d.errorf("release shards: %w", err)
	}
	type rel struct{ shard, epoch int64 }
	var rels []rel
	for _, sh := range shards {
		if e := d.c.Epochs.Of(sh); e != 0 {
			d.c.Epochs.Set(sh, 0) // no commit of ours passes from here on
			rels = append(rels, rel{int64(sh), int64(e)})
		}
	}
	if len(rels) == 0 {
		return nil
	}
	defer d.c.Epochs.lockWrites()()
	err := d.c.leaseTx(ctx, func(tx Querier) error {
		for _, r := range rels {
			if _, err := tx.Exec(ctx, `UPDATE shard_leases SET expires_at = `+d.now()+`
				WHERE shard = ? AND owner = ? AND epoch = ?`, r.shard, owner, r.epoch); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return d.errorf("release shards: %w", err)
	}
	return nil
}

// DropShards stops holding the listed shards locally, writing nothing.
// See store.ExpiringLeases.
func (d DB) DropShards(shards []int) {
	for _, sh := range shards {
		if sh >= 0 && sh < store.NumShards {
			d.c.Epochs.Set(sh, 0)
		}
	}
}

func scanLease(r Rows) (store.Lease, error) {
	var l store.Lease
	var shard, epoch, exp int64
	err := r.Scan(&shard, &l.Owner, &epoch, &exp)
	l.Shard, l.Epoch = int(shard), uint64(epoch)
	if exp != 0 {
		l.ExpiresAt = time.Unix(0, exp)
	}
	return l, err
}

func sortLeases(ls []store.Lease) {
	slices.SortFunc(ls, func(a, b store.Lease) int { return a.Shard - b.Shard })
}

// JournalStamps returns the epoch and node that committed each of key's
// events, in seq order. See store.JournalAudit.
func (d DB) JournalStamps(ctx context.Context, key string) ([]store.JournalStamp, error) {
	out, err := queryAll(ctx, d.c.Read, func(r Rows) (store.JournalStamp, error) {
		var js store.JournalStamp
		var seq, epoch, at int64
		err := r.Scan(&seq, &js.Type, &epoch, &js.Node, &at)
		js.Seq, js.Epoch, js.At = uint64(seq), uint64(epoch), time.Unix(0, at)
		return js, err
	}, `SELECT seq, type, epoch, node, time FROM journal WHERE key = ? ORDER BY seq`, key)
	if err != nil {
		return nil, d.errorf("journal stamps: %w", err)
	}
	return out, nil
}

// Heartbeat records node id alive now (database clock) and returns every
// node by id with its liveness. See store.Membership.
func (d DB) Heartbeat(ctx context.Context, id, advertiseURL string, ttl time.Duration) ([]store.Node, error) {
	if ttl <= 0 {
		return nil, d.errorf("heartbeat: ttl %s must be positive", ttl)
	}
	var out []store.Node
	err := d.c.leaseTx(ctx, func(tx Querier) error {
		if _, err := tx.Exec(ctx, `INSERT INTO nodes (id, advertise_url, heartbeat_at) VALUES (?, ?, `+d.now()+`)
			ON CONFLICT (id) DO UPDATE SET advertise_url = excluded.advertise_url, heartbeat_at = excluded.heartbeat_at`,
			id, advertiseURL); err != nil {
			return err
		}
		var err error
		out, err = queryAll(ctx, tx, func(r Rows) (store.Node, error) {
			var n store.Node
			var alive int64
			err := r.Scan(&n.ID, &n.AdvertiseURL, &alive)
			n.Alive = alive != 0
			return n, err
		}, `SELECT id, advertise_url, CASE WHEN heartbeat_at > `+d.now()+` - ? THEN 1 ELSE 0 END FROM nodes ORDER BY id`, int64(ttl))
		return err
	})
	if err != nil {
		return nil, d.errorf("heartbeat: %w", err)
	}
	return out, nil
}

// Leave removes node id from the nodes table. See store.Membership.
func (d DB) Leave(ctx context.Context, id string) error {
	if _, err := d.c.leaseWrite().Exec(ctx, `DELETE FROM nodes WHERE id = ?`, id); err != nil {
		return d.errorf("leave: %w", err)
	}
	return nil
}
