package gostart

// grownStack is the frame GrowStack asks for, in bytes: with the runtime's guard
// above it, the 32 KiB stack that gosbx exec's main goroutine and its policy step's
// reach.
const grownStack = 24 << 10

// never is false and at 0; the compiler cannot know, so GrowStack's frame keeps its
// array.
var (
	never bool
	at    int
)

// GrowStack grows the calling goroutine's stack to 32 KiB at once, from its first
// calls: a goroutine starts with 2 KiB and the runtime doubles it when a call does
// not fit (morestack), copying the stack and adjusting every frame's pointers from
// the binary's tables each time; gosbx exec's main goroutine and policy step went
// 2 → 4 → 8 → 16 → 32 KiB, the later copies deep in the launch. Called where the
// stack is shallow, the one growth (newstack sizes the new stack to fit the frame)
// copies a few frames. The array is zeroed only in the branch never taken: the pages
// of the new stack are touched only as the goroutine's calls reach them.
//
//go:noinline
func GrowStack() byte {
	if never {
		var frame [grownStack]byte
		frame[at%grownStack] = 1
		return frame[(at+1)%grownStack]
	}
	return 0
}
