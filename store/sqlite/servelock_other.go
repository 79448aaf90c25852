//go:build !unix

package sqlite

import "errors"

// ErrServed is the error LockServe wraps when another server holds the
// database file.
var ErrServed = errors.New("sqlite: database is served by another crewcast process")

// ServeLock would be the exclusive hold a server keeps on its database;
// without flock it holds nothing, and SQLite's own locking is all there is.
type ServeLock struct{}

// LockServe takes nothing on this platform.
func LockServe(path string) (*ServeLock, error) { return &ServeLock{}, nil }

// Release does nothing.
func (l *ServeLock) Release() error { return nil }
