#include "textflag.h"

// func cloneVM(flags, stack uintptr, p *procPlan) (pid uintptr, errno uintptr)
//
// clone(2) with flags (CLONE_VM among them) and the child on stack, the top of memory
// the caller keeps alive; the child calls childEntry(p) there and never returns. The
// parent returns the child's pid or the errno. No Go frame is shared with the child.
TEXT ·cloneVM(SB),NOSPLIT,$0-40
	MOVQ	flags+0(FP), DI
	MOVQ	stack+8(FP), SI
	MOVQ	p+16(FP), R12 // the child's copy of the registers keeps it
	MOVQ	$0, DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	MOVQ	$56, AX // SYS_clone
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, pid+24(FP)
	NEGQ	AX
	MOVQ	AX, errno+32(FP)
	RET
ok:
	MOVQ	AX, pid+24(FP)
	MOVQ	$0, errno+32(FP)
	RET
child:
	// SP is the new stack: one argument slot, then the call
	SUBQ	$16, SP
	MOVQ	R12, 0(SP)
	CALL	·childEntry(SB)
	MOVQ	$125, DI
	MOVQ	$231, AX // SYS_exit_group
	SYSCALL
	JMP	child
