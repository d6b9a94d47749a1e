// Package lazy holds a value computed once, on first use, whose zero value is ready:
// a package-level sync.OnceValue allocates its closures at package init, which every
// start of gosbx pays (docs/decisions.md, "Speed, eighth attempt: package inits").
package lazy

import "sync"

// Value is a T computed by the first Get's f, concurrently safe (sync.Once); later Gets
// return it without calling their f. If f panicked, every Get panics with the same
// value, as sync.OnceValue does (never a zero T taken for the answer).
type Value[T any] struct {
	once sync.Once
	v    T
	p    any // what f panicked with
}

// Get returns the value, computing it with f on the first call.
func (l *Value[T]) Get(f func() T) T {
	l.once.Do(func() {
		defer func() {
			if l.p = recover(); l.p != nil {
				panic(l.p)
			}
		}()
		l.v = f()
	})
	if l.p != nil {
		panic(l.p)
	}
	return l.v
}
