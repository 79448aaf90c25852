package sqlq

import (
	"context"

	"github.com/crewcast/crewcast/store"
)

// OptOutEmail records an address hash as opted out of email (again: no
// change). See store.EmailOptOuts.
func (d DB) OptOutEmail(ctx context.Context, addressHash string) error {
	if _, err := d.c.Write.Exec(ctx, `INSERT INTO email_optouts (address_hash, created_at) VALUES (?, ?)
		ON CONFLICT (address_hash) DO NOTHING`, addressHash, store.Nanos(d.c.Now())); err != nil {
		return d.errorf("store email opt-out: %w", err)
	}
	return nil
}

// EmailOptedOut reports whether an address hash is opted out of email.
func (d DB) EmailOptedOut(ctx context.Context, addressHash string) (bool, error) {
	var n int
	if err := d.c.Read.QueryRow(ctx, `SELECT COUNT(*) FROM email_optouts WHERE address_hash = ?`, addressHash).Scan(&n); err != nil {
		return false, d.errorf("read email opt-out: %w", err)
	}
	return n > 0, nil
}
