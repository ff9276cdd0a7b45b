#include "textflag.h"

// func lines(p unsafe.Pointer, n int)
TEXT ·lines(SB), NOSPLIT, $0-16
	MOVD p+0(FP), R0
	MOVD n+8(FP), R1
loop:
	PRFM (R0), PLDL1KEEP
	ADD  $64, R0
	SUBS $1, R1
	BNE  loop
	RET
