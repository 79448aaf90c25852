package callgrind

//go:noescape
func request(args *[6]uintptr) uintptr

const supported = true
