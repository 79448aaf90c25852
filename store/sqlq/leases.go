package sqlq

import (
	"context"
	"fmt"
	"sync"

	"github.com/crewcast/crewcast/store"
)

// HeldEpochs returns the epoch of every shard owner holds (0 for the
// shards it does not).
func HeldEpochs(ctx context.Context, q Querier, owner string) ([store.NumShards]uint64, error) {
	var held [store.NumShards]uint64
	leases, err := queryAll(ctx, q, func(r Rows) ([2]int64, error) {
		var l [2]int64
		err := r.Scan(&l[0], &l[1])
		return l, err
	}, `SELECT shard, epoch FROM shard_leases WHERE owner = ?`, owner)
	if err != nil {
		return held, fmt.Errorf("load leases: %w", err)
	}
	for _, l := range leases {
		if l[0] >= 0 && l[0] < store.NumShards {
			held[l[0]] = uint64(l[1])
		}
	}
	return held, nil
}

// TakeShard makes owner the holder of shard at the next epoch (1 for a
// shard nobody held) and returns that epoch.
func TakeShard(ctx context.Context, q Querier, shard int, owner string) (uint64, error) {
	if shard < 0 || shard >= store.NumShards {
		return 0, fmt.Errorf("take shard: shard %d out of range", shard)
	}
	var epoch int64
	err := q.QueryRow(ctx, `INSERT INTO shard_leases (shard, owner, epoch) VALUES (?, ?, 1)
		ON CONFLICT (shard) DO UPDATE SET owner = excluded.owner, epoch = shard_leases.epoch + 1
		RETURNING epoch`, shard, owner).Scan(&epoch)
	if err != nil {
		return 0, fmt.Errorf("take shard %d: %w", shard, err)
	}
	return uint64(epoch), nil
}

// Epochs are the shard epochs one store instance holds (0: none), which
// its commits check against the lease table. It is safe for concurrent
// use; the zero value holds nothing.
type Epochs struct {
	mu   sync.Mutex
	held [store.NumShards]uint64
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

// SetAll replaces every held epoch.
func (e *Epochs) SetAll(held [store.NumShards]uint64) {
	e.mu.Lock()
	e.held = held
	e.mu.Unlock()
}
