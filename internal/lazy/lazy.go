// Package lazy holds a value computed once, on first use, whose zero value is ready:
// a package-level sync.OnceValue allocates its closures at package init, which every
// start of gosbx pays (docs/decisions.md, "Speed, eighth attempt: package inits").
package lazy

import "sync"

// Value is a T computed by the first Get's f, concurrently safe (sync.Once); later Gets
// return it without calling their f. A panic in f is not repeated: later Gets return
// the zero T.
type Value[T any] struct {
	once sync.Once
	v    T
}

// Get returns the value, computing it with f on the first call.
func (l *Value[T]) Get(f func() T) T {
	l.once.Do(func() { l.v = f() })
	return l.v
}
