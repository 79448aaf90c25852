//go:build !amd64

package callgrind

func request(*[6]uintptr) uintptr { return 0 }

const supported = false
