package sqlq

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store"
)

func TestRebind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{``, ``},
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE b = ?`, `SELECT a FROM t WHERE b = $1`},
		{`(a, b) < (?, ?) LIMIT ?`, `(a, b) < ($1, $2) LIMIT $3`},
		{`?,?,?,?,?,?,?,?,?,?,?`, `$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11`},
		// Multi-byte text around placeholders survives unchanged.
		{`text = 'é' AND x = ?`, `text = 'é' AND x = $1`},
	} {
		if got := Rebind(tc.in); got != tc.want {
			t.Errorf("Rebind(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestWhere(t *testing.T) {
	t.Parallel()
	if got := where(nil); got != "" {
		t.Errorf("where(nil) = %q, want empty", got)
	}
	if got := where([]string{"a = ?"}); got != " WHERE a = ?" {
		t.Errorf("where(one) = %q", got)
	}
	if got := where([]string{"a = ?", "b < ?"}); got != " WHERE a = ? AND b < ?" {
		t.Errorf("where(two) = %q", got)
	}
}

func TestDeliveryFilter(t *testing.T) {
	t.Parallel()
	since := time.Unix(10, 0)
	until := time.Unix(20, 0)
	conds, args := deliveryFilter(store.DeliveryQuery{GroupID: "g", Number: "n", Status: "sent",
		ErrorClass: "permanent", Since: since, Until: until, Cursor: "ignored", Limit: 7})
	wantConds := []string{"group_id = ?", "number = ?", "status = ?", "error_class = ?", "updated_at >= ?", "updated_at < ?"}
	wantArgs := []any{"g", "n", "sent", "permanent", since.UnixNano(), until.UnixNano()}
	if !slices.Equal(conds, wantConds) || !slices.Equal(args, wantArgs) {
		t.Errorf("deliveryFilter = %q %v, want %q %v", conds, args, wantConds, wantArgs)
	}
	if conds, args := deliveryFilter(store.DeliveryQuery{}); conds != nil || args != nil {
		t.Errorf("deliveryFilter(empty) = %q %v, want none", conds, args)
	}
}

func TestPage(t *testing.T) {
	t.Parallel()
	last := func(v int) string { return string(rune('a' + v)) }
	if out, next := page([]int{0, 1}, 2, last); !slices.Equal(out, []int{0, 1}) || next != "" {
		t.Errorf("page(full, no more) = %v %q", out, next)
	}
	if out, next := page([]int{0, 1, 2}, 2, last); !slices.Equal(out, []int{0, 1}) || next != "b" {
		t.Errorf("page(one more) = %v %q, want [0 1] \"b\"", out, next)
	}
	if out, next := page[int](nil, 2, last); out != nil || next != "" {
		t.Errorf("page(nil) = %v %q", out, next)
	}
}

// fakeRows serves values one per row, then err from Err.
type fakeRows struct {
	vals   []string
	i      int
	err    error
	closed bool
}

func (r *fakeRows) Next() bool { r.i++; return r.i <= len(r.vals) }
func (r *fakeRows) Scan(dest ...any) error {
	if r.vals[r.i-1] == "bad" {
		return errors.New("scan failed")
	}
	*dest[0].(*string) = r.vals[r.i-1]
	return nil
}
func (r *fakeRows) Err() error { return r.err }
func (r *fakeRows) Close()     { r.closed = true }

func TestCollect(t *testing.T) {
	t.Parallel()
	r := &fakeRows{vals: []string{"a", "b"}}
	got, err := collect(r, scanString)
	if err != nil || !slices.Equal(got, []string{"a", "b"}) || !r.closed {
		t.Errorf("collect = %v, %v (closed %v)", got, err, r.closed)
	}
	r = &fakeRows{}
	if got, err := collect(r, scanString); got != nil || err != nil || !r.closed {
		t.Errorf("collect(empty) = %#v, %v (closed %v), want nil, nil", got, err, r.closed)
	}
	r = &fakeRows{vals: []string{"a", "bad", "c"}}
	if got, err := collect(r, scanString); got != nil || err == nil || !r.closed {
		t.Errorf("collect(scan error) = %v, %v (closed %v)", got, err, r.closed)
	}
	failed := errors.New("read failed")
	r = &fakeRows{vals: []string{"a"}, err: failed}
	if got, err := collect(r, scanString); got != nil || !errors.Is(err, failed) || !r.closed {
		t.Errorf("collect(rows error) = %v, %v (closed %v)", got, err, r.closed)
	}
}

func TestOrNowAndNonNil(t *testing.T) {
	t.Parallel()
	now, then := time.Unix(100, 0), time.Unix(50, 0)
	if got := OrNow(time.Time{}, now); !got.Equal(now) {
		t.Errorf("OrNow(zero) = %v", got)
	}
	if got := OrNow(then, now); !got.Equal(then) {
		t.Errorf("OrNow(then) = %v", got)
	}
	if got := NonNilCounts(nil); got == nil || len(got) != 0 {
		t.Errorf("NonNilCounts(nil) = %#v", got)
	}
	if m := map[string]int{"a": 1}; NonNilCounts(m)["a"] != 1 {
		t.Error("NonNilCounts changed a non-nil map")
	}
	if got := NonNilStrings(nil); got == nil || len(got) != 0 {
		t.Errorf("NonNilStrings(nil) = %#v", got)
	}
	if s := []string{"x"}; !slices.Equal(NonNilStrings(s), s) {
		t.Error("NonNilStrings changed a non-nil slice")
	}
}

// An engine embeds DB, so every exported method of DB becomes part of the
// engine's API: each must be a store.Store method (or, for the leases of
// several nodes, a store.ExpiringLeases, store.JournalAudit, store.Membership
// or store.RouteBatchReader one) with the same signature.
func TestDBMethodsAreStoreMethods(t *testing.T) {
	t.Parallel()
	iface := reflect.TypeFor[store.Store]()
	db := reflect.TypeFor[DB]()
	if db.NumMethod() == 0 {
		t.Fatal("DB has no exported methods")
	}
	for i := range db.NumMethod() {
		m := db.Method(i)
		im, ok := iface.MethodByName(m.Name)
		if !ok {
			im, ok = reflect.TypeFor[store.ExpiringLeases]().MethodByName(m.Name)
		}
		if !ok {
			im, ok = reflect.TypeFor[store.JournalAudit]().MethodByName(m.Name)
		}
		if !ok {
			im, ok = reflect.TypeFor[store.Membership]().MethodByName(m.Name)
		}
		if !ok {
			im, ok = reflect.TypeFor[store.RouteBatchReader]().MethodByName(m.Name)
		}
		if !ok {
			t.Errorf("DB.%s is not a store.Store (or store.ExpiringLeases, store.JournalAudit, store.Membership, store.RouteBatchReader) method", m.Name)
			continue
		}
		// m.Type has the receiver as its first input; im.Type does not.
		got := m.Type
		var in []reflect.Type
		for j := 1; j < got.NumIn(); j++ {
			in = append(in, got.In(j))
		}
		var out []reflect.Type
		for j := range got.NumOut() {
			out = append(out, got.Out(j))
		}
		if fn := reflect.FuncOf(in, out, got.IsVariadic()); fn != im.Type {
			t.Errorf("DB.%s is %v, store.Store has %v", m.Name, fn, im.Type)
		}
	}
}

func TestEpochs(t *testing.T) {
	t.Parallel()
	var e Epochs
	if got := e.Of(3); got != 0 {
		t.Errorf("zero Epochs holds %d for shard 3", got)
	}
	e.Set(3, 7)
	if got := e.Of(3); got != 7 {
		t.Errorf("Of(3) after Set = %d, want 7", got)
	}
	var all [store.NumShards]uint64
	all[0], all[store.NumShards-1] = 2, 5
	e.SetAll(all)
	if e.Of(0) != 2 || e.Of(3) != 0 || e.Of(store.NumShards-1) != 5 {
		t.Errorf("after SetAll: %d %d %d, want 2 0 5", e.Of(0), e.Of(3), e.Of(store.NumShards-1))
	}
	// Readers and writers may run concurrently (checked under -race).
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			e.Set(i%store.NumShards, uint64(i))
		}
	}()
	for i := range 100 {
		_ = e.Of(i % store.NumShards)
	}
	<-done
}
