package sqlq

import (
	"context"
	"strings"
	"sync"

	"github.com/crewcast/crewcast/store"
)

// sqlTakeFree records an owner (the same argument for every row) at epoch 1
// for every shard nobody holds, in one statement.
var sqlTakeFree = `INSERT INTO shard_leases (shard, owner, epoch) VALUES ` +
	strings.TrimSuffix(strings.Repeat("(?, ?, 1), ", store.NumShards), ", ") +
	` ON CONFLICT (shard) DO NOTHING`

// TakeFreeShards records owner at epoch 1 for every shard nobody holds,
// then loads into d's Epochs the epoch of every shard owner holds (so a
// reopened store keeps the epochs it had), in one transaction. An engine
// calls it once, from Open.
func TakeFreeShards(ctx context.Context, d DB, owner string) error {
	var held [store.NumShards]uint64
	err := d.c.WriteTx(ctx, func(tx Querier) error {
		args := make([]any, 0, 2*store.NumShards)
		for shard := range store.NumShards {
			args = append(args, shard, owner)
		}
		if _, err := tx.Exec(ctx, sqlTakeFree, args...); err != nil {
			return err
		}
		leases, err := queryAll(ctx, tx, func(r Rows) ([2]int64, error) {
			var l [2]int64
			err := r.Scan(&l[0], &l[1])
			return l, err
		}, `SELECT shard, epoch FROM shard_leases WHERE owner = ?`, owner)
		if err != nil {
			return err
		}
		for _, l := range leases {
			if l[0] >= 0 && l[0] < store.NumShards {
				held[l[0]] = uint64(l[1])
			}
		}
		return nil
	})
	if err != nil {
		return d.errorf("take shards: %w", err)
	}
	d.c.Epochs.SetAll(held)
	return nil
}

// TakeShard makes owner the holder of shard at the next epoch (1 for a
// shard nobody held) and returns that epoch, which this store instance
// holds from now on; the previous holder's commits are fenced.
func (d DB) TakeShard(ctx context.Context, shard int, owner string) (uint64, error) {
	if shard < 0 || shard >= store.NumShards {
		return 0, d.errorf("take shard: shard %d out of range", shard)
	}
	var epoch int64
	defer d.c.Epochs.lockWrites()()
	err := d.c.WriteTx(ctx, func(tx Querier) error {
		if d.c.Engine == "postgres" {
			// A commit checks its lease FOR KEY SHARE, which an upsert of
			// non-key columns would not wait for: lock the row FOR UPDATE,
			// so that a commit under the old epoch ends first.
			if _, err := tx.Exec(ctx, `SELECT shard FROM shard_leases WHERE shard = ? FOR UPDATE`, shard); err != nil {
				return err
			}
		}
		return tx.QueryRow(ctx, `INSERT INTO shard_leases (shard, owner, epoch) VALUES (?, ?, 1)
			ON CONFLICT (shard) DO UPDATE SET owner = excluded.owner, epoch = shard_leases.epoch + 1
			RETURNING epoch`, shard, owner).Scan(&epoch)
	})
	if err != nil {
		return 0, d.errorf("take shard %d: %w", shard, err)
	}
	d.c.Epochs.Set(shard, uint64(epoch))
	return uint64(epoch), nil
}

// ListLeases returns every shard lease, by shard.
func (d DB) ListLeases(ctx context.Context) ([]store.Lease, error) {
	return d.listLeases(ctx, d.c.Read)
}

// KeeperLeases is ListLeases on the lease connections (Conn.LeaseWrite).
// See store.ExpiringLeases.
func (d DB) KeeperLeases(ctx context.Context) ([]store.Lease, error) {
	return d.listLeases(ctx, d.c.leaseWrite())
}

func (d DB) listLeases(ctx context.Context, q Querier) ([]store.Lease, error) {
	out, err := queryAll(ctx, q, scanLease,
		`SELECT shard, owner, epoch, COALESCE(expires_at, 0) FROM shard_leases ORDER BY shard`)
	if err != nil {
		return nil, d.errorf("list leases: %w", err)
	}
	return out, nil
}

// Epochs are the shard epochs one store instance holds (0: none), which
// its commits check against the lease table. It is safe for concurrent
// use; the zero value holds nothing.
type Epochs struct {
	mu   sync.Mutex
	held [store.NumShards]uint64
	// writes serializes the instance's own lease writes (see lockWrites).
	writes sync.Mutex
}

// lockWrites serializes this instance's writes of the leases it holds
// (renew, release, take) and returns the unlock. Run at once, a release's
// per-shard updates and a renewal's one update of every held row lock the
// same rows in different orders, and PostgreSQL aborts one of them as a
// deadlock after deadlock_timeout, failing a leaving node's release.
// Acquisitions do not take it (see AcquireShards). Each write
// is bounded by its own context, so the wait is too.
func (e *Epochs) lockWrites() func() {
	e.writes.Lock()
	return e.writes.Unlock
}

// Of returns the epoch held for shard.
func (e *Epochs) Of(shard int) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held[shard]
}

// Set records epoch as held for shard.
func (e *Epochs) Set(shard int, epoch uint64) {
	e.mu.Lock()
	e.held[shard] = epoch
	e.mu.Unlock()
}

// clearIf records shard as not held if it is held at epoch.
func (e *Epochs) clearIf(shard int, epoch uint64) {
	e.mu.Lock()
	if e.held[shard] == epoch {
		e.held[shard] = 0
	}
	e.mu.Unlock()
}

// SetAll replaces every held epoch.
func (e *Epochs) SetAll(held [store.NumShards]uint64) {
	e.mu.Lock()
	e.held = held
	e.mu.Unlock()
}
