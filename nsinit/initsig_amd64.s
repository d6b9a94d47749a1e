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

// func faultFilterAddr() uintptr
TEXT ·faultFilterAddr(SB),NOSPLIT,$0-8
	LEAQ	faultFilter<>(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// faultFilter is a signal handler (C calling convention: DI the signal number, SI the
// siginfo, DX the ucontext) for the synchronous signals during a one-shot init's setup
// (initfault.go): a signal another process sent (si_code <= 0: SI_USER, SI_QUEUE,
// SI_TKILL, …) is dropped; any other is a fault of the init's own and goes on to the
// handler that was there (the Go runtime's sigtramp), registers and stack as the kernel
// left them, so that the runtime sees it as if called directly.
TEXT faultFilter<>(SB),NOSPLIT|NOFRAME,$0
	MOVL	8(SI), AX // si_code
	CMPL	AX, $0
	JLE	drop
	LEAQ	·faultNext(SB), AX
	MOVQ	(AX)(DI*8), AX
	JMP	AX
drop:
	RET

// func unblockAddr() uintptr
TEXT ·unblockAddr(SB),NOSPLIT,$0-8
	LEAQ	sigUnblock<>(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// sigUnblock is the handler of sigUnblockSignal (initthreads.go; C calling convention:
// SI the siginfo, DX the ucontext): it clears unblockMask from the interrupted context's
// signal mask (struct ucontext's uc_sigmask, at byte 296 on x86-64: uc_flags, uc_link,
// uc_stack, then uc_mcontext's 256 bytes), which rt_sigreturn(2) makes the thread's mask
// on the way back. Only on the init's own request: a tgkill(2) (si_code SI_TKILL, -6,
// which rt_sigqueueinfo(2) refuses to forge for another process) whose sender (si_pid, at
// byte 16) is the init, to a thread other than redirectTid. Sent by anyone else, or to
// the thread sigRedirect sends to, it does nothing: there the four would be unblocked
// while sigRedirect keeps sending them back, a signal loop. No Go code runs.
TEXT sigUnblock<>(SB),NOSPLIT|NOFRAME,$0
	MOVL	8(SI), AX // si_code
	CMPL	AX, $-6
	JNE	ignore
	MOVLQZX	16(SI), AX // si_pid
	CMPQ	AX, ·redirectPid(SB)
	JNE	ignore
	MOVQ	DX, R8
	MOVQ	$186, AX // SYS_gettid
	SYSCALL
	CMPQ	AX, ·redirectTid(SB)
	JEQ	ignore
	MOVQ	·unblockMask(SB), AX
	NOTQ	AX
	ANDQ	AX, 296(R8)
ignore:
	RET
