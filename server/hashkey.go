package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Hash key sources, as HashKeySource and crewcast doctor name them.
const (
	HashKeyConfigured = "configured"                           // CREWCAST_HASH_KEY
	HashKeyStored     = "generated and stored in the database" // first start without one
	HashKeyMissing    = "missing"                              // neither (no server has started on the database)
	hashKeyBytes      = 32                                     // a generated key: 32 random bytes
)

// HashKeySource tells where the hash key comes from, given the
// configured key and the one the database stores (nil: none), and
// whether they differ: opt-outs of people erased under the stored key are
// not matched by a different configured one.
func HashKeySource(configured, stored []byte) (source string, differs bool) {
	switch {
	case len(configured) > 0:
		return HashKeyConfigured, stored != nil && !bytes.Equal(stored, configured)
	case stored != nil:
		return HashKeyStored, false
	}
	return HashKeyMissing, false
}

// hashKey is the key number hashes are keyed with: CREWCAST_HASH_KEY when
// configured, else the one stored in the database, generated on the first
// start (32 random bytes; insert if absent, then read, so nodes starting
// at once end with one key). A person who said STOP and was then erased
// stays suppressed under it, across restarts and on every node. past is
// the stored key when a configured one differs: opt-outs kept under it
// still block sends (tracker.Config.PastHashKeys).
func (s *Server) hashKey(ctx context.Context) (key []byte, past [][]byte, err error) {
	if configured := s.cfg.Retention.HashKey; len(configured) > 0 {
		stored, err := s.st.ServerKey(ctx, store.HashKeyName)
		if err != nil && !errors.Is(err, actor.ErrNotFound) {
			return nil, nil, fmt.Errorf("hash key: %w", err)
		}
		if _, differs := HashKeySource(configured, stored); differs {
			s.cfg.Logger.Warn("CREWCAST_HASH_KEY differs from the hash key stored in the database; opt-outs kept under the stored key still block sends, but new hashes no longer match the old ones (crewcast doctor)")
			past = [][]byte{stored}
		}
		return configured, past, nil
	}
	key = make([]byte, hashKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, nil, fmt.Errorf("hash key: %w", err)
	}
	stored, err := s.st.EnsureServerKey(ctx, store.HashKeyName, key)
	if err != nil {
		return nil, nil, fmt.Errorf("hash key: %w", err)
	}
	return stored, nil, nil
}
