package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
)

// AdminKey is the bootstrap admin key of every benchmark server.
const AdminKey = "bench-admin-22e99a906494c3eda53551d6878f5a63a313774992678005"

// Options configure Start.
type Options struct {
	// DB is the SQLite path or postgres:// URL; Schema the PostgreSQL
	// schema.
	DB     string
	Schema string
	// Signer, when set, runs crewcast with provider "telnyx" verifying
	// webhooks with its key and sending to a simulator that posts no
	// webhooks: the benchmark is the only webhook source. When nil,
	// crewcast runs the demo provider with DemoFaults.
	Signer *Signer
	// DemoFaults are the demo simulator's knobs (Signer nil).
	DemoFaults sim.Faults
	// SendRate is messages per second per sender number; 0 = no pacing.
	SendRate float64
	// IdleTimeout passivates idle groups (0: crewcast's default).
	IdleTimeout time.Duration
	// Cluster makes it one of several nodes on PostgreSQL (zero: one node).
	Cluster server.ClusterConfig
	// SweepInterval is the inbox sweep's period (0: crewcast's default).
	SweepInterval time.Duration
}

// Crewcast is a crewcast running in this process.
type Crewcast struct {
	Server *server.Server
	// Sim is the simulator crewcast sends to.
	Sim *sim.Sim
	// URL is the base URL crewcast answers on.
	URL    string
	Client *http.Client
	ownSim bool
}

// Start boots crewcast on 127.0.0.1:0 with o.
func Start(ctx context.Context, o Options) (*Crewcast, error) {
	seed := int64(1)
	cfg := server.Config{
		Addr: "127.0.0.1:0", DB: o.DB, DBSchema: o.Schema, AdminKey: AdminKey,
		SendRate: o.SendRate, IdleTimeout: o.IdleTimeout, DemoSeed: &seed,
		// The retention job is not what is measured.
		RetentionInterval: -1,
		Cluster:           o.Cluster,
		SweepInterval:     o.SweepInterval,
	}
	c := &Crewcast{Client: NewClient(64)}
	if o.Signer != nil {
		sm, err := sim.New(sim.Config{Seed: &seed, TelnyxSigningKey: o.Signer.PrivateKey()})
		if err != nil {
			return nil, err
		}
		simURL, err := sm.Start(ctx, "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		c.Sim, c.ownSim = sm, true
		cfg.Provider = server.ProviderTelnyx
		cfg.TelnyxAPIKey = sm.Keys().TelnyxAPIKey
		cfg.TelnyxPublicKey = o.Signer.PublicKeyBase64()
		cfg.TelnyxAPIBase = simURL
		cfg.TelnyxIdempotencyKeys = true
	} else {
		faults := o.DemoFaults
		cfg.Provider = server.ProviderDemo
		cfg.DemoFaults = &faults
	}
	srv, err := server.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		if c.ownSim {
			_ = c.Sim.Stop(ctx)
		}
		return nil, err
	}
	c.Server, c.URL = srv, srv.URL()
	if !c.ownSim {
		c.Sim = srv.Sim()
	}
	return c, nil
}

// Stop stops crewcast and its simulator.
func (c *Crewcast) Stop(ctx context.Context) error {
	err := c.Server.Stop(ctx)
	if c.ownSim {
		err = errors.Join(err, c.Sim.Stop(ctx))
	}
	c.Client.CloseIdleConnections()
	return err
}

// Store is crewcast's open store.
func (c *Crewcast) Store() store.Store { return c.Server.Store() }

// WebhookURL is where Telnyx webhooks go.
func (c *Crewcast) WebhookURL() string { return c.URL + "/webhooks/telnyx" }

// CreateGroup posts a group (individual mode) and returns its id.
func (c *Crewcast) CreateGroup(ctx context.Context, from string, to []string, text string) (string, error) {
	body, err := json.Marshal(map[string]any{"from": from, "to": to, "text": text, "mode": "individual"})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/v1/groups", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+AdminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("create group: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("create group: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("create group: %s: %.300s", resp.Status, b)
	}
	var g struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &g); err != nil || g.ID == "" {
		return "", fmt.Errorf("create group: no id in %.300s", b)
	}
	return g.ID, nil
}

// Settled reports whether no recipient of a group is pending or sending.
func Settled(row store.GroupRow) bool {
	return row.Counts[string(crewcast.StatusPending)] == 0 && row.Counts[string(crewcast.StatusSending)] == 0
}

// WaitGroup waits until done holds for the group's committed row. It
// checks after each change the tracker publishes for the group, and every
// 50 ms in case the subscription lagged.
func (c *Crewcast) WaitGroup(ctx context.Context, id string, done func(store.GroupRow) bool) (store.GroupRow, error) {
	sub := c.Server.Tracker().Hub().Subscribe(id)
	defer sub.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		row, err := c.Store().GetGroup(ctx, id)
		if err != nil {
			return row, fmt.Errorf("read group %s: %w", id, err)
		}
		if done(row) {
			return row, nil
		}
		select {
		case <-sub.C:
		case <-tick.C:
		case <-ctx.Done():
			return row, fmt.Errorf("group %s: waiting: %w (counts %v)", id, ctx.Err(), row.Counts)
		}
	}
}

// Target is a recipient a status webhook can be about.
type Target struct {
	GroupID   string
	Number    string
	MessageID string
}

// Targets lists a group's recipients with their provider message ids.
func (c *Crewcast) Targets(ctx context.Context, id string) ([]Target, error) {
	rows, err := c.Deliveries(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]Target, 0, len(rows))
	for _, r := range rows {
		if r.ProviderMessageID == "" {
			return nil, fmt.Errorf("group %s: recipient %d has no message id (status %s)", id, len(out), r.Status)
		}
		out = append(out, Target{GroupID: id, Number: r.Number, MessageID: r.ProviderMessageID})
	}
	return out, nil
}

// Deliveries lists a group's committed delivery rows, every page.
func (c *Crewcast) Deliveries(ctx context.Context, id string) ([]store.DeliveryRow, error) {
	var out []store.DeliveryRow
	q := store.DeliveryQuery{GroupID: id, Limit: 10000}
	for {
		rows, next, err := c.Store().ListDeliveries(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list deliveries: %w", err)
		}
		out = append(out, rows...)
		if next == "" {
			return out, nil
		}
		q.Cursor = next
	}
}

// Numbers returns n distinct fictional numbers +1555… starting at base.
func Numbers(base, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+1555%07d", base+i)
	}
	return out
}

// SenderNumber is the "from" number of every benchmark group.
const SenderNumber = "+15550100000"

// GroupText is the text of every benchmark group.
const GroupText = "Crew call 7am at the north gate"

// SentGroups creates groups of size recipients through the API, waits
// until every recipient is sent, and returns them with their message ids.
// Numbers start at base so that scenarios do not share recipients.
func (c *Crewcast) SentGroups(ctx context.Context, groups, size, base int) ([]Target, error) {
	var targets []Target
	for g := range groups {
		id, err := c.CreateGroup(ctx, SenderNumber, Numbers(base+g*size, size), GroupText)
		if err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err = c.WaitGroup(wctx, id, Settled)
		cancel()
		if err != nil {
			return nil, err
		}
		ts, err := c.Targets(ctx, id)
		if err != nil {
			return nil, err
		}
		targets = append(targets, ts...)
	}
	return targets, nil
}

// SignStatuses prepares count signed status webhooks with distinct event
// ids, cycling through targets, signing on every core.
func SignStatuses(signer *Signer, targets []Target, count int, prefix, status string) ([]Webhook, error) {
	hooks := make([]Webhook, count)
	now := time.Now()
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < count; i += workers {
				t := targets[i%len(targets)]
				body, err := StatusBody(Status{
					EventID: fmt.Sprintf("%s-%08d", prefix, i), MessageID: t.MessageID,
					From: SenderNumber, To: t.Number, Text: GroupText, Status: status, At: now,
				})
				if err != nil {
					errs[w] = err
					return
				}
				hooks[i] = signer.Sign(body, now)
			}
		}()
	}
	wg.Wait()
	return hooks, errors.Join(errs...)
}
