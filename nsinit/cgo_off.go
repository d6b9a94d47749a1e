//go:build !cgo

package nsinit

// builtWithCgo: this program is not linked with runtime/cgo (threadCapsRefused).
const builtWithCgo = false
