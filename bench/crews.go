package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/provider/sim"
)

// benchCrews measures the directory of issue 13 on SQLite:
//
//   - contacts_import: one POST /v1/contacts/import of crewsImportN CSV
//     rows (number,name,tags,timezone,site), new contacts, timed from the
//     request to the answer (parsed, checked, upserted, committed);
//   - group_create_<n>: POST /v1/groups {"crews":["All"]} for a crew of
//     crewsGroupN contacts, timed until the 201 (resolved from the
//     directory, suppressions looked up, planned, and the group.created
//     event with its roster and projections committed: accepted, durable).
//     Sending is paced at 1/s so the send pool does not compete.
func benchCrews(ctx context.Context, c config, rep harness.Reporter) error {
	cc, err := harness.Start(ctx, harness.Options{DB: filepath.Join(c.tmp, "crews.db"), DemoFaults: sim.Faults{}, SendRate: 1})
	if err != nil {
		return err
	}
	defer stopCrewcast(cc, rep)
	numbers := harness.Numbers(6_000_000, max(c.crewsImportN, c.crewsGroupN))
	csvOf := func(nums []string, offset int) []byte {
		var b bytes.Buffer
		b.WriteString("number,name,tags,timezone,site\n")
		for i, n := range nums {
			fmt.Fprintf(&b, "%s,Person %d,crew%d;all,America/Chicago,Site %d\n", n, offset+i, (offset+i)%20, (offset+i)%7)
		}
		return b.Bytes()
	}
	rep.Progress("crews: importing %d contacts in one request", c.crewsImportN)
	body := csvOf(numbers[:c.crewsImportN], 0)
	start := time.Now()
	var rep1 struct {
		Created int `json:"created"`
		Errors  []any
	}
	if err := harness.Profiled(c.profile, "contacts_import", func() error {
		return post(ctx, cc, "/v1/contacts/import", "text/csv", body, &rep1)
	}); err != nil {
		return err
	}
	took := time.Since(start)
	if rep1.Created != c.crewsImportN || len(rep1.Errors) != 0 {
		return fmt.Errorf("import created %d (errors %d), want %d", rep1.Created, len(rep1.Errors), c.crewsImportN)
	}
	rep.Progress("crews: %d rows imported in %s", c.crewsImportN, took.Round(time.Millisecond))
	rep.Result("contacts_import", float64(c.crewsImportN)/took.Seconds(), "rows/s")

	// The rest of the crew, unmeasured.
	for off := c.crewsImportN; off < c.crewsGroupN; off += c.crewsImportN {
		end := min(off+c.crewsImportN, c.crewsGroupN)
		if err := post(ctx, cc, "/v1/contacts/import", "text/csv", csvOf(numbers[off:end], off), nil); err != nil {
			return err
		}
	}
	crew, err := json.Marshal(map[string]any{"name": "All", "members": numbers[:c.crewsGroupN]})
	if err != nil {
		return err
	}
	if err := post(ctx, cc, "/v1/crews", "application/json", crew, nil); err != nil {
		return err
	}
	rep.Progress("crews: creating a group for a crew of %d", c.crewsGroupN)
	g, err := json.Marshal(map[string]any{"from": harness.SenderNumber, "crews": []string{"All"},
		"text": "Hi {{first_name}}, crew call 7am at {{fields.site}}", "responses": []map[string]string{
			{"key": "1", "label": "Coming", "ack": "yes"}, {"key": "2", "label": "Cannot", "ack": "no"}}})
	if err != nil {
		return err
	}
	var created struct {
		ID string `json:"id"`
	}
	start = time.Now()
	if err := harness.Profiled(c.profile, "group_create", func() error {
		return post(ctx, cc, "/v1/groups?recipients=0", "application/json", g, &created)
	}); err != nil {
		return err
	}
	took = time.Since(start)
	row, err := cc.Store().GetGroup(ctx, created.ID)
	if err != nil {
		return err
	}
	if total := row.Counts["pending"] + row.Counts["sending"] + row.Counts["sent"] + row.Counts["delivered"]; total != c.crewsGroupN {
		return fmt.Errorf("group has %d recipients, want %d", total, c.crewsGroupN)
	}
	rep.Progress("crews: group of %d accepted in %s", c.crewsGroupN, took.Round(time.Millisecond))
	rep.Result("group_create_"+sizeLabel(c.crewsGroupN), harness.Ms(took), "ms")
	return nil
}

// post sends one admin request and decodes a 2xx JSON answer into out.
func post(ctx context.Context, cc *harness.Crewcast, path, ctype string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cc.URL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+harness.AdminKey)
	req.Header.Set("Content-Type", ctype)
	resp, err := cc.Client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %.300s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}
