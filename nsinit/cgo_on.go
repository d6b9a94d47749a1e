//go:build cgo

package nsinit

// builtWithCgo: this program may be linked with runtime/cgo (threadCapsRefused).
const builtWithCgo = true
