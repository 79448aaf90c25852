//go:build !linux

package sqlite

import "errors"

// InUse would report whether some process has the database at path open;
// the lock probe it needs (open file description locks) is Linux-only, so
// elsewhere it answers with an error and restore refuses to guess.
func InUse(path string) (bool, error) {
	return false, errors.New("sqlite: cannot tell whether " + path + " is in use on this platform; stop the server and restore by copying the file")
}
