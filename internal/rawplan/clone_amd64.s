#include "textflag.h"

// func cloneRaw(nr, a1, a2 uintptr, st *rawState) (pid uintptr, errno uintptr)
//
// clone(2) for a raw plan (clone.go): the child calls childEntry(st) on its
// stack in the plan's arena and never returns.
TEXT ·cloneRaw(SB),NOSPLIT,$0-48
	MOVQ	nr+0(FP), AX
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	st+24(FP), R12 // the child's copy of the registers keeps it
	MOVQ	$0, DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	SYSCALL
	CMPQ	AX, $0
	JEQ	rawchild
	CMPQ	AX, $0xfffffffffffff001
	JLS	rawok
	MOVQ	$-1, pid+32(FP)
	NEGQ	AX
	MOVQ	AX, errno+40(FP)
	RET
rawok:
	MOVQ	AX, pid+32(FP)
	MOVQ	$0, errno+40(FP)
	RET
rawchild:
	SUBQ	$16, SP
	MOVQ	R12, 0(SP)
	CALL	·childEntry(SB)
	MOVQ	$125, DI
	MOVQ	$231, AX // SYS_exit_group
	SYSCALL
	JMP	rawchild
