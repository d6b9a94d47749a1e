#include "textflag.h"

// func redirectAddrs() (handler, restorer uintptr)
TEXT ·redirectAddrs(SB),NOSPLIT,$0-16
	LEAQ	sigRedirect<>(SB), AX
	MOVQ	AX, handler+0(FP)
	LEAQ	sigRestorer<>(SB), AX
	MOVQ	AX, restorer+8(FP)
	RET

// sigRedirect is a signal handler (C calling convention, DI the signal number) that
// sends its signal to the thread redirectPid/redirectTid, which blocks it, and returns
// (initsig.go). No Go code runs: it may interrupt any thread of the runtime, on that
// thread's alternate signal stack (SA_ONSTACK).
TEXT sigRedirect<>(SB),NOSPLIT|NOFRAME,$0
	MOVQ	DI, DX
	MOVQ	·redirectPid(SB), DI
	MOVQ	·redirectTid(SB), SI
	MOVQ	$234, AX // SYS_tgkill
	SYSCALL
	RET

// sigRestorer returns from sigRedirect (SA_RESTORER: rt_sigreturn(2)).
TEXT sigRestorer<>(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$15, AX // SYS_rt_sigreturn
	SYSCALL
	INT	$3
