#include "textflag.h"

// func addrs() (handler, restorer uintptr)
TEXT ·addrs(SB),NOSPLIT,$0-16
	LEAQ	sigWrite<>(SB), AX
	MOVQ	AX, handler+0(FP)
	LEAQ	sigReturn<>(SB), AX
	MOVQ	AX, restorer+8(FP)
	RET

// sigWrite is a signal handler (C calling convention, DI the signal number) that writes
// the signal number's low byte to the pipe ·writeFd (sigpipe.go) and returns. No Go code
// runs: it may interrupt any thread of the runtime, in any state, on that thread's
// alternate signal stack (SA_ONSTACK). The registers it clobbers are the interrupted
// context's only until rt_sigreturn(2) restores them.
TEXT sigWrite<>(SB),NOSPLIT|NOFRAME,$0
	SUBQ	$8, SP
	MOVQ	DI, 0(SP)
	MOVQ	·writeFd(SB), DI
	MOVQ	SP, SI
	MOVQ	$1, DX
	MOVQ	$1, AX // SYS_write
	SYSCALL
	ADDQ	$8, SP
	RET

// sigReturn returns from sigWrite (SA_RESTORER: rt_sigreturn(2)).
TEXT sigReturn<>(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$15, AX // SYS_rt_sigreturn
	SYSCALL
	INT	$3
