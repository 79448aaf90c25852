package sqlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// ---- contacts ----

const contactCols = `id, number, name, tags, timezone, fields, created_at, updated_at, email`

// isUnique reports whether err is a uniqueness violation, in either
// engine's words (SQLite's message, PostgreSQL's SQLSTATE 23505).
func isUnique(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "UNIQUE constraint failed") || strings.Contains(s, "SQLSTATE 23505")
}

// conflict maps a uniqueness violation to store.ErrConflict.
func conflict(err error) error {
	if isUnique(err) {
		return fmt.Errorf("%w: %v", store.ErrConflict, err)
	}
	return err
}

func scanContact(r Row) (store.Contact, error) {
	var c store.Contact
	var tags, fields string
	var created, updated int64
	if err := r.Scan(&c.ID, &c.Number, &c.Name, &tags, &c.Timezone, &fields, &created, &updated, &c.Email); err != nil {
		return store.Contact{}, err
	}
	if err := json.Unmarshal([]byte(tags), &c.Tags); err != nil {
		return store.Contact{}, fmt.Errorf("contact %q tags: %w", c.ID, err)
	}
	var err error
	if c.Fields, err = decodeFields(fields); err != nil {
		return store.Contact{}, fmt.Errorf("contact %q fields: %w", c.ID, err)
	}
	c.CreatedAt, c.UpdatedAt = store.FromNanos(created), store.FromNanos(updated)
	return c, nil
}

func scanContactRows(r Rows) (store.Contact, error) { return scanContact(r) }

// NormalTags returns tags trimmed, without empties and duplicates, sorted.
func NormalTags(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// contactArgs returns the column values of contactCols for c.
func (d DB) contactArgs(c store.Contact) ([]any, error) {
	tags, err := json.Marshal(NormalTags(c.Tags))
	if err != nil {
		return nil, err
	}
	f := c.Fields
	if f == nil {
		f = map[string]string{}
	}
	fields, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	now := d.c.Now()
	return []any{c.ID, c.Number, c.Name, string(tags), c.Timezone, string(fields),
		store.Nanos(OrNow(c.CreatedAt, now)), store.Nanos(OrNow(c.UpdatedAt, now)), c.Email}, nil
}

// writeTags replaces the tag index rows of one contact.
func writeTags(ctx context.Context, tx Querier, id string, tags []string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM contact_tags WHERE contact_id = ?`, id); err != nil {
		return err
	}
	for _, t := range NormalTags(tags) {
		if _, err := tx.Exec(ctx, `INSERT INTO contact_tags (tag, contact_id) VALUES (?, ?)`, t, id); err != nil {
			return err
		}
	}
	return nil
}

// CreateContact stores a new contact with its audit entries;
// store.ErrConflict when its number or id is taken.
func (d DB) CreateContact(ctx context.Context, c store.Contact, audit ...store.AuditEntry) error {
	args, err := d.contactArgs(c)
	if err != nil {
		return d.errorf("create contact: %w", err)
	}
	return d.writeRow(ctx, rowWrite{what: "create contact",
		stmt: `INSERT INTO contacts (` + contactCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, args: args,
		then: func(tx Querier) error { return writeTags(ctx, tx, c.ID, c.Tags) }}, audit)
}

// GetContact returns the contact with id or actor.ErrNotFound.
func (d DB) GetContact(ctx context.Context, id string) (store.Contact, error) {
	c, err := scanContact(d.c.Read.QueryRow(ctx, `SELECT `+contactCols+` FROM contacts WHERE id = ?`, id))
	if err != nil {
		return store.Contact{}, d.errorf("get contact: %w", err)
	}
	return c, nil
}

// UpdateContact replaces the contact c.ID (CreatedAt is kept) and
// appends its audit entries.
func (d DB) UpdateContact(ctx context.Context, c store.Contact, audit ...store.AuditEntry) error {
	args, err := d.contactArgs(c)
	if err != nil {
		return d.errorf("update contact: %w", err)
	}
	return d.writeRow(ctx, rowWrite{what: "update contact", kind: "contact", id: c.ID,
		stmt: `UPDATE contacts SET number = ?, name = ?, tags = ?, timezone = ?, fields = ?, updated_at = ?, email = ? WHERE id = ?`,
		args: []any{args[1], args[2], args[3], args[4], args[5], args[7], args[8], c.ID},
		then: func(tx Querier) error { return writeTags(ctx, tx, c.ID, c.Tags) }}, audit)
}

// DeleteContact removes the contact, its tags and crew memberships, and
// appends its audit entries.
func (d DB) DeleteContact(ctx context.Context, id string, audit ...store.AuditEntry) error {
	return d.deleteRow(ctx, "contact", id, audit, `DELETE FROM contacts WHERE id = ?`,
		`DELETE FROM contact_tags WHERE contact_id = ?`, `DELETE FROM crew_members WHERE contact_id = ?`)
}

// likePattern escapes s for LIKE ... ESCAPE '\' and wraps it in %.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// ListContacts returns contacts ordered by (name, id), one page at a time.
func (d DB) ListContacts(ctx context.Context, q store.ContactQuery) ([]store.Contact, string, error) {
	limit := store.ClampLimit(q.Limit, 100, 10000)
	var conds []string
	var args []any
	if q.Q != "" {
		p := likePattern(strings.ToLower(q.Q))
		conds = append(conds, `(LOWER(name) LIKE ? ESCAPE '\' OR number LIKE ? ESCAPE '\' OR LOWER(email) LIKE ? ESCAPE '\')`)
		args = append(args, p, p, p)
	}
	if q.Tag != "" {
		conds = append(conds, `id IN (SELECT contact_id FROM contact_tags WHERE tag = ?)`)
		args = append(args, strings.TrimSpace(q.Tag))
	}
	if q.Crew != "" {
		conds = append(conds, `id IN (SELECT contact_id FROM crew_members WHERE crew_id = ?)`)
		args = append(args, q.Crew)
	}
	if q.Cursor != "" {
		p, err := store.DecodeCursor(q.Cursor, 2)
		if err != nil {
			return nil, "", err
		}
		conds = append(conds, `(name > ? OR (name = ? AND id > ?))`)
		args = append(args, p[0], p[0], p[1])
	}
	args = append(args, limit+1)
	out, err := queryAll(ctx, d.c.Read, scanContactRows,
		`SELECT `+contactCols+` FROM contacts`+where(conds)+` ORDER BY name, id LIMIT ?`, args...)
	if err != nil {
		return nil, "", d.errorf("list contacts: %w", err)
	}
	out, next := page(out, limit, func(c store.Contact) string { return store.EncodeCursor(c.Name, c.ID) })
	return out, next, nil
}

// contactsIn reads the contacts whose col is among vals, in chunks.
func contactsIn(ctx context.Context, q Querier, col string, vals []string) ([]store.Contact, error) {
	var out []store.Contact
	const chunk = 500
	for len(vals) > 0 {
		n := min(chunk, len(vals))
		part := vals[:n]
		vals = vals[n:]
		args := make([]any, len(part))
		for i, v := range part {
			args[i] = v
		}
		cs, err := queryAll(ctx, q, scanContactRows, `SELECT `+contactCols+` FROM contacts WHERE `+col+` IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(part)), ",")+`)`, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// ContactsByNumbers returns the contacts among numbers, keyed by number.
func (d DB) ContactsByNumbers(ctx context.Context, numbers []string) (map[string]store.Contact, error) {
	cs, err := contactsIn(ctx, d.c.Read, "number", numbers)
	if err != nil {
		return nil, d.errorf("contacts by numbers: %w", err)
	}
	out := make(map[string]store.Contact, len(cs))
	for _, c := range cs {
		out[c.Number] = c
	}
	return out, nil
}

// ContactsByIDs returns the contacts among ids, keyed by id.
func (d DB) ContactsByIDs(ctx context.Context, ids []string) (map[string]store.Contact, error) {
	cs, err := contactsIn(ctx, d.c.Read, "id", ids)
	if err != nil {
		return nil, d.errorf("contacts by ids: %w", err)
	}
	out := make(map[string]store.Contact, len(cs))
	for _, c := range cs {
		out[c.ID] = c
	}
	return out, nil
}

// ContactsByTag returns every contact carrying tag, ordered by id.
func (d DB) ContactsByTag(ctx context.Context, tag string) ([]store.Contact, error) {
	out, err := queryAll(ctx, d.c.Read, scanContactRows, `SELECT `+contactCols+` FROM contacts
		WHERE id IN (SELECT contact_id FROM contact_tags WHERE tag = ?) ORDER BY id`, strings.TrimSpace(tag))
	if err != nil {
		return nil, d.errorf("contacts by tag: %w", err)
	}
	return out, nil
}

// sameContact reports whether an import row changes nothing of a stored
// contact.
func sameContact(a, b store.Contact) bool {
	af, bf := a.Fields, b.Fields
	if af == nil {
		af = map[string]string{}
	}
	if bf == nil {
		bf = map[string]string{}
	}
	return a.Name == b.Name && a.Email == b.Email && a.Timezone == b.Timezone && slices.Equal(NormalTags(a.Tags), NormalTags(b.Tags)) &&
		maps.Equal(af, bf)
}

// importChunk is how many contacts one multi-row statement writes: far
// below SQLite's bound-parameter limit (9 columns each).
const importChunk = 200

// ImportContacts upserts contacts by number and appends the import's
// audit entries in one transaction (see store.Directory). A number given
// twice in cs: the last row wins.
func (d DB) ImportContacts(ctx context.Context, cs []store.Contact, dryRun bool, audit ...store.AuditEntry) (store.ImportCounts, error) {
	var counts store.ImportCounts
	// The last row of a number wins; keep the first position for order.
	last := make(map[string]int, len(cs))
	var order []string
	for i, c := range cs {
		if _, ok := last[c.Number]; !ok {
			order = append(order, c.Number)
		}
		last[c.Number] = i
	}
	run := d.c.WriteTx
	if dryRun {
		run = d.c.ReadTx
	}
	err := run(ctx, func(tx Querier) error {
		counts = store.ImportCounts{}
		existing, err := contactsIn(ctx, tx, "number", order)
		if err != nil {
			return err
		}
		byNumber := make(map[string]store.Contact, len(existing))
		for _, c := range existing {
			byNumber[c.Number] = c
		}
		var write []store.Contact
		for _, n := range order {
			c := cs[last[n]]
			old, ok := byNumber[n]
			switch {
			case !ok:
				counts.Created++
			case sameContact(old, c):
				counts.Unchanged++
				continue
			default:
				counts.Updated++
				c.ID, c.CreatedAt = old.ID, old.CreatedAt
			}
			write = append(write, c)
		}
		if dryRun {
			return nil
		}
		if err := d.upsertContacts(ctx, tx, write); err != nil {
			return err
		}
		return appendAudit(ctx, tx, d.c.Now(), audit)
	})
	if err != nil {
		return store.ImportCounts{}, d.errorf("import contacts: %w", err)
	}
	return counts, nil
}

// upsertContacts writes contacts (new ones and replacements of existing
// ones, by number) and their tag rows, many rows per statement.
func (d DB) upsertContacts(ctx context.Context, tx Querier, cs []store.Contact) error {
	for len(cs) > 0 {
		n := min(importChunk, len(cs))
		part := cs[:n]
		cs = cs[n:]
		args := make([]any, 0, 9*n)
		ids := make([]any, 0, n)
		var tagArgs []any
		for _, c := range part {
			a, err := d.contactArgs(c)
			if err != nil {
				return err
			}
			args = append(args, a...)
			ids = append(ids, c.ID)
			for _, t := range NormalTags(c.Tags) {
				tagArgs = append(tagArgs, t, c.ID)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO contacts (`+contactCols+`) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?),", n), ",")+
			` ON CONFLICT (number) DO UPDATE SET name = excluded.name, tags = excluded.tags,
			timezone = excluded.timezone, fields = excluded.fields, updated_at = excluded.updated_at,
			email = excluded.email`, args...); err != nil {
			return conflict(err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM contact_tags WHERE contact_id IN (`+
			strings.TrimSuffix(strings.Repeat("?,", n), ",")+`)`, ids...); err != nil {
			return err
		}
		for len(tagArgs) > 0 {
			m := min(2*importChunk, len(tagArgs))
			if _, err := tx.Exec(ctx, `INSERT INTO contact_tags (tag, contact_id) VALUES `+
				strings.TrimSuffix(strings.Repeat("(?, ?),", m/2), ","), tagArgs[:m]...); err != nil {
				return err
			}
			tagArgs = tagArgs[m:]
		}
	}
	return nil
}

// ---- crews ----

const crewCols = `id, name, description, created_at, updated_at`

func scanCrew(r Row) (store.Crew, error) {
	var c store.Crew
	var created, updated int64
	if err := r.Scan(&c.ID, &c.Name, &c.Description, &created, &updated); err != nil {
		return store.Crew{}, err
	}
	c.CreatedAt, c.UpdatedAt = store.FromNanos(created), store.FromNanos(updated)
	return c, nil
}

// members reads the member ids of a crew in the order they were added.
func members(ctx context.Context, q Querier, crewID string) ([]string, error) {
	return queryAll(ctx, q, scanString, `SELECT contact_id FROM crew_members WHERE crew_id = ? ORDER BY position, contact_id`, crewID)
}

// createCrewContacts inserts c.NewContacts in the crew write's
// transaction (a number that has a contact by now keeps it: ON CONFLICT
// DO NOTHING, so a concurrent writer's contact is never overwritten) and
// points c.Members at the stored ids.
func (d DB) createCrewContacts(ctx context.Context, tx Querier, c *store.Crew) error {
	if len(c.NewContacts) == 0 {
		return nil
	}
	for rest := c.NewContacts; len(rest) > 0; {
		n := min(importChunk, len(rest))
		args := make([]any, 0, 9*n)
		for _, nc := range rest[:n] {
			a, err := d.contactArgs(nc)
			if err != nil {
				return err
			}
			args = append(args, a...)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO contacts (`+contactCols+`) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?),", n), ",")+
			` ON CONFLICT (number) DO NOTHING`, args...); err != nil {
			return conflict(err)
		}
		rest = rest[n:]
	}
	stored := make(map[string]string, len(c.NewContacts)) // number → id
	for rest := c.NewContacts; len(rest) > 0; {
		n := min(500, len(rest))
		args := make([]any, n)
		for i, nc := range rest[:n] {
			args[i] = nc.Number
		}
		pairs, err := queryAll(ctx, tx, func(r Rows) ([2]string, error) {
			var p [2]string
			err := r.Scan(&p[0], &p[1])
			return p, err
		}, `SELECT number, id FROM contacts WHERE number IN (`+strings.TrimSuffix(strings.Repeat("?,", n), ",")+`)`, args...)
		if err != nil {
			return err
		}
		for _, p := range pairs {
			stored[p[0]] = p[1]
		}
		rest = rest[n:]
	}
	remap := make(map[string]string, len(c.NewContacts))
	for _, nc := range c.NewContacts {
		id, ok := stored[nc.Number]
		if !ok {
			return fmt.Errorf("contact %q: %w", nc.ID, actor.ErrNotFound)
		}
		remap[nc.ID] = id
		if id == nc.ID && len(nc.Tags) > 0 {
			if err := writeTags(ctx, tx, id, nc.Tags); err != nil {
				return err
			}
		}
	}
	members := make([]string, len(c.Members))
	for i, m := range c.Members {
		if id, ok := remap[m]; ok {
			m = id
		}
		members[i] = m
	}
	c.Members = members
	return nil
}

// writeMembers replaces a crew's members; an unknown contact id is
// actor.ErrNotFound naming it.
func writeMembers(ctx context.Context, tx Querier, crewID string, ids []string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM crew_members WHERE crew_id = ?`, crewID); err != nil {
		return err
	}
	seen := make(map[string]bool, len(ids))
	unique := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		}
	}
	// Every member must be a contact: look them up in chunks, then
	// insert in multi-row statements (a crew may hold 100,000 people).
	known := make(map[string]bool, len(unique))
	for rest := unique; len(rest) > 0; {
		n := min(500, len(rest))
		args := make([]any, n)
		for i, id := range rest[:n] {
			args[i] = id
		}
		got, err := queryAll(ctx, tx, scanString, `SELECT id FROM contacts WHERE id IN (`+
			strings.TrimSuffix(strings.Repeat("?,", n), ",")+`)`, args...)
		if err != nil {
			return err
		}
		for _, id := range got {
			known[id] = true
		}
		rest = rest[n:]
	}
	for _, id := range unique {
		if !known[id] {
			return fmt.Errorf("contact %q: %w", id, actor.ErrNotFound)
		}
	}
	for start := 0; start < len(unique); start += importChunk {
		part := unique[start:min(start+importChunk, len(unique))]
		args := make([]any, 0, 3*len(part))
		for i, id := range part {
			args = append(args, crewID, id, start+i)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO crew_members (crew_id, contact_id, position) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?),", len(part)), ","), args...); err != nil {
			return err
		}
	}
	return nil
}

// CreateCrew stores a new crew with its new contacts, members and audit
// entries in one transaction;
// store.ErrConflict for a taken name, actor.ErrNotFound for an unknown
// member.
func (d DB) CreateCrew(ctx context.Context, c store.Crew, audit ...store.AuditEntry) error {
	now := d.c.Now()
	return d.writeRow(ctx, rowWrite{what: "create crew", now: now,
		stmt: `INSERT INTO crews (` + crewCols + `) VALUES (?, ?, ?, ?, ?)`,
		args: []any{c.ID, c.Name, c.Description, store.Nanos(OrNow(c.CreatedAt, now)), store.Nanos(OrNow(c.UpdatedAt, now))},
		then: func(tx Querier) error { return d.crewMembers(ctx, tx, &c) }}, audit)
}

// crewMembers creates the crew's new contacts and writes its members.
func (d DB) crewMembers(ctx context.Context, tx Querier, c *store.Crew) error {
	if err := d.createCrewContacts(ctx, tx, c); err != nil {
		return err
	}
	return writeMembers(ctx, tx, c.ID, c.Members)
}

func (d DB) crewWhere(ctx context.Context, what, cond, arg string) (store.Crew, error) {
	var c store.Crew
	err := d.c.ReadTx(ctx, func(tx Querier) error {
		var err error
		if c, err = scanCrew(tx.QueryRow(ctx, `SELECT `+crewCols+` FROM crews WHERE `+cond, arg)); err != nil {
			return err
		}
		c.Members, err = members(ctx, tx, c.ID)
		return err
	})
	if err != nil {
		return store.Crew{}, d.errorf("%s: %w", what, err)
	}
	return c, nil
}

// GetCrew returns the crew with id and its members, or actor.ErrNotFound.
func (d DB) GetCrew(ctx context.Context, id string) (store.Crew, error) {
	return d.crewWhere(ctx, "get crew", "id = ?", id)
}

// CrewByName returns the crew named name, or actor.ErrNotFound.
func (d DB) CrewByName(ctx context.Context, name string) (store.Crew, error) {
	return d.crewWhere(ctx, "crew by name", "name = ?", name)
}

// UpdateCrew replaces name, description and members of crew c.ID,
// creating its new contacts, and appends its audit entries, in one
// transaction.
func (d DB) UpdateCrew(ctx context.Context, c store.Crew, audit ...store.AuditEntry) error {
	now := d.c.Now()
	return d.writeRow(ctx, rowWrite{what: "update crew", kind: "crew", id: c.ID, now: now,
		stmt: `UPDATE crews SET name = ?, description = ?, updated_at = ? WHERE id = ?`,
		args: []any{c.Name, c.Description, store.Nanos(OrNow(c.UpdatedAt, now)), c.ID},
		then: func(tx Querier) error { return d.crewMembers(ctx, tx, &c) }}, audit)
}

// DeleteCrew removes the crew (its contacts stay) and appends its audit
// entries.
func (d DB) DeleteCrew(ctx context.Context, id string, audit ...store.AuditEntry) error {
	return d.deleteRow(ctx, "crew", id, audit, `DELETE FROM crews WHERE id = ?`,
		`DELETE FROM crew_members WHERE crew_id = ?`)
}

// ListCrews returns every crew, ordered by name, with its members.
func (d DB) ListCrews(ctx context.Context) ([]store.Crew, error) {
	var out []store.Crew
	err := d.c.ReadTx(ctx, func(tx Querier) error {
		var err error
		out, err = queryAll(ctx, tx, func(r Rows) (store.Crew, error) { return scanCrew(r) },
			`SELECT `+crewCols+` FROM crews ORDER BY name, id`)
		if err != nil {
			return err
		}
		type pair struct{ crew, contact string }
		ms, err := queryAll(ctx, tx, func(r Rows) (pair, error) {
			var p pair
			return p, r.Scan(&p.crew, &p.contact)
		}, `SELECT crew_id, contact_id FROM crew_members ORDER BY crew_id, position, contact_id`)
		if err != nil {
			return err
		}
		byCrew := map[string][]string{}
		for _, m := range ms {
			byCrew[m.crew] = append(byCrew[m.crew], m.contact)
		}
		for i := range out {
			out[i].Members = byCrew[out[i].ID]
		}
		return nil
	})
	if err != nil {
		return nil, d.errorf("list crews: %w", err)
	}
	return out, nil
}

// CrewContacts returns the crew's members as contacts, in member order.
//
// A large crew (crewSplit members or more, by position) is read in two
// halves at once, on two read connections: the read is most of what a
// 100,000-person group's creation spends before planning (the join seeks
// three B-trees per member), and it is the one part of that path that
// splits. Each half carries the crew's updated_at from its own snapshot;
// every change of membership sets it, so halves that agree come from the
// same membership (a contact deleted between them is missing, as when it
// is deleted before the read). Halves that disagree, or an empty one,
// are read again in one statement.
func (d DB) CrewContacts(ctx context.Context, crewID string) ([]store.Contact, error) {
	var lo, hi int64
	if err := d.c.Read.QueryRow(ctx, `SELECT COALESCE(MIN(position), 0), COALESCE(MAX(position), -1)
		FROM crew_members WHERE crew_id = ?`, crewID).Scan(&lo, &hi); err != nil {
		return nil, d.errorf("crew contacts: %w", err)
	}
	if hi-lo+1 >= crewSplit {
		mid := lo + (hi-lo)/2
		type half struct {
			cs      []store.Contact
			updated int64
			err     error
		}
		var a, b half
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.cs, b.updated, b.err = d.crewContacts(ctx, crewID, int(hi-mid), `AND m.position > ?`, mid)
		}()
		a.cs, a.updated, a.err = d.crewContacts(ctx, crewID, int(mid-lo+1), `AND m.position <= ?`, mid)
		<-done
		if err := errors.Join(a.err, b.err); err != nil {
			return nil, d.errorf("crew contacts: %w", err)
		}
		if len(a.cs) > 0 && len(b.cs) > 0 && a.updated == b.updated {
			return append(slices.Grow(a.cs, len(b.cs)), b.cs...), nil
		}
	}
	out, _, err := d.crewContacts(ctx, crewID, max(0, int(hi-lo+1)), ``)
	if err != nil {
		return nil, d.errorf("crew contacts: %w", err)
	}
	return out, nil
}

// crewSplit is the crew size from which CrewContacts reads two halves at
// once.
const crewSplit = 4096

// crewContacts reads the crew's members that match cond (a condition on
// m.position, with its arguments) in member order, with the crew's
// updated_at as the same statement saw it; size is a capacity hint.
func (d DB) crewContacts(ctx context.Context, crewID string, size int, cond string, condArgs ...any) ([]store.Contact, int64, error) {
	args := append([]any{crewID}, condArgs...)
	rows, err := d.c.Read.Query(ctx, `SELECT c.id, c.number, c.name, c.timezone, c.fields, c.created_at, c.updated_at, c.email, k.updated_at
		FROM crews k JOIN crew_members m ON m.crew_id = k.id JOIN contacts c ON c.id = m.contact_id
		WHERE k.id = ? `+cond+` ORDER BY m.position, m.contact_id`, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := make([]store.Contact, 0, min(size, 1_000_000))
	var crewUpdated int64
	for rows.Next() {
		var c store.Contact
		var fields string
		var created, updated int64
		if err := rows.Scan(&c.ID, &c.Number, &c.Name, &c.Timezone, &fields, &created, &updated, &c.Email, &crewUpdated); err != nil {
			return nil, 0, err
		}
		if fields != "{}" { // most contacts have none: skip the decoder
			var err error
			if c.Fields, err = decodeFields(fields); err != nil {
				return nil, 0, fmt.Errorf("contact %q fields: %w", c.ID, err)
			}
		}
		c.CreatedAt, c.UpdatedAt = store.FromNanos(created), store.FromNanos(updated)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return out, crewUpdated, nil
}

// FindCrew returns the crew with id ref, or else named ref, without its
// members.
func (d DB) FindCrew(ctx context.Context, ref string) (store.Crew, error) {
	c, err := scanCrew(d.c.Read.QueryRow(ctx, `SELECT `+crewCols+` FROM crews WHERE id = ? OR name = ?
		ORDER BY CASE WHEN id = ? THEN 0 ELSE 1 END LIMIT 1`, ref, ref, ref))
	if err != nil {
		return store.Crew{}, d.errorf("find crew: %w", err)
	}
	return c, nil
}

// ---- templates ----

const templateCols = `id, name, text, responses, created_at, updated_at, followup`

func scanTemplate(r Row) (store.Template, error) {
	var t store.Template
	var responses, followup string
	var created, updated int64
	if err := r.Scan(&t.ID, &t.Name, &t.Text, &responses, &created, &updated, &followup); err != nil {
		return store.Template{}, err
	}
	t.Responses = json.RawMessage(responses)
	if followup != "" {
		t.Followup = json.RawMessage(followup)
	}
	t.CreatedAt, t.UpdatedAt = store.FromNanos(created), store.FromNanos(updated)
	return t, nil
}

func responsesText(r json.RawMessage) string {
	if len(r) == 0 {
		return "[]"
	}
	return string(r)
}

// CreateTemplate stores a new template with its audit entries;
// store.ErrConflict for a taken name.
func (d DB) CreateTemplate(ctx context.Context, t store.Template, audit ...store.AuditEntry) error {
	now := d.c.Now()
	return d.writeRow(ctx, rowWrite{what: "create template", now: now,
		stmt: `INSERT INTO templates (` + templateCols + `) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		args: []any{t.ID, t.Name, t.Text, responsesText(t.Responses), store.Nanos(OrNow(t.CreatedAt, now)), store.Nanos(OrNow(t.UpdatedAt, now)),
			string(t.Followup)}}, audit)
}

// GetTemplate returns the template with id or actor.ErrNotFound.
func (d DB) GetTemplate(ctx context.Context, id string) (store.Template, error) {
	t, err := scanTemplate(d.c.Read.QueryRow(ctx, `SELECT `+templateCols+` FROM templates WHERE id = ?`, id))
	if err != nil {
		return store.Template{}, d.errorf("get template: %w", err)
	}
	return t, nil
}

// TemplateByName returns the template named name or actor.ErrNotFound.
func (d DB) TemplateByName(ctx context.Context, name string) (store.Template, error) {
	t, err := scanTemplate(d.c.Read.QueryRow(ctx, `SELECT `+templateCols+` FROM templates WHERE name = ?`, name))
	if err != nil {
		return store.Template{}, d.errorf("template by name: %w", err)
	}
	return t, nil
}

// UpdateTemplate replaces name, text, responses and follow-up of template t.ID and
// appends its audit entries.
func (d DB) UpdateTemplate(ctx context.Context, t store.Template, audit ...store.AuditEntry) error {
	now := d.c.Now()
	return d.writeRow(ctx, rowWrite{what: "update template", kind: "template", id: t.ID, now: now,
		stmt: `UPDATE templates SET name = ?, text = ?, responses = ?, updated_at = ?, followup = ? WHERE id = ?`,
		args: []any{t.Name, t.Text, responsesText(t.Responses), store.Nanos(OrNow(t.UpdatedAt, now)), string(t.Followup), t.ID}}, audit)
}

// DeleteTemplate removes the template and appends its audit entries.
func (d DB) DeleteTemplate(ctx context.Context, id string, audit ...store.AuditEntry) error {
	return d.deleteRow(ctx, "template", id, audit, `DELETE FROM templates WHERE id = ?`)
}

// ListTemplates returns every template ordered by name.
func (d DB) ListTemplates(ctx context.Context) ([]store.Template, error) {
	out, err := queryAll(ctx, d.c.Read, func(r Rows) (store.Template, error) { return scanTemplate(r) },
		`SELECT `+templateCols+` FROM templates ORDER BY name, id`)
	if err != nil {
		return nil, d.errorf("list templates: %w", err)
	}
	return out, nil
}

// rowWrite is one insert or update of a directory row (contact, crew,
// template), as writeRow runs it.
type rowWrite struct {
	what string // names the write in errors: "create contact"
	// kind and id, for an update: a statement that changed no row is
	// actor.ErrNotFound for kind id. Empty for an insert.
	kind, id string
	stmt     string
	args     []any
	// then writes the rows keyed to it (tags, members) in the same
	// transaction; nil: none.
	then func(tx Querier) error
	now  time.Time // the audit entries' time; zero: now
}

// writeRow runs w and appends the audit entries, in one transaction; a
// taken unique value (number, name) is store.ErrConflict.
func (d DB) writeRow(ctx context.Context, w rowWrite, audit []store.AuditEntry) error {
	now := w.now
	if now.IsZero() {
		now = d.c.Now()
	}
	err := d.c.WriteTx(ctx, func(tx Querier) error {
		n, err := tx.Exec(ctx, w.stmt, w.args...)
		if err != nil {
			return conflict(err)
		}
		if w.id != "" && n == 0 {
			return fmt.Errorf("%s %q: %w", w.kind, w.id, actor.ErrNotFound)
		}
		if w.then != nil {
			if err := w.then(tx); err != nil {
				return err
			}
		}
		return appendAudit(ctx, tx, now, audit)
	})
	if err != nil {
		return d.errorf("%s: %w", w.what, err)
	}
	return nil
}

// deleteRow deletes one directory row (what names it in errors): first the
// rows keyed to it (dependents, each taking id), then the row itself with
// del, which must delete exactly one row (none: actor.ErrNotFound), and
// its audit entries, all in one transaction.
func (d DB) deleteRow(ctx context.Context, what, id string, audit []store.AuditEntry, del string, dependents ...string) error {
	now := d.c.Now()
	err := d.c.WriteTx(ctx, func(tx Querier) error {
		if err := execEach(ctx, tx, id, dependents...); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, del, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%s %q: %w", what, id, actor.ErrNotFound)
		}
		return appendAudit(ctx, tx, now, audit)
	})
	if err != nil {
		return d.errorf("delete %s: %w", what, err)
	}
	return nil
}
