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

// func cloneInit(nr, a1, a2 uintptr, p *initPlan) (pid uintptr, errno uintptr)
//
// clone(2) (nr 56: a1 the flags, a2 the stack top) or clone3(2) (nr 435: a1 the
// struct clone_args, a2 its size), CLONE_VM among the flags and the child on a stack
// the caller keeps alive; the child calls initChildEntry(p) there and never returns.
// The init's clone (initclone.go); the process stage's is cloneVM above.
TEXT ·cloneInit(SB),NOSPLIT,$0-48
	MOVQ	nr+0(FP), AX
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	p+24(FP), R12 // the child's copy of the registers keeps it
	MOVQ	$0, DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	SYSCALL
	CMPQ	AX, $0
	JEQ	initchild
	CMPQ	AX, $0xfffffffffffff001
	JLS	initok
	MOVQ	$-1, pid+32(FP)
	NEGQ	AX
	MOVQ	AX, errno+40(FP)
	RET
initok:
	MOVQ	AX, pid+32(FP)
	MOVQ	$0, errno+40(FP)
	RET
initchild:
	SUBQ	$16, SP
	MOVQ	R12, 0(SP)
	CALL	·initChildEntry(SB)
	MOVQ	$125, DI
	MOVQ	$231, AX // SYS_exit_group
	SYSCALL
	JMP	initchild
