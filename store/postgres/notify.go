package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/crewcast/crewcast/store"
)

var _ store.Notifier = (*Store)(nil)

// Notify sends payload on channel to every session listening on it
// (pg_notify: delivered when this statement's transaction commits, at most
// once per listener, lost for a listener that is not connected — a wake-up,
// never the only way work is found). A NOTIFY's transaction gets a
// transaction id and so a commit record; since a wake-up need not survive a
// crash, it does not wait for that record's flush (synchronous_commit off
// for this one transaction), which spares the WAL an fsync per wake-up.
// Several payloads go in one statement: one transaction, and one wake-up
// of every listening session for all of them (a payload is limited to
// 8,000 bytes, a node's round of forwards is not).
func (s *Store) Notify(ctx context.Context, channel string, payloads ...string) error {
	if len(payloads) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true),
		(SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) AS p)`,
		s.channel(channel), payloads); err != nil {
		return fmt.Errorf("postgres: notify: %w", err)
	}
	return nil
}

// Listen holds one pooled connection LISTENing on channels and calls fn
// with each payload until ctx ends (its error is then nil) or the
// connection fails (returned; the caller listens again). One session for
// all of a node's channels: PostgreSQL signals every listening session of
// the database at each NOTIFY commit, and each reads the queue entry even
// when it is on another channel (about 40 µs of server CPU per session
// per NOTIFY here, docs/performance.md, issue 15).
func (s *Store) Listen(ctx context.Context, channels []string, fn func(channel, payload string)) error {
	if len(channels) == 0 {
		return fmt.Errorf("postgres: listen: no channel")
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("postgres: listen: %w", err)
	}
	// A connection that was LISTENing must not go back to the pool: take
	// it out of the pool for good, and close it when done.
	c := conn.Hijack()
	defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
	byScoped := make(map[string]string, len(channels))
	var listen strings.Builder
	for _, ch := range channels {
		scoped := s.channel(ch)
		byScoped[scoped] = ch
		listen.WriteString("LISTEN " + quoteIdent(scoped) + ";")
	}
	if _, err := c.Exec(ctx, listen.String()); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("postgres: listen: %w", err)
	}
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("postgres: listen: %w", err)
		}
		if ch, ok := byScoped[n.Channel]; ok {
			fn(ch, n.Payload)
		}
	}
}

// maxChannel is the longest channel name PostgreSQL keeps (NAMEDATALEN-1).
const maxChannel = 63

// channel scopes name to this store's schema. Channels belong to the
// database, not the schema: without this, stores in different schemas of
// one database (the tests, a benchmark's two sides) heard each other's
// wake-ups, and a node holding every shard of its own schema applied
// another schema's forwards to groups it does not have. The default schema
// (every deployment's) keeps the bare name, so releases mix in a rolling
// upgrade; a name too long for PostgreSQL gets a hash of the schema.
func (s *Store) channel(name string) string {
	if s.cfg.Schema == "" {
		return name
	}
	if c := name + "." + s.cfg.Schema; len(c) <= maxChannel {
		return c
	}
	h := sha256.Sum256([]byte(s.cfg.Schema))
	return name + "." + hex.EncodeToString(h[:8])
}

func quoteIdent(s string) string {
	out := []byte{'"'}
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			out = append(out, '"')
		}
		out = append(out, s[i])
	}
	return string(append(out, '"'))
}
